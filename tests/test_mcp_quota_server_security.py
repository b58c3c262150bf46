"""The tenant quota on the Qdrant server path, where several app processes write one collection and each has its
own write lock: writers that all pass the check before any of them writes must not leave the tenant over its
quota. qdrant-client's local mode cannot be opened by two processes (it locks its folder), so the second process
is a second engine on the same collection with a write lock of its own, which is all a second process has apart."""

from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest

from remem import ALL_TENANTS, Memory, QuotaExceededError, Scope
from remem.core.local import LocalMemory

ACME = Scope(tenant="acme")


class Racing:
    """The real backend, with writers held at ``upsert`` until all of them have got there (past the check)."""

    def __init__(self, backend: Any, barrier: threading.Barrier) -> None:
        self._backend, self._barrier = backend, barrier

    def upsert(self, points: Any) -> None:
        try:
            self._barrier.wait(timeout=10)
        except threading.BrokenBarrierError:
            pass
        self._backend.upsert(points)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._backend, name)


@pytest.fixture
def server_mem() -> Iterator[Memory]:
    m = Memory(url=":memory:", embedder="none")
    yield m
    m.close()


def _processes(mem: Memory, n: int, quota: int) -> list[LocalMemory]:
    """``n`` writers as separate processes see the store: one collection, a write lock each, racing writes."""
    local = mem._connection.local  # noqa: SLF001 - the real engine of this store
    barrier = threading.Barrier(n)
    settings = local.settings.with_changes({"tenant_quota": quota, "entities": False})  # the entity index is not raced
    return [LocalMemory(Racing(local.backend, barrier), local.embedder, settings) for _ in range(n)]


def _records(mem: Memory) -> int:
    return sum(1 for r in mem.iter_records(ALL_TENANTS) if r.scope.tenant == "acme")


@pytest.mark.parametrize("writers", [2, 6])
def test_writers_with_their_own_locks_never_leave_the_tenant_over_its_quota(server_mem: Memory, writers: int) -> None:
    for i in range(2):
        server_mem.add(f"existing fact {i} about service s{i}", scope=ACME)
    procs = _processes(server_mem, writers, quota=3)
    outcome: list[str] = []

    def save(i: int, engine: LocalMemory) -> None:
        try:
            engine.add(f"new fact {i}: the worker w{i} runs on node n{i}", scope=ACME)
            outcome.append("stored")
        except QuotaExceededError as exc:
            assert "quota of tenant 'acme' is full" in str(exc)
            outcome.append("refused")

    threads = [threading.Thread(target=save, args=(i, e)) for i, e in enumerate(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(outcome) == writers
    assert _records(server_mem) <= 3 and _records(server_mem) == 2 + outcome.count("stored")
    # the quota is free again for a writer that comes after the race
    if outcome.count("stored") == 0:
        server_mem.with_settings(tenant_quota=3).add("a later fact about the cache", scope=ACME)
        assert _records(server_mem) == 3


def test_a_refused_supersede_leaves_the_old_memory_current(server_mem: Memory) -> None:
    old = server_mem.add("The deploy window is Monday 09:00", scope=ACME)
    server_mem.add("The on-call rotation starts Tuesday", scope=ACME)
    a, b = _processes(server_mem, 2, quota=3)
    errors: list[BaseException] = []

    def run(fn: Any) -> None:
        try:
            fn()
        except QuotaExceededError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(lambda: a.supersede(old.id, "The deploy window is Friday 09:00",
                                                                      scope=ACME),)),
               threading.Thread(target=run, args=(lambda: b.add("The staging database moved to db-2", scope=ACME),))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert _records(server_mem) <= 3 and len(errors) >= 1
    current = server_mem.get(old.id, scope=ACME)
    successors = [r for r in server_mem.iter_records(ALL_TENANTS) if r.supersedes == old.id]
    assert len(successors) == (1 if current.superseded_by else 0)  # never closed without its successor kept


def test_an_import_racing_a_save_keeps_the_tenant_within_its_quota(server_mem: Memory, tmp_path: Any) -> None:
    source = Memory(url=":memory:", embedder="none")
    try:
        for i in range(2):
            source.add(f"imported fact {i}: the queue q{i} drains nightly", scope=ACME)
        source.export(tmp_path / "acme.jsonl", scope=ACME)
    finally:
        source.close()
    server_mem.add("existing fact about the billing service", scope=ACME)
    importer, saver = _processes(server_mem, 2, quota=3)
    outcome: dict[str, str] = {}

    def run(name: str, fn: Any) -> None:
        try:
            fn()
            outcome[name] = "kept"
        except QuotaExceededError:
            outcome[name] = "refused"

    threads = [threading.Thread(target=run, args=("import", lambda: importer.import_(tmp_path / "acme.jsonl",
                                                                                     scope=ACME))),
               threading.Thread(target=run, args=("save", lambda: saver.add("a fact about the cache", scope=ACME)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(outcome) == 2 and _records(server_mem) <= 3
    imported = [r for r in server_mem.iter_records(ALL_TENANTS) if r.text.startswith("imported fact")]
    assert len(imported) in (0, 2)  # an import is kept or refused whole, never half
    assert (len(imported) == 2) == (outcome["import"] == "kept")
