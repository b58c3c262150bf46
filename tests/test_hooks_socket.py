"""The thin hook client (hooks/fast.py) reaches the service wherever the service listens: for every store path
length and runtime-folder combination, and from every install path (pipx / uv tool's remem-hook on PATH too).
Each case starts a real service with its environment and connects the way a hook does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.bench.bench_hook_paths import pipx_bin
from remem.hooks import fast
from test_hooks import LAUNCHER, Plugin

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="Unix sockets")
MAX = fast.MAX_SOCKET_PATH


def start(folder: Path, env: dict[str, str]) -> subprocess.Popen:
    """A real service for ``folder`` started with ``env`` (as a hook's ``Memory()`` would)."""
    full = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "REMEM_PATH", "REMEM_HOME")}
    full.update(env, REMEM_EMBEDDER="none", REMEM_SERVICE_IDLE="60")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    proc = subprocess.Popen([sys.executable, "-m", "remem.core.service", "--path", str(folder)], env=full,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    state = folder / "service.json"
    deadline = time.monotonic() + 60
    while True:
        try:
            data = json.loads(state.read_text())
            if data.get("pid") == proc.pid:
                return proc
        except (OSError, ValueError):
            pass
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.05)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def long_folder(base: Path) -> Path:
    return base / ("s" * max(1, MAX + 10 - len(str(base))))


def home_of(tmp: Path, long: bool) -> Path:
    """A home whose ``~/.remem-run/<hash>.sock`` fits in AF_UNIX (or, ``long``, does not)."""
    home = tmp / ("h" * (MAX - len(str(tmp)) - 20) if long else "h")
    home.mkdir(exist_ok=True)
    return home


# (store path, XDG_RUNTIME_DIR for the service, XDG_RUNTIME_DIR for the hook, home too long for ~/.remem-run)
CASES = {
    "short path": ("short", None, None, False),
    "short path, runtime dir set": ("short", "run", "run", False),
    "long path, runtime dir": ("long", "run", "run", False),
    "long path, no runtime dir: ~/.remem-run": ("long", None, None, False),
    "long path, no runtime dir, long home: /tmp/remem-uid": ("long", None, None, True),
    "long path, hook with a runtime dir, service without": ("long", None, "run", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_thin_client_reaches_the_service_for_every_path_and_runtime_folder(tmp_path: Path, case: str) -> None:
    kind, service_run, hook_run, long_home = CASES[case]
    home = home_of(tmp_path, long_home)
    folder = tmp_path / "s" if kind == "short" else long_folder(tmp_path)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    service_env = {"HOME": str(home), "REMEM_PATH": str(folder)}
    hook_env = dict(service_env)
    if service_run:
        service_env["XDG_RUNTIME_DIR"] = str(runtime)
    if hook_run:
        hook_env["XDG_RUNTIME_DIR"] = str(runtime)
    service = start(folder, service_env)
    try:
        sock = fast.connect(hook_env)
        try:
            assert fast._peer_uid(sock) == os.getuid()
            answer = fast.ask(sock, {"v": 1, "event": "UserPromptSubmit", "payload": "", "env": hook_env,
                                     "cwd": str(tmp_path), "age": 0.0, "background": False}, 5.0)
            assert answer.get("stdout") == "" and "empty stdin" in answer.get("stderr", "")  # the service's hook
        finally:
            sock.close()
        listening = fast.socket_path(hook_env)[0]
        if kind == "short":
            assert listening == str(folder / "service.sock")
        elif long_home and not hook_run:
            assert listening.startswith(f"/tmp/remem-{os.getuid()}/")
        elif hook_run:
            assert listening.startswith(str(runtime) + "/")
        else:
            assert listening.startswith(str(home / ".remem-run") + "/")
    finally:
        stop(service)


def test_a_pipx_install_answers_prompts_through_the_service(tmp_path: Path, store_factory) -> None:  # type: ignore[no-untyped-def]
    """remem installed with pipx / uv tool (``remem-hook`` on PATH, no REMEM_PYTHON, no plugin venv): the thin
    client runs with the tool venv's python from remem-hook's ``#!`` line and the warm service answers."""
    plugin = Plugin(tmp_path, store_factory("none"))
    tool_bin = pipx_bin(tmp_path / "tool-bin")
    env = {k: v for k, v in plugin.env.items() if k != "REMEM_PYTHON"}
    env.update(PATH=f"{tool_bin}:/usr/bin:/bin", REMEM_SERVICE="auto", REMEM_HOOK_DETACH="1")
    plugin.env = env
    proj = plugin.project("app")
    service = start(plugin.home / "store", {"REMEM_HOME": str(plugin.home), "HOME": env.get("HOME", str(tmp_path))})
    try:
        for i in range(2):
            proc = plugin.run("UserPromptSubmit", {"session_id": f"p{i}", "cwd": str(proj),
                                                   "prompt": "which database does the queue use?"}, cwd=proj)
            assert proc.returncode == 0, proc.stderr
        deadline = time.monotonic() + 30
        while len(done := [ln for ln in plugin.log_lines() if ln.get("event") == "userpromptsubmit"]) < 2:
            assert time.monotonic() < deadline, plugin.log_lines()
            time.sleep(0.05)
        assert {ln["pid"] for ln in done} == {service.pid}  # both answered inside the service
    finally:
        stop(service)
    assert LAUNCHER.exists()
