"""What relation extraction costs a write: ``add_many`` throughput (BM25 only) with relations recorded, against
the same run's baseline with the relation step skipped (entities linked on both sides), in alternating rounds;
and how many relations the synthetic memories of ``bench/latency.py`` give (a third of them say "migrated to").

    python -m remem.bench.relations_cost [--n 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

from .latency import synth_text


def one(n: int, relations: bool, seed: int) -> tuple[float, int]:
    from remem.core.entities.relations import lifecycle
    from remem.core.store.backends.base import FilterSpec

    rng = random.Random(seed)
    texts = [synth_text(rng, i) for i in range(n)]
    saved = lifecycle.on_write
    if not relations:
        lifecycle.on_write = lambda engine, rec: None  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            with Memory(path=Path(tmp) / "store", embedder="none", service="off") as mem:
                scope = Scope(tenant="bench")
                mem.add("Dana Whitfield maintains the ingest worker.", scope=scope)  # shards created, untimed
                started = time.perf_counter()
                for i in range(0, n, 64):
                    mem.add_many([{"text": t} for t in texts[i:i + 64]], scope=scope)
                rate = n / (time.perf_counter() - started)
                ridx = lifecycle.index(mem._connection.local, create=False)
                count = sum(1 for _ in ridx.scan(FilterSpec())) if ridx is not None else 0
    finally:
        lifecycle.on_write = saved
    return rate, count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    rates: dict[bool, list[float]] = {False: [], True: []}
    counts = 0
    for r in range(args.rounds):
        for side in ((False, True) if r % 2 == 0 else (True, False)):
            rate, count = one(args.n, side, seed=r)
            rates[side].append(rate)
            counts = max(counts, count)
    table = Table(title=f"add_many of {args.n} synthetic memories, BM25 only, {args.rounds} alternating rounds")
    for col in ("measure", "relations skipped", "relations recorded", "ratio"):
        table.add_column(col, justify="right")
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    table.add_row("memories/s (median)", f"{off:.0f}", f"{on:.0f}", f"{on / off:.2f}")
    table.add_row("memories/s (best)", f"{max(rates[False]):.0f}", f"{max(rates[True]):.0f}",
                  f"{max(rates[True]) / max(rates[False]):.2f}")
    table.add_row("relation records", "0", str(counts), "")
    Console(width=120).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
