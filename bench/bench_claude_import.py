"""``remem import claude-code`` on generated Claude Code transcripts: how long a backfill takes, what it stores.

    python -m remem.bench.bench_claude_import [--sessions 300] [--projects 12] [--turns 8] [--embedder none]

Writes ``--sessions`` transcripts shaped like Claude Code's (``~/.claude/projects/<project>/<id>.jsonl``: user and
assistant entries with content blocks, tool_use / tool_result, meta and sidechain lines, a summary line) over
``--projects`` git projects, then runs the importer twice into a fresh store (in-process): the backfill, then the
re-run that must import nothing. Prints sessions/s, distilled memories and episodes, and the store size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

TOPICS = [("job queue", "Postgres with FOR UPDATE SKIP LOCKED", "Redis", "a crashed worker lost its job"),
          ("deploys", "blue-green releases on Tuesdays", "rolling restarts", "the on-call rota is fullest then"),
          ("logging", "structlog with JSON output", "print statements", "the log pipeline parses JSON"),
          ("caching", "a 5 minute TTL in front of the pricing API", "no cache", "the API rate-limits us"),
          ("auth", "short-lived JWTs refreshed by the gateway", "session cookies", "mobile clients need tokens"),
          ("CI", "pytest -n 4 on two runners", "a single runner", "the suite took 40 minutes"),
          ("migrations", "alembic with one migration per PR", "hand-written SQL", "reviews missed drift")]
FILES = ["worker/claim.py", "deploy/release.sh", "app/logging.py", "pricing/cache.py", "gateway/auth.py",
         "ci/pipeline.yml", "db/migrations/env.py", "README.md", "tests/test_claim.py"]


def slug(path: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in path)


def write_session(folder: Path, cwd: str, session: str, turns: int, start: datetime, rng: random.Random,
                  secret: str | None = None) -> Path:
    """One transcript of ``turns`` prompt/answer pairs (with tool calls), as Claude Code writes it."""
    lines: list[dict[str, Any]] = [{"type": "summary", "summary": "generated session", "leafUuid": str(uuid.uuid4())}]
    parent = None
    now = start

    def entry(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent, now
        now += timedelta(seconds=rng.randint(5, 90))
        uid = str(uuid.uuid4())
        lines.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                      "sessionId": session, "version": "2.1.197", "gitBranch": "main", "type": kind, "uuid": uid,
                      "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "message": message, **extra})
        parent = uid

    entry("user", {"role": "user", "content": "<local-command-caveat>Caveat: local commands.</local-command-caveat>"},
          isMeta=True)
    for i in range(turns):
        topic, choice, old, why = TOPICS[rng.randrange(len(TOPICS))]
        file = FILES[rng.randrange(len(FILES))]
        prompt = (f"For the {topic}, should we keep {old} or switch to {choice}? Please update {file}."
                  if i % 3 == 0 else f"Can you also fix the failing test around {topic} in {file}?")
        if secret and i == 0:
            prompt += f" The token for the staging API is {secret}."
        entry("user", {"role": "user", "content": prompt})
        tool_id = f"toolu_{uuid.uuid4().hex[:20]}"
        entry("assistant", {"role": "assistant", "model": "claude-test", "content": [
            {"type": "thinking", "thinking": "Let me look at the file first.", "signature": "x"},
            {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": f"{cwd}/{file}"}}]})
        entry("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                    "content": f"# {file}\n" + "x = 1\n" * 20}]})
        edit_id = f"toolu_{uuid.uuid4().hex[:20]}"
        entry("assistant", {"role": "assistant", "model": "claude-test", "content": [
            {"type": "tool_use", "id": edit_id, "name": "Edit",
             "input": {"file_path": f"{cwd}/{file}", "old_string": "x = 1", "new_string": "x = 2"}}]})
        entry("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": edit_id,
                                                    "content": "The file has been updated."}]})
        answer = (f"Decision: for the {topic} we switch from {old} to {choice}, because {why}. I updated {file} "
                  f"and the tests pass." if i % 3 == 0 else
                  f"Fixed: the {topic} test failed because of a stale fixture in {file}; it passes now.")
        entry("assistant", {"role": "assistant", "model": "claude-test", "content": [{"type": "text", "text": answer}]})
    entry("user", {"role": "user", "content": "side question"}, isSidechain=True)
    path = folder / slug(cwd) / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def generate(root: Path, projects_root: Path, sessions: int, projects: int, turns: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    cwds = []
    for p in range(projects):
        proj = projects_root / f"project-{p:02d}"
        (proj / ".git").mkdir(parents=True, exist_ok=True)
        cwds.append(str(proj))
    start = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)
    return [write_session(root, cwds[i % projects], str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                          max(1, turns + rng.randint(-3, 3)), start + timedelta(hours=7 * i), rng)
            for i in range(sessions)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--projects", type=int, default=12)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--embedder", default="none")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-import-"))
    os.environ.update(REMEM_HOME=str(tmp / "remem"), REMEM_SERVICE="off", REMEM_EMBEDDER=args.embedder)
    try:
        files = generate(tmp / "claude" / "projects", tmp / "code", args.sessions, args.projects, args.turns)
        size = sum(f.stat().st_size for f in files)
        from remem import Memory

        from remem.hooks.importer import import_sessions

        with Memory() as mem:
            t0 = time.perf_counter()
            first = import_sessions(mem, tmp / "claude" / "projects")
            backfill = time.perf_counter() - t0
            t1 = time.perf_counter()
            again = import_sessions(mem, tmp / "claude" / "projects")
            rerun = time.perf_counter() - t1
            per_tenant = sum(mem.count(scope={"tenant": t}) for t in first.tenants)
            episodes = sum(mem.count(scope={"tenant": t}, kind="episode") for t in first.tenants)
            size_mb = sum(f.stat().st_blocks * 512 for f in (tmp / "remem" / "store").rglob("*") if f.is_file()) / 1e6
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"remem import claude-code: {args.sessions} generated sessions ({size / 1e6:.1f} MB of JSONL, "
          f"{first.messages} messages) over {args.projects} projects, embedder={args.embedder}, "
          f"cpus={os.cpu_count()}, load average={os.getloadavg()[0]:.1f}")
    print("| run | sessions imported | memories written | seconds | sessions/s |")
    print("|---|---|---|---|---|")
    print(f"| backfill | {first.imported} | {first.memories} | {backfill:.1f} | {first.imported / backfill:.1f} |")
    print(f"| again (idempotent) | {again.imported} | {again.memories} | {rerun:.2f} | - |")
    print(f"\nin the projects' tenants: {per_tenant - episodes} distilled memories and {episodes} episodes (the "
          f"messages themselves); store {size_mb:.0f} MB on disk; skipped on re-run: "
          f"{again.skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
