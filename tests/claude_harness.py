"""One user's machine for the real ``claude`` CLI: a temporary HOME, a REMEM_HOME, projects, the fake API.

    env = ClaudeMachine(tmp_path, api, claude_bin)
    run = env.run("prompt", env.project("a"))          # claude -p ... --plugin-dir <checkout> --debug-file ...
    run.requests[0]                                     # what the model received
    env.wait_for_captures()                             # the detached Stop/SessionEnd captures are stored
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from anthropic_server import AnthropicServer, request_text
from written import data_of

ROOT = Path(__file__).resolve().parents[1]
MCP_PREFIX = "mcp__plugin_remem_remem__"
_MCP_CONNECT = re.compile(r'MCP server "plugin:remem:remem": Successfully connected .* in (\d+)ms')
_CONTEXT = re.compile(r"Hook UserPromptSubmit .*remem-hook.* provided additionalContext \((\d+) chars\)")
_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) ")


@dataclass
class Run:
    proc: subprocess.CompletedProcess
    requests: list[dict[str, Any]]
    debug: Path
    wall_ms: float

    @property
    def first_request_text(self) -> str:
        return request_text(self.requests[0]) if self.requests else ""

    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in (self.requests[0].get("tools") or [])] if self.requests else []

    def timings(self) -> dict[str, Any]:
        """What --debug-file says: ms from the first log line to the first API request, the MCP server's
        connect time, the recall context that arrived, and ms from the last reply to SessionEnd's completion."""
        lines = self.debug.read_text("utf-8", "replace").splitlines() if self.debug.exists() else []
        stamps = [(_stamp(ln), ln) for ln in lines]
        stamps = [(t, ln) for t, ln in stamps if t is not None]
        out: dict[str, Any] = {"wall_ms": round(self.wall_ms)}
        if not stamps:
            return out
        start = stamps[0][0]
        requests = [t for t, ln in stamps if "[API REQUEST] /v1/messages" in ln]
        if requests:
            out["first_request_ms"] = round((requests[0] - start) * 1000)
        for t, ln in stamps:
            m = _MCP_CONNECT.search(ln)
            if m and "mcp_connect_ms" not in out:
                out["mcp_connect_ms"] = int(m.group(1))
            m = _CONTEXT.search(ln)
            if m:
                out["recall_context_chars"] = int(m.group(1))
            if "SessionEnd" in ln and "completed with status" in ln and requests:
                out["session_end_after_reply_ms"] = round((t - requests[-1]) * 1000)
        return out


def export_checkout(dest: Path) -> Path:
    """The checkout as a user's fresh ``git clone`` has it: tracked and new files, not a developer's .venv,
    build/ or caches (Claude Code copies a local marketplace folder whole)."""
    from remem.bench.bench_claude_code import export_plugin

    dest.mkdir(parents=True, exist_ok=True)
    return export_plugin(dest)


def _stamp(line: str) -> float | None:
    m = _TS.match(line)
    if not m:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


@dataclass
class ClaudeMachine:
    tmp: Path
    api: AnthropicServer
    claude: str
    python: str | None = sys.executable     # REMEM_PYTHON for the launcher; None: let it find (or set up) remem
    path: str = "/usr/bin:/bin"
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.tmp / "home"
        self.remem_home = self.tmp / "remem-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.runs = 0
        self.owner = os.environ.get("REMEM_TEST_ID", "")  # conftest: the processes it starts are this owner's

    @property
    def env(self) -> dict[str, str]:
        env = {"PATH": self.path, "HOME": str(self.home), "LANG": "C.UTF-8",
               "ANTHROPIC_BASE_URL": self.api.base_url, "ANTHROPIC_API_KEY": "test",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "REMEM_HOME": str(self.remem_home),
               "REMEM_EMBEDDER": "none", "REMEM_SERVICE_IDLE": "120"}
        env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})  # the package index pip uses here
        if self.python:
            env["REMEM_PYTHON"] = self.python
        if self.owner:
            env["REMEM_TEST_ID"] = self.owner
        env.update(self.extra_env)
        return env

    def project(self, name: str) -> Path:
        path = self.tmp / "projects" / name
        (path / ".git").mkdir(parents=True, exist_ok=True)
        return path.resolve()

    def run(self, prompt: str, project: Path, *, allowed: Sequence[str] = (), builtin: Sequence[str] = (),
            extra: Sequence[str] = (), plugin_dir: Path | None = ROOT, timeout: float = 180) -> Run:
        """``allowed``: remem's MCP tools the model may call; ``builtin``: Claude Code's own (``Glob``, ...);
        ``extra``: more CLI arguments (``--continue``, ...); ``plugin_dir`` None: the plugins installed in this
        HOME (:meth:`install`)."""
        self.runs += 1
        debug = self.tmp / f"debug-{self.runs}.txt"
        before = len(self.api.requests())
        args = [self.claude, "-p", prompt, "--debug-file", str(debug)]
        if plugin_dir is not None:
            args += ["--plugin-dir", str(plugin_dir)]
        if allowed or builtin:
            args += ["--allowedTools", " ".join([MCP_PREFIX + a for a in allowed] + list(builtin))]
        args += list(extra)
        t0 = time.perf_counter()
        proc = subprocess.run(args, env=self.env, cwd=project, capture_output=True, text=True, timeout=timeout)
        wall = (time.perf_counter() - t0) * 1000
        assert proc.returncode == 0, f"claude failed ({proc.returncode}): {proc.stderr[-2000:]}"
        return Run(proc, self.api.requests()[before:], debug, wall)

    def interactive(self, typed: str, project: Path, timeout: float = 90) -> list[dict[str, Any]]:
        """Type ``typed`` into an interactive ``claude`` session (a pseudo-terminal: the TUI a person uses) and
        return the API requests it made for it. The onboarding, the folder trust and the API key prompts are
        answered in ~/.claude.json first, as a person would have answered them once."""
        import pty
        import select
        import signal

        config_path = self.home / ".claude.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        config.update(hasCompletedOnboarding=True, theme="dark",
                      customApiKeyResponses={"approved": [self.env["ANTHROPIC_API_KEY"][-20:]], "rejected": []})
        config.setdefault("projects", {}).setdefault(str(project), {})["hasTrustDialogAccepted"] = True
        config_path.write_text(json.dumps(config))
        before = len(self.api.requests())
        pid, fd = pty.fork()
        if pid == 0:  # the child: claude on the terminal
            os.chdir(project)
            os.execve(self.claude, [self.claude], {**self.env, "TERM": "xterm-256color"})
        screen = b""

        def read_until(done: Any, seconds: float) -> bool:
            nonlocal screen
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if done():
                    return True
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    try:
                        screen += os.read(fd, 65536)
                    except OSError:
                        return done()
            return done()

        try:
            assert read_until(lambda: b"shortcuts" in screen, timeout), screen[-2000:]  # the prompt is ready
            for ch in typed:
                os.write(fd, ch.encode())
                time.sleep(0.02)
            read_until(lambda: False, 1.0)
            os.write(fd, b"\r")
            assert read_until(lambda: len(self.api.requests()) > before, timeout), screen[-2000:]
            read_until(lambda: False, 2.0)  # the Stop hook
            return self.api.requests()[before:]
        finally:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
                read_until(lambda: False, 0.2)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (OSError, ChildProcessError):
                pass
            os.close(fd)

    def install(self, checkout: Path) -> Path:
        """What docs/claude-code.md tells a user to run: ``claude plugin marketplace add <checkout>`` and
        ``claude plugin install remem@remem``, in this HOME. Returns the plugin's data folder (Claude Code's)."""
        for args in (["plugin", "marketplace", "add", str(checkout)], ["plugin", "install", "remem@remem"]):
            proc = subprocess.run([self.claude, *args], env=self.env, cwd=self.tmp, capture_output=True, text=True,
                                  timeout=180)
            assert proc.returncode == 0, f"claude {' '.join(args)}: {proc.stdout}{proc.stderr}"
        return self.home / ".claude" / "plugins" / "data" / "remem-remem"

    # ------------------------------------------------------------------ what remem did in the background
    def hook_log(self) -> list[dict[str, Any]]:
        path = self.remem_home / "logs" / "hooks.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def wait_for_captures(self, timeout: float = 90, expected: int | None = None) -> None:
        """Until every run's turn was captured (by its Stop, or its SessionEnd; ``expected`` of them, default one
        per run), no capture hook of
        this machine still runs (a SessionEnd with nothing new writes no log line), everything spooled was
        handed to remem and no drainer runs (captures run detached, after claude -p has exited)."""
        spool = self.remem_home / "hooks" / "spool"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            captured = sum(1 for r in self.hook_log() if r.get("event") in ("stop", "sessionend"))
            if captured >= (self.runs if expected is None else expected) and not self._capturing() \
                    and not any(spool.glob("*.json")) and not self._draining():
                return
            time.sleep(0.2)
        raise AssertionError(f"captures not stored within {timeout:g}s; log: {self.hook_log()[-5:]}")

    def _capturing(self) -> bool:
        """Whether a Stop/PreCompact/SessionEnd hook process of this machine (its REMEM_HOME) is still running."""
        home = f"REMEM_HOME={self.remem_home}".encode()
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
                if not {b"Stop", b"PreCompact", b"SessionEnd"} & set(cmd):
                    continue
                if home in (proc / "environ").read_bytes().split(b"\0"):
                    return True
            except OSError:
                continue
        return False

    def _draining(self) -> bool:
        lock = self.remem_home / "hooks" / "drain.lock"
        if not lock.exists():
            return False
        with open(lock, "a") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            return False

    def records(self, project: Path) -> list[Any]:
        """Every record of ``project``'s memory (the service is stopped first: the store is one process's)."""
        from remem import Memory, Scope
        from remem.core.types import StoreLockedError

        deadline = time.monotonic() + 60
        while True:
            self.stop_service()
            try:
                mem = Memory(self.remem_home / "store", service="off", embedder="none")
                break
            except StoreLockedError:  # a loaded machine: the service still finishing in-flight captures
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        try:
            return mem.list(scope=Scope(tenant=str(project)), limit=1000)
        finally:
            mem.close()

    def transcript_ids(self) -> set[str]:
        """The uuids of every user and assistant entry in this machine's Claude Code transcripts."""
        ids = set()
        for path in (self.home / ".claude" / "projects").rglob("*.jsonl"):
            for line in path.read_text("utf-8", "replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("type") in ("user", "assistant") and entry.get("uuid"):
                    ids.add(entry["uuid"])
        return ids

    def stop_service(self, python: str | None = None) -> None:
        # this machine's HOME and no XDG_RUNTIME_DIR, as the service had: a store path too long for its own
        # socket puts the socket under ~/.remem-run, and the stop must look where the service listens
        env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        env.update(REMEM_HOME=str(self.remem_home), HOME=str(self.home))
        subprocess.run([python or sys.executable, "-m", "remem.cli", "serve", "--stop", "--path",
                        str(self.remem_home / "store")], env=env, capture_output=True, timeout=60)

    def files_containing(self, needle: bytes, under: Path | None = None) -> list[Path]:
        """Every file under ``under`` (default REMEM_HOME) whose bytes contain ``needle``."""
        hits = []
        for folder, _, names in os.walk(under or self.remem_home):
            for name in names:
                path = Path(folder) / name
                try:
                    if needle in data_of(path):  # the store's sparse files: their data, not gigabytes of holes
                        hits.append(path)
                except OSError:
                    continue
        return hits
