"""Wall time of the Claude Code hooks, measured the way Claude Code pays for them: from spawning the plugin's
launcher to its exit (shell + Python start-up + remem + the work), p50/p95 over repeated runs.

    python -m remem.bench.bench_hooks [--runs 30] [--memories 300] [--embedder none|auto]

Scenarios:
- recall, warm service: REMEM_SERVICE=auto with the local service already running (the steady state).
- recall, cold in-process: REMEM_SERVICE=off, so every hook opens the store itself (no service at all).
- trivial prompt: the hook decides there is nothing to do (the floor: start-up cost only), in its own process
  (REMEM_SERVICE=off: shell, Python with site-packages, the hook's imports) and through the thin client that the
  warm service answers (shell, ``python -I -S``, one socket round trip).
- capture (Stop), warm service: until the hook exits (the service acknowledges, then reads the new transcript
  lines, redacts, spools and distils in a thread of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "remem-hook"
FIXTURE = ROOT / "tests" / "fixtures" / "transcripts" / "session1_decision.jsonl"
TOPICS = ["job queue", "postgres", "redis", "retry policy", "deploy", "CI", "billing", "auth tokens", "migrations",
          "logging", "dashboards", "feature flags", "caching", "rate limits", "backups"]
PROMPTS = ["How do the workers claim jobs from the queue?", "What did we decide about retries for poison jobs?",
           "Why did we move off Redis?", "Which CI steps are flaky and why?", "How are migrations deployed?"]


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile, linearly interpolated (NaN for no values)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def run_hook(event: str, payload: dict, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall ms, CPU ms of the hook's processes, result). CPU time is the load-independent part: on a busy
    machine wall time also counts waiting for a core."""
    data = json.dumps({**payload, "hook_event_name": event}).encode()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([str(LAUNCHER), event], input=data, capture_output=True, env=env, timeout=60)
    wall = (time.perf_counter() - t0) * 1000
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000
    return wall, cpu, proc


def seed(home: Path, tenant: str, n: int, embedder: str) -> None:
    os.environ.update(REMEM_HOME=str(home), REMEM_SERVICE="off")
    from remem import Memory, Scope

    with Memory(path=home / "store", embedder=embedder) as mem:
        items = [{"text": f"Decision {i}: for {TOPICS[i % len(TOPICS)]} we use option {i % 7} because of "
                          f"constraint {i % 11} (see ticket Q-{1000 + i}).",
                  "kind": ["decision", "fact", "lesson", "preference"][i % 4]} for i in range(n)]
        mem.add_many(items, scope=Scope(tenant=tenant))
        mem.add("The job queue claims jobs with SELECT ... FOR UPDATE SKIP LOCKED in Postgres.",
                scope=Scope(tenant=tenant), kind="decision")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--memories", type=int, default=300)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-hooks-"))
    project = tmp / "project"
    (project / ".git").mkdir(parents=True)
    home = tmp / "home"
    seed(home, str(project), args.memories, args.embedder)
    base = {**os.environ, "REMEM_HOME": str(home), "REMEM_EMBEDDER": args.embedder, "REMEM_PYTHON": sys.executable,
            "REMEM_SERVICE_IDLE": "120"}
    for key in ("REMEM_PATH", "REMEM_URL", "REMEM_HOOK_TENANT"):
        base.pop(key, None)
    prompt = {"session_id": "bench", "transcript_path": "", "cwd": str(project), "permission_mode": "default"}
    rows: list[tuple[str, list[float], list[float], int, int]] = []

    def measure(name: str, event: str, env: dict[str, str], make_payload, runs: int) -> None:  # noqa: ANN001
        times, cpus, injected, failed = [], [], 0, 0
        for i in range(runs):
            ms, cpu, proc = run_hook(event, make_payload(i), env)
            times.append(ms)
            cpus.append(cpu)
            injected += bool(proc.stdout.strip())
            failed += proc.returncode != 0
        rows.append((name, times, cpus, injected, failed))

    try:
        off = {**base, "REMEM_SERVICE": "off"}
        measure("trivial prompt, own process (full hook floor)", "UserPromptSubmit", off,
                lambda i: {**prompt, "prompt": "ok"}, args.runs)
        # a new session per run: within one session recall never injects the same memories twice
        measure("recall, cold in-process", "UserPromptSubmit", {**off, "REMEM_HOOK_RECALL_DEADLINE": "10"},
                lambda i: {**prompt, "session_id": f"cold-{i}", "prompt": PROMPTS[i % len(PROMPTS)]},
                max(5, args.runs // 3))
        auto = {**base, "REMEM_SERVICE": "auto"}
        from remem.core.service.client import start_service, stop_service

        start_service(home / "store", embedder=args.embedder)
        run_hook("UserPromptSubmit", {**prompt, "prompt": PROMPTS[0]}, auto)  # first contact
        measure("trivial prompt, warm service (thin client floor)", "UserPromptSubmit", auto,
                lambda i: {**prompt, "prompt": "ok"}, args.runs)
        measure("recall, warm service", "UserPromptSubmit", auto,
                lambda i: {**prompt, "session_id": f"warm-{i}", "prompt": PROMPTS[i % len(PROMPTS)]}, args.runs)
        transcript = tmp / "t.jsonl"
        transcript.write_text(FIXTURE.read_text().replace("__PROJECT__", str(project)))

        def stop_payload(i: int) -> dict:
            with open(transcript, "a") as fh:  # a new turn each time: every Stop has something to capture
                fh.write(json.dumps({"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content":
                                     f"Step {i}: also document the retry policy for queue {i}."}}) + "\n")
            return {"session_id": "bench-stop", "transcript_path": str(transcript), "cwd": str(project),
                    "stop_hook_active": False, "last_assistant_message": f"Documented the retry policy for {i}."}

        measure("capture (Stop), warm service", "Stop", auto, stop_payload, args.runs)
        deadline = time.monotonic() + 60
        spool = home / "hooks" / "spool"
        while time.monotonic() < deadline and any(spool.glob("*.json")):
            time.sleep(0.2)
        stop_service(home / "store")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        print(json.dumps([{"scenario": n, "runs": len(t), "p50_ms": round(pct(t, .5), 1),
                           "p95_ms": round(pct(t, .95), 1), "cpu_p50_ms": round(pct(c, .5), 1),
                           "injected": inj, "nonzero_exit": bad} for n, t, c, inj, bad in rows]))
        return 0
    print(f"remem hooks: wall time per hook process (launcher start to exit); {args.memories} memories, "
          f"embedder={args.embedder}, cpus={os.cpu_count()}, load average={os.getloadavg()[0]:.1f}")
    print(f"{'scenario':32} {'runs':>4} {'p50 ms':>7} {'p95 ms':>7} {'cpu p50':>8} {'cpu p95':>8} "
          f"{'injected':>8} {'exit!=0':>7}")
    for name, times, cpus, injected, failed in rows:
        print(f"{name:32} {len(times):4d} {pct(times, .5):7.1f} {pct(times, .95):7.1f} {pct(cpus, .5):8.1f} "
              f"{pct(cpus, .95):8.1f} {injected:8d} {failed:7d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
