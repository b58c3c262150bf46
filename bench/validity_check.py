"""What checking validity on the hits saves: the same searches with the validity ranges in Qdrant's filter.

``search()`` checks what is valid now on its hits (:mod:`remem.core.store.retrieval`). This runs the same
searches on the same store in one process, alternating rounds, with the ranges put back into the filter
("in the filter") and as shipped ("on the hits"), after a warm-up pass that is not counted. The store and
queries are :mod:`remem.bench.latency`'s; query vectors are embedded beforehand. ``--superseded S`` also keeps
an old version, in the same words and no longer valid, of a share S of the memories (what a store that
supersedes often holds): the case where hits are dropped and the second query runs, unless the spare
follows the share of hits the store drops (shipped), which is compared with the fixed spare it had before.

    python -m remem.bench.validity_check [--size 100000] [--rounds 6] [--embedder none|auto] [--superseded 0.2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import tempfile
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from remem import Memory, MemoryRecord, Scope
from remem.bench.latency import OBJECTS, SUBJECTS, VERBS, QueryVectors, fill, p, synth_text, time_searches
from remem.core.providers.embedders import resolve_embedder
from remem.core.store import records, retrieval
from remem.core.store.backends.base import FilterSpec

SHIPPED = retrieval.ranked
QUERIES_PER_SEARCH = {"n": 0}


def counted(backend: Any) -> None:
    """Count the backend's queries (how often the second query runs)."""
    query = backend.query

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        QUERIES_PER_SEARCH["n"] += 1
        return query(*args, **kwargs)
    backend.query = wrapper


def add_superseded(mem: Memory, share: float, pool: list[tuple[str, Any]], n: int) -> int:
    """Old versions of ``share`` of the pool's memories: the same words and vector, valid until a year ago."""
    ended = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=365)
    rng, points = random.Random(3), []
    for i in range(int(share * n)):
        text, vec = pool[i % len(pool)]
        rec = MemoryRecord(id=str(uuid.uuid4()), text=text, kind="fact", scope=Scope(tenant=f"t{i % 20}"),
                           content_hash=f"old{i}", valid_from=ended - dt.timedelta(days=30), valid_until=ended)
        points.append(mem._connection.local.point(rec, [x + rng.gauss(0, 0.01) for x in vec] if vec else None))
    for start in range(0, len(points), 1000):
        mem.backend.upsert(points[start:start + 1000])
    mem.optimize()
    return len(points)


def in_the_filter(backend: Any, settings: Any, query: str, qvec: Any, flt: FilterSpec, limit: int,
                  now_ts: float | None = None, valid_ts: float | None = None, drops: Any = None) -> Any:
    """``ranked`` as it was: the validity ranges are conditions of Qdrant's filter."""
    if valid_ts is not None:
        flt = records.valid_within(flt, valid_ts)
    return SHIPPED(backend, settings, query, qvec, flt, limit, now_ts, None)


def fixed_spare(backend: Any, settings: Any, query: str, qvec: Any, flt: FilterSpec, limit: int,
                now_ts: float | None = None, valid_ts: float | None = None, drops: Any = None) -> Any:
    """Checked on the hits with the fixed spare (a quarter of the limit, at least 5), whatever the store drops."""
    return SHIPPED(backend, settings, query, qvec, flt, limit, now_ts, valid_ts, None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="none", help="none (BM25 only) or auto (the default local model)")
    ap.add_argument("--superseded", type=float, default=0.0, help="share of memories with an old version kept")
    args = ap.parse_args(argv)
    rng = random.Random(7)
    queries = [f"why did {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}?"
               for _ in range(args.queries)]
    embedder = resolve_embedder(args.embedder)
    texts = [synth_text(random.Random(i), i) for i in range(2000)]
    vectors = embedder.embed_documents(texts) if embedder.dim else [None] * len(texts)
    variants = {"in the filter": in_the_filter, "on the hits, fixed spare": fixed_spare,
                "on the hits, spare follows drops (shipped)": SHIPPED}
    times: dict[str, list[float]] = {name: [] for name in variants}
    queries_run: dict[str, int] = {name: 0 for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "s", embedder=QueryVectors(embedder, queries), service="off")
        fill(mem, args.size, list(zip(texts, vectors)), random.Random(args.size))
        old = add_superseded(mem, args.superseded, list(zip(texts, vectors)), args.size)
        counted(mem.backend)
        time_searches(mem, queries, random.Random(1))  # warm-up
        try:
            for r in range(args.rounds):
                order = list(variants.items()) if r % 2 == 0 else list(variants.items())[::-1]
                for name, ranked in order:
                    retrieval.ranked = ranked
                    before = QUERIES_PER_SEARCH["n"]
                    times[name] += time_searches(mem, queries, random.Random(1))
                    queries_run[name] += QUERIES_PER_SEARCH["n"] - before
        finally:
            retrieval.ranked = SHIPPED
            mem.close()
    table = Table(title=f"search at {args.size:,} memories (+{old:,} superseded), {args.embedder}, "
                        f"{args.rounds} rounds x {args.queries}")
    for col in ("validity checked", "p50 ms", "p95 ms", "p50 vs in the filter", "Qdrant queries per search"):
        table.add_column(col, justify="right")
    base = statistics.median(times["in the filter"])
    for name, lat in times.items():
        p50 = statistics.median(lat)
        table.add_row(name, f"{p50:.2f}", f"{p(lat, 0.95):.2f}", f"{p50 / base:.2f}x",
                      f"{queries_run[name] / len(lat):.2f}")
    Console(width=120).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
