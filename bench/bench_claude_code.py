"""What the remem plugin adds to a headless Claude Code turn, measured on the real ``claude`` CLI.

    python -m remem.bench.bench_claude_code [--runs 10] [--memories 300] [--embedder none|auto] [--claude PATH]

Three sides run the same ``claude -p PROMPT`` against a fake Anthropic API on 127.0.0.1 that answers at once
(tests/anthropic_server.py), in rotation so machine load hits all alike: bare; the "floor", the same plugin with
every hook ``true`` and a stub stdio MCP server (what Claude Code charges any plugin with these hooks and a
server, whatever they do); and remem, with ``--plugin-dir`` a copy of this checkout's files as a marketplace
install has them (tracked and new files, no virtualenv or caches). The remem side uses a store seeded with
``--memories`` memories of the project and a warm local
service (the steady state). Reported, medians and p95 over the runs:

- wall time of the whole ``claude -p`` process, and time until its first API request (what the user waits for
  before the model even starts), from the process start and the ``--debug-file`` timestamps;
- the CPU time of claude and of the processes it waits for (hooks, the MCP server): the load-independent cost;
- the MCP server's connect time as Claude Code logs it;
- the time from the answer's first byte to the process exit (Stop, the MCP server's shutdown, SessionEnd);
- each remem hook's own time (its process start to its last log line, from ``$REMEM_HOME/logs/hooks.log``):
  recall, and Stop, whose capture the service does after acknowledging it (off the turn's critical path).
  SessionStart (async) and a SessionEnd with nothing new write no log line, so they have no row.
- the first prompt after the service is gone ("first prompt of the day"): whether recall still arrived.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from remem.bench.bench_hooks import TOPICS, pct

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
PROMPT = "How do the workers claim jobs from the queue, and why did we move off Redis?"
_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) ")
_MCP = re.compile(r'MCP server "plugin:remem:remem": Successfully connected .* in (\d+)ms')


def _stamp(line: str) -> float | None:
    m = _TS.match(line)
    if not m:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def debug_timings(path: Path, started: float) -> dict[str, float]:
    """From a --debug-file: ms from process start to the first API request, and the MCP connect time."""
    out: dict[str, float] = {}
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return out
    for line in lines:
        if "[API REQUEST] /v1/messages" in line and "first_request" not in out:
            ts = _stamp(line)
            if ts is not None:
                out["first_request"] = (ts - started) * 1000
        if "Stream started" in line and "answered" not in out:
            ts = _stamp(line)
            if ts is not None:
                out["answered"] = (ts - started) * 1000
        m = _MCP.search(line)
        if m:
            out["mcp_connect"] = float(m.group(1))
    return out


def hook_timings(log: Path, offset: int) -> dict[str, float]:
    """Per hook event, from the hooks.log lines written since byte ``offset`` (this turn's): the ms of its
    last line, i.e. from the hook process's start to the end of its work. Read per line, not per process: the
    service writes the lines of every hook it answers."""
    try:
        with open(log, "rb") as fh:
            fh.seek(offset)
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        event = HOOK_EVENTS.get(row.get("event"))
        if event:
            out[event] = max(out.get(event, 0.0), float(row.get("ms", 0)))
    return out


def log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


HOOK_EVENTS = {"sessionstart": "SessionStart", "userpromptsubmit": "UserPromptSubmit", "stop": "Stop",
               "sessionend": "SessionEnd"}


def seed(home: Path, tenant: str, n: int, embedder: str) -> None:
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_SERVICE": "off", "REMEM_EMBEDDER": embedder}
    code = ("import json, sys; from remem import Memory, Scope; items = json.load(sys.stdin); "
            "m = Memory(); m.add_many(items, scope=Scope(tenant=sys.argv[1])); m.close()")
    kinds = ["decision", "fact", "lesson", "preference"]
    items = [{"text": f"Decision {i}: for {TOPICS[i % len(TOPICS)]} we use option {i % 7} because of constraint "
                      f"{i % 11} (see ticket Q-{1000 + i}).", "kind": kinds[i % 4]} for i in range(n)]
    items.append({"text": "The job queue claims jobs with SELECT ... FOR UPDATE SKIP LOCKED in Postgres; we moved "
                          "off Redis because a crashed worker lost its job.", "kind": "decision"})
    subprocess.run([sys.executable, "-c", code, tenant], input=json.dumps(items), text=True, env=env, check=True)


def export_plugin(dest: Path) -> Path:
    """The plugin as a user installs it: the checkout's files (``git ls-files``), not its .venv and caches."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


STUB_MCP = """import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "floor", "version": "1"}}
    elif msg.get("method") == "tools/list":
        result = {"tools": [{"name": "noop", "description": "does nothing", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""


def floor_plugin(plugin: Path, dest: Path) -> Path:
    """The same plugin with every hook a no-op (``true``) and a stdlib stdio MCP server with one tool: what any
    plugin with these hooks and an MCP server costs Claude Code, whatever the hooks do."""
    shutil.copytree(plugin, dest)
    hooks = json.loads((dest / "hooks" / "hooks.json").read_text())
    for groups in hooks["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = "true"
    (dest / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    (dest / "floor_mcp.py").write_text(STUB_MCP)
    (dest / ".mcp.json").write_text(json.dumps({"mcpServers": {"remem": {
        "command": sys.executable, "args": ["-S", "${CLAUDE_PLUGIN_ROOT}/floor_mcp.py"]}}}))
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--memories", type=int, default=300)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--claude", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from anthropic_server import AnthropicServer, find_claude

    claude = args.claude or find_claude()
    if claude is None:
        print("no claude CLI found (npm install --prefix ~/.cache/remem-ci/claude-code @anthropic-ai/claude-code)")
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-cc-"))
    plugin_dir = export_plugin(tmp / "plugin")
    floor_dir = floor_plugin(plugin_dir, tmp / "floor")
    project = tmp / "project"
    (project / ".git").mkdir(parents=True)
    remem_home = tmp / "remem"
    seed(remem_home, str(project), args.memories, args.embedder)
    rows: dict[str, dict[str, list[float]]] = {"bare": {}, "floor": {}, "remem": {}}
    recalled = 0
    try:
        with AnthropicServer() as api:
            base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / "home"),
                    "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "test",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "REMEM_HOME": str(remem_home),
                    "REMEM_EMBEDDER": args.embedder, "REMEM_PYTHON": sys.executable, "REMEM_SERVICE_IDLE": "300",
                    "LANG": "C.UTF-8"}
            (tmp / "home").mkdir()

            def turn(kind: str, i: int) -> dict[str, float]:
                dbg = tmp / f"debug-{kind}-{i}.txt"
                extra = {"remem": ["--plugin-dir", str(plugin_dir)], "floor": ["--plugin-dir", str(floor_dir)]}.get(kind, [])
                api.reset()
                logged = log_size(remem_home / "logs" / "hooks.log")
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.time()
                proc = subprocess.run([claude, "-p", PROMPT, "--debug-file", str(dbg), *extra], env=base,
                                      cwd=project, capture_output=True, text=True, timeout=120)
                wall = (time.time() - t0) * 1000
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000
                if proc.returncode != 0:
                    raise RuntimeError(f"claude failed: {proc.stderr[-500:]}")
                out = {"wall": wall, "cpu": cpu, **debug_timings(dbg, t0)}
                if "answered" in out:  # the answer streams in: what is left is Stop, MCP shutdown, SessionEnd, exit
                    out["tail"] = wall - out.pop("answered")
                if kind == "remem":
                    time.sleep(0.3)  # a capture the service does after its answer logs a moment later
                    out.update(hook_timings(remem_home / "logs" / "hooks.log", logged))
                    reqs = api.requests()
                    out["recalled"] = float(bool(reqs) and "SKIP LOCKED" in json.dumps(reqs[0]))
                return out

            # the first prompt of the day: no service running yet
            first = turn("remem", -1)
            turn("bare", -1)
            for i in range(args.runs):
                for kind in ("bare", "floor", "remem") if i % 2 == 0 else ("remem", "floor", "bare"):
                    for key, value in turn(kind, i).items():
                        rows[kind].setdefault(key, []).append(value)
            recalled = int(sum(rows["remem"].get("recalled", [])))
    finally:
        subprocess.run([sys.executable, "-m", "remem.cli", "serve", "--stop", "--path", str(remem_home / "store")],
                       env={**os.environ, "REMEM_HOME": str(remem_home)}, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    def cell(kind: str, key: str, q: float) -> str:
        values = rows[kind].get(key, [])
        return f"{pct(values, q):.0f}" if values else "-"

    table = [("one `claude -p` turn (wall)", "wall"), ("until the first API request", "first_request"),
             ("CPU of claude and the hooks it waits for", "cpu"),
             ("from the answer to the process exit", "tail"), ("MCP server connect", "mcp_connect"),
             ("UserPromptSubmit hook (recall)", "UserPromptSubmit"),
             ("Stop: capture stored (after the answer, off the turn's path)", "Stop")]
    if args.json:
        print(json.dumps({kind: {k: {"p50": pct(v, .5), "p95": pct(v, .95)} for k, v in data.items()}
                          for kind, data in rows.items()} | {"first_prompt_of_day": first}))
        return 0
    bare, rem = statistics.median(rows["bare"]["wall"]), statistics.median(rows["remem"]["wall"])
    floor = statistics.median(rows["floor"]["wall"])
    print(f"claude -p, bare vs a no-op plugin (the floor) vs remem: {args.runs} rotating runs each, "
          f"{args.memories} memories, embedder={args.embedder}, cpus={os.cpu_count()}, "
          f"load average={os.getloadavg()[0]:.1f}")
    print("| measure (ms) | bare p50 | bare p95 | floor p50 | floor p95 | remem p50 | remem p95 |")
    print("|---|---|---|---|---|---|---|")
    for label, key in table:
        print(f"| {label} | {cell('bare', key, .5)} | {cell('bare', key, .95)} | {cell('floor', key, .5)} | "
              f"{cell('floor', key, .95)} | {cell('remem', key, .5)} | {cell('remem', key, .95)} |")
    verdict = "injected" if first.get("recalled") else "MISSING"
    print(f"\nadded per turn: {rem - bare:+.0f} ms (x{rem / bare:.2f}); the floor (same hooks as `true`, a stub "
          f"MCP server): {floor - bare:+.0f} ms (x{floor / bare:.2f}); remem over the floor: {rem - floor:+.0f} ms; "
          f"recall injected in {recalled}/{args.runs} turns; first prompt of the day: {first['wall']:.0f} ms, "
          f"recall {verdict}, UserPromptSubmit {first.get('UserPromptSubmit', 0):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
