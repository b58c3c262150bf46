"""What a history stored out of order costs, and whether it reads in the order said.

A chat sync often fetches the newest messages first and pages back in time. Each pattern stores the same
dated messages (BM25 only, one fresh embedded store each, in this process); the first row, the history stored
oldest first, is the baseline:

* ``oldest page first``: pages of ``--page`` messages in date order (each page continues the thread);
* ``newest page first``: the same pages, newest first (each page goes before the ones stored);
* ``one by one, newest first``: ``--one-by-one`` messages, each its own ``add``;
* ``unnamed, newest page first``: no thread name, one minute apart: the thread is inferred from the dates.

Columns: seconds, payload writes (points written by upsert or set_payload), threads, and the share of
neighbouring notes (in their thread's order) that are in date order.

    python -m remem.bench.bench_backfill [--messages 2000] [--page 50] [--one-by-one 600]
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import time
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

SCOPE = Scope(tenant="bench-backfill")
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def message(k: int, named: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"text": f"line {k}: build {k * 37 % 101} of service {k % 13} is green",
                            "occurred_at": T0 + dt.timedelta(minutes=k)}
    if named:
        item["metadata"] = {"thread": "#deploys"}
    return item


def pages(n: int, size: int, newest_first: bool) -> Iterator[range]:
    starts = list(range(0, n, size))
    for s in reversed(starts) if newest_first else starts:
        yield range(s, min(n, s + size))


class Writes:
    """Counts the points the store writes (upserts and payload updates)."""

    def __init__(self, mem: Memory) -> None:
        self.n = 0
        backend = mem._connection.local.backend
        upsert, set_payload = backend.upsert, backend.set_payload

        def counted_upsert(points: Any) -> Any:
            self.n += len(points)
            return upsert(points)

        def counted_set_payload(ids: Any, payload: Any) -> Any:
            self.n += len(ids)
            return set_payload(ids, payload)

        backend.upsert, backend.set_payload = counted_upsert, counted_set_payload


def in_order(mem: Memory) -> tuple[int, float]:
    """(threads, share of neighbouring notes of a thread in date order)."""
    notes = mem.list(scope=SCOPE, limit=10_000)
    by_thread: dict[str, list[Any]] = {}
    for r in notes:
        by_thread.setdefault(str(r.metadata.get("thread")), []).append(r)
    pairs = ok = 0
    for recs in by_thread.values():
        recs.sort(key=lambda r: (r.metadata.get("position", 0), r.created_at))
        for a, b in zip(recs, recs[1:]):
            pairs += 1
            ok += a.occurred_at <= b.occurred_at
    return len(by_thread), ok / pairs if pairs else 1.0


def run(store: Callable[[Memory], None]) -> tuple[float, int, int, float]:
    with tempfile.TemporaryDirectory() as d:
        mem = Memory(d, embedder="none", service="off")
        writes = Writes(mem)
        t = time.perf_counter()
        store(mem)
        took = time.perf_counter() - t
        threads, share = in_order(mem)
        mem.close()
    return took, writes.n, threads, share


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--page", type=int, default=50)
    ap.add_argument("--one-by-one", type=int, default=600)
    a = ap.parse_args(argv)

    def paged(newest_first: bool, named: bool) -> Callable[[Memory], None]:
        def store(mem: Memory) -> None:
            for page in pages(a.messages, a.page, newest_first):
                mem.add_many([message(k, named) for k in page], scope=SCOPE)
        return store

    def one_by_one(mem: Memory) -> None:
        for k in reversed(range(a.one_by_one)):
            mem.add(**message(k, True), scope=SCOPE)

    rows = [("oldest page first (baseline)", a.messages, paged(False, True)),
            ("newest page first", a.messages, paged(True, True)),
            ("one by one, newest first", a.one_by_one, one_by_one),
            ("unnamed, newest page first", a.messages, paged(True, False))]
    table = Table(title=f"history back-filled (BM25 only, pages of {a.page})")
    for col in ("pattern", "messages", "s", "x baseline", "payload writes", "threads", "in date order"):
        table.add_column(col, justify="left" if col == "pattern" else "right")
    base = None
    for name, n, store in rows:
        took, writes, threads, share = run(store)
        base = base or took / n
        table.add_row(name, str(n), f"{took:.2f}", f"{took / n / base:.2f}", str(writes), str(threads),
                      f"{share:.3f}")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
