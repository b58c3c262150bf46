"""No-slowdown check between two versions of remem: the same micro-benchmark, run alternately in fresh
processes against this checkout and a git revision (default: the commit before the core redesign).

    python -m remem.bench.compare_versions [--rev REV] [--rounds 3] [--n 2000]

Prints medians (ms) per operation and the ratio this checkout / the revision (BM25 only: the store and the
facade are measured, not the embedder).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = r'''
import json, os, random, statistics, sys, tempfile, time
os.environ["REMEM_SERVICE"] = "off"
from remem import Memory, Scope
n = int(sys.argv[1]); rng = random.Random(7)
words = "deploy cache queue postgres redis kafka tenant retry backoff index shard replica token budget".split()
mem = Memory(path=tempfile.mkdtemp() + "/s", embedder="none")
scopes = [Scope(tenant=f"t{i}") for i in range(10)]
add_ms = []
for i in range(n):
    text = " ".join(rng.choice(words) for _ in range(12)) + f" note {i}"
    t0 = time.perf_counter(); rec = mem.add(text, scope=scopes[i % 10]); add_ms.append((time.perf_counter() - t0) * 1e3)
search_ms, get_ms, list_ms = [], [], []
for i in range(300):
    sc = scopes[i % 10]
    q = " ".join(rng.choice(words) for _ in range(3))
    t0 = time.perf_counter(); mem.search(q, scope=sc, limit=10, reinforce=False); search_ms.append((time.perf_counter() - t0) * 1e3)
    t0 = time.perf_counter(); mem.get(rec.id, scope=scopes[(n - 1) % 10]); get_ms.append((time.perf_counter() - t0) * 1e3)
    t0 = time.perf_counter(); mem.list(scope=sc, limit=20); list_ms.append((time.perf_counter() - t0) * 1e3)
mem.close()
med = statistics.median
print(json.dumps({"add": med(add_ms), "search": med(search_ms), "get": med(get_ms), "list": med(list_ms)}))
'''


def shim(rev: str) -> Path:
    """A folder whose ``remem`` is the repository at ``rev`` (a detached worktree), for PYTHONPATH."""
    base = Path(tempfile.mkdtemp(prefix="remem-rev-"))
    tree = base / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
    (base / "pkg").mkdir()
    (base / "pkg" / "remem").symlink_to(tree)
    return base


def run(pythonpath: Path | None, n: int) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    out = subprocess.run([sys.executable, "-c", WORKLOAD, str(n)], capture_output=True, text=True, env=env,
                         cwd=tempfile.gettempdir(), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", default="5162354")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    base = shim(args.rev)
    try:
        new: list[dict[str, float]] = []
        old: list[dict[str, float]] = []
        for _ in range(args.rounds):  # alternate, so machine noise hits both alike
            old.append(run(base / "pkg", args.n))
            new.append(run(None, args.n))
        print(f"| operation ({args.n} memories, BM25) | {args.rev} median ms | this checkout median ms | ratio |")
        print("|---|---|---|---|")
        for op in old[0]:
            o = statistics.median(r[op] for r in old)
            c = statistics.median(r[op] for r in new)
            print(f"| {op} | {o:.3f} | {c:.3f} | {c / o:.2f}x |")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base / "tree")], check=False)


if __name__ == "__main__":
    main()
