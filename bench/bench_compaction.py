"""What a compaction costs the writes made while it runs (a hook's capture during `remem compact`).

One tenant holds LoCoMo conversations fed through ``remember()``. A writer thread adds a memory every 20 ms and
times each ``add``: with no compaction running, during a compaction as it is now (writes go on; the write lock
is held only to catch up and swap), and during a compaction holding the write lock throughout (the version
before, emulated by holding the lock around ``compact()``). Rounds alternate in one process.

    python -m remem.bench.bench_compaction [--rounds 3] [--limit-convs 10] [--embedder none]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope
from remem.bench import locomo_remember as lr
from remem.bench.bench_forget import build

SCOPE = Scope(tenant="bench-compact")
EVERY = 0.02


def timed_adds(mem: Memory, work: Callable[[], object] | None, seconds: float,
               tag: str) -> tuple[list[float], float]:
    """Adds every ``EVERY`` s from a thread while ``work`` runs in this one (or for ``seconds``); their
    latencies, and how long the work took."""
    lat: list[float] = []
    done = threading.Event()

    def writer() -> None:
        k = 0
        while not done.is_set():
            started = time.perf_counter()
            mem.add(f"{tag} note {k}: the build cache moved to bucket {k}", scope=SCOPE)
            lat.append(time.perf_counter() - started)
            k += 1
            time.sleep(EVERY)

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.perf_counter()
    if work is None:
        time.sleep(seconds)
    else:
        work()
    took = time.perf_counter() - started
    done.set()
    thread.join()
    return lat, took


def compaction(mem: Memory, lock_throughout: bool) -> Callable[[], object]:
    local = mem._connection.local

    def run() -> object:
        with local.write_lock if lock_throughout else contextlib.nullcontext():
            return mem.compact(prune_backups=False)
    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit-convs", type=int, default=10)
    ap.add_argument("--embedder", default="none")
    args = ap.parse_args(argv)
    convs = json.loads(lr.DEFAULT_DATA.read_text("utf-8"))[: args.limit_convs]
    names = ("no compaction", "compaction, writes go on", "compaction, lock held throughout")
    lat: dict[str, list[float]] = {n: [] for n in names}
    took: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        mem = build(Path(tmp) / "store", convs, scope=SCOPE, embedder=args.embedder)
        records = mem.count(scope=SCOPE)
        for r in range(args.rounds):
            for name in names:
                seconds = statistics.median(took[names[1]]) if took[names[1]] else 2.0
                work = None if name == names[0] else compaction(mem, name == names[2])
                ls, t = timed_adds(mem, work, seconds, f"r{r}{name[:3]}")
                lat[name] += ls
                took[name].append(t)
        mem.close()
    table = Table(title=f"add() every {EVERY * 1000:.0f} ms from a thread, one tenant of {records} records "
                        f"({args.embedder}), {args.rounds} rounds alternating")
    for col in ("while", "compaction s (median)", "adds", "add p50 ms", "add max ms", "max vs no compaction"):
        table.add_column(col, justify="right")
    base = max(lat[names[0]])
    for name in names:
        ls = sorted(lat[name])
        secs = f"{statistics.median(took[name]):.2f}" if name != names[0] else "-"
        table.add_row(name, secs, str(len(ls)), f"{1000 * statistics.median(ls):.1f}", f"{1000 * ls[-1]:.1f}",
                      f"{ls[-1] / base:.1f}x")
    Console(width=130).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
