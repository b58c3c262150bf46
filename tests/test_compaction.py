"""`compact()` / `remem compact`: the embedded store's files rewritten with what it holds now.

What users rely on: after a forget, the words are gone from the store's files too, not only from recall (Qdrant
keeps deleted bytes in its write-ahead log and segments until it rewrites them); compaction keeps every memory
as it was (payload, dense vector, ranking) and embeds nothing; a failure or a crash midway leaves the store
whole; a Qdrant server (shared with other processes, compacting itself) is refused, not rewritten.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from remem import Memory, RememError, Scope
from remem.core.scope import ALL_TENANTS
from remem.core.store import backups as backups_module

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


def test_a_forgotten_message_is_gone_from_the_store_files_after_compact(memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("minilm")
    folder = Path(mem._connection.local.backend.folder)
    fill(mem)  # the message, and what was distilled from it (a fact, the session summary): all name it a source
    gone = mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False).count
    assert gone >= 2 and SECRET not in " ".join(f"{r.text} {r.context}" for r in mem.iter_records(DANA))
    assert on_disk(folder, SECRET), "Qdrant purged the deleted point itself: compaction may no longer be needed"
    assert mem.compact() == len(list(mem.iter_records(ALL_TENANTS)))
    assert on_disk(folder, SECRET) == []
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("shard")) == ["shard"]


QUERIES = ("where does billing deploy from", "staging cluster 7 database", "a poem about the sea")


def ranking(mem: Memory) -> list[list[str]]:
    return [[h.record.id for h in mem.search(q, scope=DANA, limit=8)] for q in QUERIES]


def test_compact_keeps_every_memory_its_vector_and_its_ranking(memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("minilm")
    fill(mem)
    before, ranked = snapshot(mem), ranking(mem)
    assert mem.compact() == len(before)
    assert snapshot(mem) == before and ranking(mem) == ranked
    again = mem.add("the staging cluster 7 now runs postgres 17", scope=DANA)  # still a working store
    assert again.id in {h.record.id for h in mem.search("staging cluster 7 postgres 17", scope=DANA, limit=3)}



def test_writes_made_during_a_compaction_do_not_wait_for_it_and_are_kept(memory_factory: Callable[..., Memory],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("minilm")
    folder = Path(mem._connection.local.backend.folder)
    said = fill(mem)
    monkeypatch.setattr("remem.core.store.compaction.PAGE", 8)  # several pages: the writes land midway
    written: dict[str, Any] = {}

    def write() -> None:  # a hook's capture and a forget, from another thread, while the new files are built
        written["added"] = mem.add("the staging cluster 4 moved to postgres 17", scope=DANA).id
        mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False)
        written["during"] = True

    def midway(n: int) -> None:
        if "thread" not in written:
            written["thread"] = threading.Thread(target=write)
            written["thread"].start()
            written["thread"].join(timeout=30)
            assert written.get("during"), "a write waited for the compaction to finish"

    count = mem.compact(progress=midway)
    assert written.get("during") and count == len(list(mem.iter_records(ALL_TENANTS)))
    assert mem.get(written["added"], scope=DANA).text == "the staging cluster 4 moved to postgres 17"
    assert written["added"] in {h.record.id for h in mem.search("cluster 4 postgres 17", scope=DANA, limit=3)}
    with pytest.raises(Exception):
        mem.get(said, scope=DANA)
    assert on_disk(folder, SECRET) == []  # forgotten midway: not carried into the new files either


def test_a_compaction_raced_by_forgets_all_along_still_ends_with_the_words_gone(
        memory_factory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("none")
    folder = Path(mem._connection.local.backend.folder)
    fill(mem)
    monkeypatch.setattr("remem.core.store.compaction.PAGE", 4)
    stop, gone = threading.Event(), []
    local = mem._connection.local
    swap = local.backend._swap

    def swapped(dim: int) -> None:  # a forget after the swap would be a forget of the new files: not this test's
        stop.set()
        swap(dim)

    monkeypatch.setattr(local.backend, "_swap", swapped)
    rewrite, copies, added = local.backend.rewrite, [], []

    def copy(*args: Any) -> bool:
        copies.append(rewrite(*args))
        return copies[-1]

    monkeypatch.setattr(local.backend, "rewrite", copy)

    def forget_one_by_one() -> None:  # every copy is raced by a forget, until the last holds the write lock
        for k in range(100_000):
            with local.write_lock:
                if stop.is_set():
                    return
                word = f"xqzsecret{k}x"
                added.append(mem.add(f"the vault code is {word}", scope=DANA).id)
                if k:  # the one before: copied into the new files, perhaps
                    mem.forget(added[-2], scope=DANA)
                    gone.append(f"xqzsecret{k - 1}x")
            time.sleep(0.002)

    worker = threading.Thread(target=forget_one_by_one)
    worker.start()
    advanced: list[int] = []
    try:
        count = mem.compact(progress=advanced.append)
    finally:
        stop.set()
        worker.join()
    assert len(gone) > 1 and count == len(list(mem.iter_records(ALL_TENANTS)))
    assert copies[-1] and len(copies) > 1  # raced at least once, copied again
    assert count - 1 <= sum(advanced) < 1.5 * count  # one store's worth (a copy raced by adds may see a few more)
    assert not any(on_disk(folder, word) for word in gone)


def test_a_compaction_that_fails_midway_leaves_the_store_as_it_was(memory_factory: Callable[..., Memory],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("minilm")
    fill(mem)
    before, ranked = snapshot(mem), ranking(mem)
    backend = mem._connection.local.backend
    read = backend.dense_vectors
    calls = iter(range(1_000))

    def disk_error(ids):  # type: ignore[no-untyped-def]
        if next(calls) == 0:
            return read(ids)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(backend, "dense_vectors", disk_error)
    monkeypatch.setattr("remem.core.store.compaction.PAGE", 8)  # several pages: the failure comes midway
    with pytest.raises(OSError):
        mem.compact()
    monkeypatch.setattr(backend, "dense_vectors", read)
    assert snapshot(mem) == before and ranking(mem) == ranked


def test_a_crash_between_the_two_renames_is_undone_on_open(memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("none")
    fill(mem)
    before = snapshot(mem)
    folder = Path(mem._connection.local.backend.folder)
    mem.close()
    (folder / "shard").rename(folder / "shard.old")  # the live shard moved aside, the new one not in place
    (folder / "shard.new").mkdir()
    with Memory(path=folder, embedder="none", service="off") as again:
        assert snapshot(again) == before
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("shard")) == ["shard"]


def test_another_process_opening_the_store_midway_leaves_the_compaction_whole(
        memory_factory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("none")
    fill(mem)
    before = snapshot(mem)
    folder = Path(mem._connection.local.backend.folder)
    monkeypatch.setattr("remem.core.store.compaction.PAGE", 8)  # the other process comes while pages are copied
    tried: list[subprocess.CompletedProcess[str]] = []
    opener = ("import sys\nfrom remem import Memory, StoreLockedError\n"
              "try:\n    Memory(path=sys.argv[1], embedder='none', service='off')\n"
              "except StoreLockedError:\n    sys.exit(3)\n")

    def midway(n: int) -> None:
        if not tried:
            tried.append(subprocess.run([sys.executable, "-c", opener, str(folder)], capture_output=True, text=True))

    assert mem.compact(progress=midway) == len(before)
    assert tried[0].returncode == 3, tried[0].stderr  # refused: the store is open here
    assert snapshot(mem) == before
    mem.close()
    with Memory(path=folder, embedder="none", service="off") as again:
        assert snapshot(again) == before


def test_on_a_qdrant_server_compact_prunes_the_backups_holding_forgotten_words_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server rewrites its own files; the backups it wrote to the app machine are remem's to prune. Its
    default folder ($REMEM_HOME/backups) is shared by every server store: only this one's files go."""
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    with Memory(url=":memory:", embedder="none") as mem:
        fill(mem)
        held = mem.backup()
        others = held.parent / "remem-20200101T000000000000Z.jsonl.gz"  # another server store's, in the shared folder
        others.write_bytes(b"another store's backup")
        assert in_backup(held, SECRET)
        mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False)
        assert mem.compact() == len(list(mem.iter_records(ALL_TENANTS)))
        [fresh] = [p for p in held.parent.glob("remem-2*.jsonl.gz") if p != others]
        assert not held.exists() and others.exists() and not in_backup(fresh, SECRET)
        assert mem.prune_stale_backups() == []  # nothing forgotten since the fresh one


# ---------------------------------------------------------------------------------------------- backups
def in_backup(path: Path, word: str) -> bool:
    return word in gzip.decompress(path.read_bytes()).decode("utf-8")


def test_compact_deletes_the_backups_that_hold_forgotten_words_and_keeps_a_fresh_one(
        memory_factory: Callable[..., Memory], tmp_path: Path) -> None:
    mem = memory_factory("none")
    fill(mem)
    elsewhere = tmp_path / "offsite"
    elsewhere.mkdir()
    held = [mem.backup(), mem.backup(elsewhere)]  # the default folder and one of the user's own
    assert all(in_backup(p, SECRET) for p in held)
    mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False)  # the message and what was distilled from it
    mem.compact()
    left = sorted(Path(mem._connection.local.backend.folder, "backups").glob("*.gz")) + sorted(elsewhere.glob("*.gz"))
    assert not any(p.exists() for p in held)
    assert len(left) == 2 and not any(in_backup(p, SECRET) for p in left)  # a fresh one in each folder
    assert all(in_backup(p, "ArgoCD syncs from the main branch") for p in left)  # what is still stored


def test_backups_taken_after_the_last_forget_are_kept_as_they_are(memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("none")
    said = fill(mem)
    before = mem.backup()
    mem.forget(said, scope=DANA)
    after = mem.backup()
    mem.add("the staging cluster 9 runs postgres 17", scope=DANA)  # a new memory drops no words
    kept = after.read_bytes()
    mem.compact()
    assert not before.exists() and after.read_bytes() == kept
    assert sorted(after.parent.glob("*.gz")) == [after]  # no fresh one: a backup newer than the forget exists


def test_an_edit_that_drops_words_makes_older_backups_stale_and_keep_backups_keeps_them(
        memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("none")
    fill(mem)
    rec = mem.add("the on-call phone PIN is 771903", scope=DANA)
    first = mem.backup()
    mem.update(rec.id, scope=DANA, tags=["oncall"])  # adds a tag: drops nothing
    mem.compact()
    assert first.exists()
    mem.update(rec.id, scope=DANA, text="the on-call phone PIN is in the team vault")
    mem.compact(prune_backups=False)
    assert first.exists() and in_backup(first, "771903")  # asked to keep them
    mem.compact()
    assert not first.exists()
    assert not any(in_backup(p, "771903") for p in first.parent.glob("*.gz"))


def test_two_compactions_at_once_take_turns_and_lose_nothing(memory_factory: Callable[..., Memory],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("none")
    fill(mem)
    before = snapshot(mem)
    monkeypatch.setattr("remem.core.store.compaction.PAGE", 4)
    results: list[Any] = []

    def compact() -> None:
        try:
            results.append(mem.compact())
        except Exception as exc:  # noqa: BLE001 - the test reports it
            results.append(exc)

    threads = [threading.Thread(target=compact) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [len(before)] * 2 and snapshot(mem) == before
    folder = Path(mem._connection.local.backend.folder)
    mem.close()
    with Memory(path=folder, embedder="none", service="off") as again:
        assert snapshot(again) == before


def test_a_shared_backup_folder_keeps_the_files_other_stores_wrote(memory_factory: Callable[..., Memory],
                                                                   tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    mine, other = memory_factory("none"), memory_factory("none")
    fill(mine)
    other.add("the other store's note", scope=DANA)
    theirs = other.backup(shared)
    (shared / "remem-before-migration.jsonl.gz").write_bytes(b"the user's own file")
    held = mine.backup(shared)
    mine.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False)
    mine.reembed()  # rewrites the store's record of itself: where its backups went is kept
    mine.compact()
    assert not held.exists() and theirs.exists() and (shared / "remem-before-migration.jsonl.gz").exists()
    assert not any(in_backup(p, SECRET) for p in shared.glob("remem-2*.jsonl.gz") if p != theirs)


def test_a_backup_still_being_written_when_compaction_prunes_is_pruned_too(memory_factory: Callable[..., Memory],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("none")
    fill(mem)
    go, taken = threading.Event(), []
    real_export = backups_module.export

    def slow_export(engine: Any, path: Any, **kwargs: Any) -> int:
        if not taken:  # the first backup: started before the forget, still writing when compaction prunes
            taken.append(path)
            go.wait(10)
        return real_export(engine, path, **kwargs)

    monkeypatch.setattr(backups_module, "export", slow_export)
    writer = threading.Thread(target=mem.backup)
    writer.start()
    while not taken:
        time.sleep(0.01)
    mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False)
    compactor = threading.Thread(target=mem.compact)
    compactor.start()
    compactor.join(timeout=2)  # waits for the backup (now), or prunes without seeing it (before)
    go.set()
    writer.join()
    compactor.join()
    assert not Path(taken[0]).exists()
    left = list(Path(taken[0]).parent.glob("*.gz"))
    assert len(left) == 1 and not in_backup(left[0], SECRET)


def test_two_backups_at_once_into_new_folders_are_both_recorded_and_pruned(memory_factory: Callable[..., Memory],
                                                                           tmp_path: Path) -> None:
    mem = memory_factory("none")
    fill(mem)
    folders = [tmp_path / f"offsite{i}" for i in range(4)]
    for f in folders:
        f.mkdir()
    threads = [threading.Thread(target=mem.backup, args=(f,)) for f in folders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mem.forget(scope=DANA, where={"sources": ["b"]}, dry_run=False)
    mem.compact()
    for f in folders:
        [left] = f.glob("*.gz")
        assert not in_backup(left, SECRET), f


def test_rotation_in_a_shared_folder_keeps_only_the_newest_of_its_own(memory_factory: Callable[..., Memory],
                                                                     tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    mine, other = memory_factory("none"), memory_factory("none")
    other.add("the other store's note", scope=DANA)
    theirs = [other.backup(shared, keep=5) for _ in range(3)]
    mine.add("my note", scope=DANA)
    first, second = mine.backup(shared, keep=1), mine.backup(shared, keep=1)
    assert all(p.exists() for p in theirs) and second.exists() and not first.exists()
