"""Entities linked after the write returns: every read sees them at once, a crash before linking loses no
link, and a memory forgotten before its linking leaves no entity behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Iterator

import pytest

from remem import Memory, Scope
from remem.core.entities import linking
from remem.core.entities.store import LINK_FIELD
from remem.core.store.backends.base import Cond, FilterSpec
from remem.core.store.backends.qdrant import QdrantClientBackend

ACME = Scope(tenant="acme")
NOTES = [
    {"text": "Priscilla Vandermeer maintains the ingest worker."},
    {"text": "The ingest worker moved to Redis Streams in May (ticket OPS-4411)."},
    {"text": "Priscilla Vandermeer is on call for db-prod-07 this week."},
]


@pytest.fixture(autouse=True)
def no_background_linking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The background thread waits for a minute of quiet: what the tests see is what the reads settle."""
    monkeypatch.setattr(linking, "IDLE", 60.0)


def pending(mem: Memory) -> int:
    local = mem._connection.local
    return local.backend.count(FilterSpec(must=[Cond(LINK_FIELD, any_of=(linking.PENDING,))]))


@pytest.fixture(params=["edge", "qdrant-local"])
def folder_mem(request: pytest.FixtureRequest, store_factory: Callable[..., Path],
               tmp_path: Path) -> Iterator[Callable[[], Memory]]:
    """Open (and reopen) a store on disk: Qdrant Edge, or qdrant-client's local mode in a folder."""
    opened: list[Memory] = []
    path = store_factory("none") if request.param == "edge" else tmp_path / "qdrant-local"

    def open_() -> Memory:
        if request.param == "edge":
            mem = Memory(path=path, embedder="none", service="off")
        else:
            mem = Memory(backend=QdrantClientBackend(path=str(path)), embedder="none", service="off")
        opened.append(mem)
        return mem

    open_.kind = request.param  # type: ignore[attr-defined]
    open_.path = path  # type: ignore[attr-defined]
    yield open_
    for mem in opened:
        mem.close()


def test_about_entities_and_search_see_memories_right_after_add_many(any_mem: Memory) -> None:
    stored = any_mem.add_many(NOTES, scope=ACME)
    assert pending(any_mem) == 3  # the write returned before linking
    names = {e.name for e in any_mem.entities(scope=ACME)}
    assert {"Priscilla Vandermeer", "ingest worker", "OPS-4411", "db-prod-07"} <= names
    assert pending(any_mem) == 0
    any_mem.add("Priscilla Vandermeer reviewed the payments gateway.", scope=ACME)
    profile = any_mem.about("Priscilla", scope=ACME)
    assert profile.entity is not None and profile.entity.mentions == 3
    later = any_mem.add_many([{"text": "Orrin Castellanos-Whitby joined the billing team."}], scope=ACME)
    hits = any_mem.search("What does Orrin Castellanos-Whitby do?", scope=ACME)
    assert hits and hits[0].record.id == later[0].id
    assert stored[0].id in {line.memory_id for line in any_mem.about("ingest worker", scope=ACME).current}


def test_another_tenants_pending_memories_wait_for_their_own_reads(any_mem: Memory) -> None:
    any_mem.add_many(NOTES, scope=ACME)
    any_mem.add("Bartholomew Quince runs the greenhouse bot.", scope=Scope(tenant="other"))
    assert {e.name for e in any_mem.entities(scope=Scope(tenant="other"))} >= {"Bartholomew Quince"}
    assert pending(any_mem) == 3  # acme's are linked by acme's reads (or the background thread), not other's
    assert any_mem.about("Priscilla Vandermeer", scope=ACME).entity is not None


def test_a_process_killed_before_linking_leaves_its_links_for_the_next_open(folder_mem) -> None:
    path, kind = folder_mem.path, folder_mem.kind
    opener = (f"Memory(path={str(path)!r}, embedder='none', service='off')" if kind == "edge" else
              f"Memory(backend=QdrantClientBackend(path={str(path)!r}), embedder='none', service='off')")
    script = textwrap.dedent(f"""
        import sys, time
        from remem import Memory, Scope
        from remem.core.entities import linking
        from remem.core.store.backends.qdrant import QdrantClientBackend
        linking.IDLE = 3600.0
        mem = {opener}
        mem.add_many({NOTES!r}, scope=Scope(tenant="acme"))
        print(len(mem._connection.local._shared.entity_linker), flush=True)
        time.sleep(600)
    """)
    env = {**os.environ, "REMEM_SERVICE": "off"}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "3"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    mem = folder_mem()
    assert pending(mem) == 3  # died with its three memories stored and unlinked
    profile = mem.about("Priscilla Vandermeer", scope=ACME)
    assert profile.entity is not None and profile.entity.mentions == 2
    assert {"ingest worker", "OPS-4411", "db-prod-07"} <= {e.name for e in mem.entities(scope=ACME)}
    assert pending(mem) == 0


def test_close_links_what_is_pending(folder_mem) -> None:
    mem = folder_mem()
    mem.add_many(NOTES, scope=ACME)
    mem.close()
    mem = folder_mem()
    assert pending(mem) == 0
    assert mem.about("ingest worker", scope=ACME).entity.mentions == 2


def test_a_memory_forgotten_before_linking_leaves_no_entity(folder_mem) -> None:
    mem = folder_mem()
    keep = mem.add("Zephyrine Okonkwo-Baptiste reviewed the payments gateway.", scope=ACME)
    gone = mem.add_many([{"text": "Quillon Marchetti-Vasquez owns the frobnicator daemon on zork-prod-03."}],
                        scope=ACME)[0]
    assert pending(mem) == 2
    mem.forget(gone.id, scope=ACME)
    names = {e.name for e in mem.entities(scope=ACME)}
    assert "Zephyrine Okonkwo-Baptiste" in names
    assert not names & {"Quillon Marchetti-Vasquez", "frobnicator daemon", "zork-prod-03"}
    mem.compact()
    mem.close()
    blob = b"".join(p.read_bytes() for p in Path(folder_mem.path).rglob("*") if p.is_file())
    assert b"Marchetti" not in blob and b"frobnicator" not in blob and b"zork-prod" not in blob
    assert b"Okonkwo" in blob
    mem = folder_mem()
    assert keep.id in {x.memory_id for x in mem.about("Zephyrine", scope=ACME).current}


def test_the_background_thread_links_once_writes_pause(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linking, "IDLE", 0.05)
    mem.add_many(NOTES, scope=ACME)
    linker = mem._connection.local._shared.entity_linker
    for _ in range(200):
        if not len(linker):
            break
        linker._thread.join(0.05)
    assert len(linker) == 0 and pending(mem) == 0


def test_an_edit_before_linking_links_the_new_text(any_mem: Memory) -> None:
    rec = any_mem.add_many([{"text": "Ignatius Fairweather-Lowe owns the ledger service."}], scope=ACME)[0]
    any_mem.update(rec.id, text="Henrietta Blackwood-Singh owns the ledger service.", scope=ACME)
    names = {e.name for e in any_mem.entities(scope=ACME)}
    assert "Henrietta Blackwood-Singh" in names and "Ignatius Fairweather-Lowe" not in names
    assert pending(any_mem) == 0


@pytest.mark.parametrize("text", ["LA", "Van", "We flew to LA on Monday.", "La is where Dana Whitfield lives."])
def test_a_capitalised_joiner_alone_is_no_name_and_loses_no_link(text: str) -> None:
    from remem.core.entities import extract

    found = {m.name for m in extract(text)}
    assert not found & {"LA", "Van", "La"}
    assert ("Dana Whitfield" in found) == ("Dana" in text)


def test_a_long_paste_names_at_most_max_mentions_the_first_ones() -> None:
    from remem.core.entities.extract import MAX_MENTIONS, extract

    text = "Dana Whitfield fixed OPS-1 on db-prod-01. " + " ".join(f"see issue #{i} in acme/api-{i}." for i in range(3000))
    found = extract(text[:32_000])
    assert len(found) == MAX_MENTIONS
    assert [m.name for m in found[:3]] == ["OPS-1", "#0", "#1"]


def test_a_long_bulk_load_keeps_the_queue_bounded(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linking, "MAX_PENDING", 4)
    mem.add_many([{"text": f"Ticket OPS-{100 + i} was fixed by Dana Whitfield."} for i in range(12)], scope=ACME)
    assert len(mem._connection.local._shared.entity_linker) <= 4  # the writer linked batches itself
    assert pending(mem) <= 4
    assert len({e.name for e in mem.entities(scope=ACME, kind="issue")}) == 12


def test_a_search_opening_the_entity_index_while_a_writer_opens_it_too_does_not_hang(
        mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search and a save in two threads of one process (an MCP server's tools), on a store whose entity index is
    not open yet: the save holds the store's lock and opens the index; the search is opening it and then queues
    what a dead process left, which takes the store's lock. Neither may wait for the other (it hung a server)."""
    import threading
    import time

    from remem.core.entities import hooks

    real_open = hooks.open_backend

    def slow_open(*args: object, **kwargs: object) -> object:
        time.sleep(0.3)  # the search is still opening when the save asks for the index
        return real_open(*args, **kwargs)

    monkeypatch.setattr(hooks, "open_backend", slow_open)
    local = mem._connection.local
    holding, saved, searched = threading.Event(), threading.Event(), threading.Event()

    def save() -> None:
        with local.write_lock:
            holding.set()
            time.sleep(0.1)
            hooks.index(local)
        saved.set()

    writer = threading.Thread(target=save, daemon=True)
    writer.start()
    holding.wait(5)
    reader = threading.Thread(target=lambda: (mem.search("Priscilla Vandermeer", scope=ACME), searched.set()),
                              daemon=True)
    reader.start()
    writer.join(10)
    reader.join(10)
    assert saved.is_set() and searched.is_set(), "the save and the search waited for each other"
