"""What checking validity on the hits saves: the same searches with the validity ranges in Qdrant's filter.

``search()`` checks what is valid now on its hits (:mod:`remem.core.store.retrieval`). This runs the same
searches on the same store in one process, alternating rounds, with the ranges put back into the filter
("in the filter") and as shipped ("on the hits"), after a warm-up pass that is not counted. The store and
queries are :mod:`remem.bench.latency`'s; query vectors are embedded beforehand.

    python -m remem.bench.validity_check [--size 100000] [--rounds 6] [--embedder none|auto]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from remem import Memory
from remem.bench.latency import OBJECTS, SUBJECTS, VERBS, QueryVectors, fill, p, synth_text, time_searches
from remem.core.providers.embedders import resolve_embedder
from remem.core.store import records, retrieval
from remem.core.store.backends.base import FilterSpec

SHIPPED = retrieval.ranked


def in_the_filter(backend: Any, settings: Any, query: str, qvec: Any, flt: FilterSpec, limit: int,
                  now_ts: float | None = None, valid_ts: float | None = None) -> Any:
    """``ranked`` as it was: the validity ranges are conditions of Qdrant's filter."""
    if valid_ts is not None:
        flt = FilterSpec(must=[*flt.must, *records.valid_at(valid_ts)], must_not=flt.must_not, should=flt.should)
    return SHIPPED(backend, settings, query, qvec, flt, limit, now_ts, None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="none", help="none (BM25 only) or auto (the default local model)")
    args = ap.parse_args(argv)
    rng = random.Random(7)
    queries = [f"why did {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}?"
               for _ in range(args.queries)]
    embedder = resolve_embedder(args.embedder)
    texts = [synth_text(random.Random(i), i) for i in range(2000)]
    vectors = embedder.embed_documents(texts) if embedder.dim else [None] * len(texts)
    variants = {"in the filter": in_the_filter, "on the hits (shipped)": SHIPPED}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "s", embedder=QueryVectors(embedder, queries), service="off")
        fill(mem, args.size, list(zip(texts, vectors)), random.Random(args.size))
        time_searches(mem, queries, random.Random(1))  # warm-up
        try:
            for r in range(args.rounds):
                order = list(variants.items()) if r % 2 == 0 else list(variants.items())[::-1]
                for name, ranked in order:
                    retrieval.ranked = ranked
                    times[name] += time_searches(mem, queries, random.Random(1))
        finally:
            retrieval.ranked = SHIPPED
            mem.close()
    table = Table(title=f"search at {args.size:,} memories, {args.embedder}, {args.rounds} rounds x {args.queries}")
    for col in ("validity checked", "p50 ms", "p95 ms", "p50 vs in the filter"):
        table.add_column(col, justify="right")
    base = statistics.median(times["in the filter"])
    for name, lat in times.items():
        p50 = statistics.median(lat)
        table.add_row(name, f"{p50:.2f}", f"{p(lat, 0.95):.2f}", f"{p50 / base:.2f}x")
    Console(width=120).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
