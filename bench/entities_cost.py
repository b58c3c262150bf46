"""What entities cost: write throughput (``add_many``, ``remember()``), search latency at 100k memories and store
size, each against the same run's baseline with entities off (``Memory(entities=False)``).

* ``add_many``: the synthetic memories of ``bench/latency.py`` (people, services, versions, files, ticket ids),
  in batches of 64, BM25 only (the embedder would dominate both sides equally).
* ``remember()``: the first LoCoMo conversations, session by session, keyless distiller.
* search: ``--size`` memories in 20 tenants loaded through the store's own write path (entities linked), one
  tenant per query, limit 10, query embedding excluded (BM25 only), entity recall on and off on the same store;
  after a first pass of other queries (a store just loaded is cold).
* store size: the folder on disk for the ``add_many`` stores, after ``compact()``.

    python -m remem.bench.entities_cost [--n 3000] [--size 100000] [--convs 2] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

from .latency import OBJECTS, SUBJECTS, VERBS, fill, p, synth_text, time_searches
from .locomo_remember import DEFAULT_DATA, load_remember


def size_of(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def add_many_rate(path: Path, n: int, entities: bool) -> tuple[float, int]:
    rng = random.Random(3)
    items = [{"text": synth_text(rng, i)} for i in range(n)]
    with Memory(path=path, embedder="none", service="off", entities=entities) as mem:
        t0 = time.perf_counter()
        for start in range(0, n, 500):
            mem.add_many(items[start:start + 500], scope=Scope(tenant=f"t{start % 7}"), dedupe=False)
        rate = n / (time.perf_counter() - t0)
        mem.compact()
    return rate, size_of(path)


def remember_seconds(path: Path, convs: list, entities: bool) -> float:
    with Memory(path=path, embedder="none", service="off", entities=entities) as mem:
        t0 = time.perf_counter()
        load_remember(mem, convs, "names", lambda *a: None, 0)
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--convs", type=int, default=2)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the write measures")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    console = Console(width=150)
    convs = json.loads(DEFAULT_DATA.read_text("utf-8"))[: args.convs] if DEFAULT_DATA.exists() else []
    rates: dict[bool, list[float]] = {True: [], False: []}
    sizes: dict[bool, int] = {}
    rem: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):  # alternating, so load on the machine falls on both
            for on in ((False, True) if r % 2 == 0 else (True, False)):
                rate, size = add_many_rate(Path(tmp) / f"a{r}{on}", args.n, on)
                rates[on].append(rate)
                sizes[on] = size
                if convs:
                    rem[on].append(remember_seconds(Path(tmp) / f"r{r}{on}", convs, on))
            console.log(f"round {r + 1}: add_many {rates[False][-1]:.0f} / {rates[True][-1]:.0f} per s")
        rng = random.Random(7)
        queries = [f"why did {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}?"
                   for _ in range(2 * args.queries)]
        with Memory(path=Path(tmp) / "big", embedder="none", service="off") as mem:
            pool = [(synth_text(random.Random(i), i), None) for i in range(2000)]
            load = fill(mem, args.size, pool, random.Random(args.size))
            console.log(f"{args.size} memories loaded with entities in {load:.0f} s")
            off = mem.with_settings(entity_recall=False)
            time_searches(mem, queries[args.queries:], random.Random(2))  # warm
            lat = {"entity recall on": [], "entity recall off": []}
            for r in range(2):
                for name, m in ((("entity recall on", mem), ("entity recall off", off)) if r == 0 else
                                (("entity recall off", off), ("entity recall on", mem))):
                    lat[name] += time_searches(m, queries[:args.queries], random.Random(1))
    t = Table(title="entities: cost against the same run's baseline (entities off)")
    for col in ("measure", "entities off", "entities on", "on / off"):
        t.add_column(col, justify="right")
    a_off, a_on = statistics.median(rates[False]), statistics.median(rates[True])
    t.add_row(f"add_many memories/s (median of {args.rounds}, {args.n} memories)", f"{a_off:.0f}", f"{a_on:.0f}",
              f"{a_on / a_off:.2f}")
    if convs:
        r_off, r_on = statistics.median(rem[False]), statistics.median(rem[True])
        t.add_row(f"remember() s, {len(convs)} LoCoMo conversations", f"{r_off:.1f}", f"{r_on:.1f}",
                  f"{r_on / r_off:.2f}")
    t.add_row(f"store size MB after compact ({args.n} memories)", f"{sizes[False] / 1e6:.1f}",
              f"{sizes[True] / 1e6:.1f}", f"{sizes[True] / sizes[False]:.2f}")
    on, offl = lat["entity recall on"], lat["entity recall off"]
    t.add_row(f"search p50 ms at {args.size:,}", f"{statistics.median(offl):.2f}", f"{statistics.median(on):.2f}",
              f"{statistics.median(on) / statistics.median(offl):.2f}")
    t.add_row(f"search p95 ms at {args.size:,}", f"{p(offl, 0.95):.2f}", f"{p(on, 0.95):.2f}",
              f"{p(on, 0.95) / p(offl, 0.95):.2f}")
    console.print(t)
    if args.json:
        args.json.write_text(json.dumps({"add_many": rates, "remember": rem, "sizes": sizes, "latency": lat},
                                        default=str))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("REMEM_SERVICE", "off")
    raise SystemExit(main())
