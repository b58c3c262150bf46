"""What the default scope rule costs a hook: the project of a folder, found by reading ``.git`` files.

Every Claude Code hook and every CLI call resolves the tenant of its folder. The rule reads a worktree's ``.git``
file and its ``commondir`` so that all worktrees share one tenant; the baseline is the walk to the nearest
``.git`` that the hooks did before (the worktree's own folder). Both run alternately in one process, on a real
repository with a linked worktree (``git worktree add``), from a folder five levels down and from outside any
repository, and the table shows medians per call. For comparison, one ``git rev-parse --git-common-dir``
(what the rule avoids spawning) is timed too.

    python -m remem.bench.bench_scope [--calls 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from remem.core.scope import find_project


def nearest_git(start: Path) -> str:
    """The baseline: the walk the hooks did before (the nearest folder with a ``.git``, else the folder)."""
    here = Path(os.path.realpath(start))
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(here)


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@b"}
        subprocess.run(["git", "init", "-q", str(root / "app")], check=True, env=env)
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=root / "app", check=True, env=env)
        subprocess.run(["git", "worktree", "add", "-q", str(root / "wt")], cwd=root / "app", check=True, env=env)
        deep = root / "wt" / "a" / "b" / "c" / "d" / "e"
        deep.mkdir(parents=True)
        outside = root / "plain" / "a" / "b"
        outside.mkdir(parents=True)
        assert find_project(deep).tenant == os.path.realpath(root / "app")  # type: ignore[union-attr]
        rows = []
        for label, where in (("worktree, 5 folders down", deep), ("outside a repository", outside)):
            new, old = [], []
            for _ in range(args.rounds):
                old.append(per_call_us(lambda: nearest_git(where), args.calls))
                new.append(per_call_us(lambda: find_project(where), args.calls))
            rows.append((label, statistics.median(old), statistics.median(new)))
        spawn = []
        for _ in range(args.rounds):
            t = time.perf_counter()
            subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=deep, capture_output=True, check=True)
            spawn.append((time.perf_counter() - t) * 1e6)
    print("| folder | nearest .git (before), µs | project rule (now), µs | ratio |")
    print("|---|---|---|---|")
    for label, old_us, new_us in rows:
        print(f"| {label} | {old_us:.1f} | {new_us:.1f} | {new_us / old_us:.2f}x |")
    print(f"\none `git rev-parse --git-common-dir` process: {statistics.median(spawn):.0f} µs (median of "
          f"{args.rounds})")


if __name__ == "__main__":
    main()
