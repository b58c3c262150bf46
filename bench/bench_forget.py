"""What it costs that ``forget`` also takes a message's words out of its neighbours' recall context.

One tenant holds all ten LoCoMo conversations fed through ``remember()`` (BM25 only, about 7,000 records). Three
stores, built the same way in this process, then forgets of single episodes, alternating between them:

* ``erasure, link indexes``: the default (:mod:`remem.core.store.erasure`; ``meta.follows`` and
  ``meta.followed_by`` are keyword indexes);
* ``erasure, no link indexes``: the same, the store built without those two indexes;
* ``erasure, no derived``: the default without the lookup of what was distilled from the message
  (:mod:`remem.core.store.derived`: its session's records, to forget the memories and cut the summary's words);
* ``no erasure``: the forget of the versions before both (the record deleted, its neighbours left as they were).

    python -m remem.bench.bench_forget [--forgets 40] [--limit-convs 10]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope
from remem.bench import locomo_remember as lr
from remem.core.store import derived, erasure
from remem.core.store.backends import edge

SCOPE = Scope(tenant="bench-forget")


@contextlib.contextmanager
def without_link_indexes() -> Iterator[None]:
    saved = edge.KEYWORD_FIELDS
    edge.KEYWORD_FIELDS = tuple(k for k in saved if not k.startswith("meta."))
    try:
        yield
    finally:
        edge.KEYWORD_FIELDS = saved


@contextlib.contextmanager
def without_derived() -> Iterator[None]:
    saved = derived.derived_from
    derived.derived_from = lambda *args, **kwargs: derived.Derived()  # type: ignore[assignment]
    try:
        yield
    finally:
        derived.derived_from = saved  # type: ignore[assignment]


@contextlib.contextmanager
def without_erasure() -> Iterator[None]:
    saved = erasure.rewrite_neighbours
    erasure.rewrite_neighbours = lambda *args, **kwargs: 0  # type: ignore[assignment]
    try:
        with without_derived():
            yield
    finally:
        erasure.rewrite_neighbours = saved  # type: ignore[assignment]


def build(folder: Path, convs: list[dict[str, Any]], *, scope: Scope = SCOPE, embedder: str = "none") -> Memory:
    """A store of ``convs`` fed session by session through ``remember()`` (the keyless distiller), one tenant."""
    mem = Memory(path=folder, embedder=embedder, service="off")
    for ci, conv in enumerate(convs):
        speakers = (conv["conversation"]["speaker_a"], conv["conversation"]["speaker_b"])
        for n, when, turns in lr.sessions_of(conv):
            mem.remember(lr.messages_of(turns, when, speakers, "names"), scope=scope, session=f"c{ci}-s{n}",
                         distiller="keyless")
    mem.optimize()
    return mem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forgets", type=int, default=40, help="forgets per configuration")
    ap.add_argument("--limit-convs", type=int, default=10)
    args = ap.parse_args(argv)
    convs = json.loads(lr.DEFAULT_DATA.read_text("utf-8"))[: args.limit_convs]
    console = Console(width=120)
    names = ("erasure, link indexes", "erasure, no link indexes", "erasure, no derived", "no erasure")
    with tempfile.TemporaryDirectory() as tmp:
        stores: dict[str, Memory] = {}
        for i, name in enumerate(names):
            with without_link_indexes() if name == "erasure, no link indexes" else contextlib.nullcontext():
                stores[name] = build(Path(tmp) / f"s{i}", convs)
        episodes = {name: [r for r in mem.iter_records(SCOPE) if r.kind == "episode"] for name, mem in stores.items()}
        times: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.forgets):
            for name in names:
                rec = episodes[name].pop()
                with without_erasure() if name == "no erasure" else without_derived() if name == "erasure, no derived" \
                        else contextlib.nullcontext():
                    started = time.perf_counter()
                    stores[name].forget(rec.id, scope=SCOPE)
                    times[name].append(time.perf_counter() - started)
        records = stores[names[0]].count(scope=SCOPE)
        for mem in stores.values():
            mem.close()
    table = Table(title=f"forget(id) of one episode, one tenant of {records} records, {args.forgets} each, alternating")
    for col in ("configuration", "p50 ms", "p95 ms", "p50 vs no erasure"):
        table.add_column(col, justify="right")
    base = statistics.median(times["no erasure"])
    for name in names:
        ts = sorted(times[name])
        p50 = statistics.median(ts)
        table.add_row(name, f"{1000 * p50:.2f}", f"{1000 * ts[int(len(ts) * .95)]:.2f}", f"{p50 / base:.0f}x")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
