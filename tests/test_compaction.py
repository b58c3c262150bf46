"""`compact()` / `remem compact`: the store's files rewritten with what it holds now.

What users rely on: after a forget, the words are gone from the store's files too, not only from recall (Qdrant
keeps deleted bytes in its write-ahead log and segments until it rewrites them); compaction keeps every memory
as it was (payload, dense vector, ranking) on both backends, embeds nothing, and backs up first.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from remem import Memory, Scope
from remem.core.scope import ALL_TENANTS

DANA = Scope(tenant="acme", user="dana")
SECRET = "zqxjvnarcolepsy"


def on_disk(folder: Path, word: str) -> list[str]:
    found = subprocess.run(["grep", "-rl", "--exclude-dir=backups", word, str(folder)], capture_output=True, text=True)
    return found.stdout.split()


def fill(mem: Memory) -> str:
    """A session whose middle message holds the secret (its neighbours' context does too), and notes around."""
    mem.remember([{"role": "user", "content": "We deploy the billing service with ArgoCD.", "id": "a"},
                  {"role": "user", "content": f"Also my diagnosis is {SECRET}, keep it between us.", "id": "b"},
                  {"role": "assistant", "content": "Understood. ArgoCD syncs from the main branch.", "id": "c"}],
                 scope=DANA, session="s1", distiller="keyless")
    for i in range(30):
        mem.add(f"note {i}: the staging cluster {i} runs postgres 16 with pgbouncer", scope=DANA)
    [said] = [r for r in mem.iter_records(DANA) if r.kind == "episode" and r.sources == ("b",)]
    return said.id


def snapshot(mem: Memory) -> dict[str, Any]:
    return {r.id: (r.text, r.context, r.metadata, r.sources, r.created_at) for r in mem.iter_records(ALL_TENANTS)}


@pytest.fixture(params=["edge", "qdrant-local"])
def dense_any(request: pytest.FixtureRequest, memory_factory: Callable[..., Memory]) -> Iterator[Memory]:
    if request.param == "edge":
        yield memory_factory("minilm")
    else:
        m = Memory(url=":memory:", embedder="minilm")
        yield m
        m.close()


def test_a_forgotten_message_is_gone_from_the_store_files_after_compact(memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("minilm")
    folder = Path(mem._connection.local.backend.folder)
    fill(mem)  # the message, and what was distilled from it (a fact, the session summary): all name it a source
    gone = mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False).count
    assert gone >= 2 and SECRET not in " ".join(f"{r.text} {r.context}" for r in mem.iter_records(DANA))
    assert on_disk(folder, SECRET), "Qdrant purged the deleted point itself: compaction may no longer be needed"
    assert mem.compact() == len(list(mem.iter_records(ALL_TENANTS)))
    assert on_disk(folder, SECRET) == []
    assert len(list((folder / "backups").glob("remem-*.jsonl.gz"))) == 1  # backed up before the old files went


def test_compact_keeps_every_memory_its_vector_and_its_ranking(dense_any: Memory) -> None:
    fill(dense_any)
    before, ranked = snapshot(dense_any), [
        [h.record.id for h in dense_any.search(q, scope=DANA, limit=8)]
        for q in ("where does billing deploy from", "staging cluster 7 database", "a poem about the sea")]
    assert dense_any.compact() == len(before)
    assert snapshot(dense_any) == before
    assert [[h.record.id for h in dense_any.search(q, scope=DANA, limit=8)]
            for q in ("where does billing deploy from", "staging cluster 7 database", "a poem about the sea")] == ranked
    again = dense_any.add("the staging cluster 7 now runs postgres 17", scope=DANA)  # still a working store
    assert again.id in {h.record.id for h in dense_any.search("staging cluster 7 postgres 17", scope=DANA, limit=3)}
