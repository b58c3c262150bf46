"""A new user: nothing but Claude Code and a system Python 3.10+. The plugin sets up its own venv under
${CLAUDE_PLUGIN_DATA} from the plugin folder in the background, says so once, remembers from the next prompt,
and upgrades that venv when the plugin is updated. Real ``claude`` CLI, fresh HOME, no remem on PATH.

Slow (a real ``pip install`` of remem and its dependencies, from the package index pip is configured with).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from anthropic_server import AnthropicServer, find_claude, request_text, text
from claude_harness import ROOT, ClaudeMachine, export_checkout

CLAUDE = find_claude()
SYSTEM_PATH = "/usr/bin:/bin"


def system_python() -> str | None:
    """A python3 on the system PATH that is 3.10+, can make venvs and does not have remem."""
    exe = shutil.which("python3", path=SYSTEM_PATH)
    if exe is None:
        return None
    probe = subprocess.run([exe, "-c", "import sys, ensurepip, venv, importlib.util as u; "
                            "sys.exit(0 if sys.version_info >= (3, 10) and u.find_spec('remem') is None else 1)"],
                           capture_output=True, timeout=30)
    return exe if probe.returncode == 0 else None


pytestmark = [
    pytest.mark.skipif(CLAUDE is None, reason="the claude CLI is not installed (.ci/run installs it with npm)"),
    pytest.mark.skipif(system_python() is None,
                       reason=f"no python3 3.10+ with venv and without remem on {SYSTEM_PATH}"),
    pytest.mark.timeout(900),
]


def wait_for(check: Any, what: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log.exists() else "(no setup log)"
    raise AssertionError(f"{what} did not happen within {timeout:g}s; setup log:\n{tail}")


def test_a_fresh_machine_sets_itself_up_and_remembers_from_the_next_prompt(tmp_path: Path) -> None:
    with AnthropicServer() as api:
        machine = ClaudeMachine(tmp_path, api, CLAUDE, python=None, path=SYSTEM_PATH)  # type: ignore[arg-type]
        data = machine.home / ".claude" / "plugins" / "data" / "remem-inline"
        venv_python = data / "venv" / "bin" / "python"
        stamp = data / "venv" / "remem-stamp"
        app = machine.project("app")
        try:
            api.reply(text("Hello."))
            first = machine.run("Hello there, what can you do for this project?", app)
            said = first.first_request_text
            assert "remem is setting up" not in said  # the notice is for the person (systemMessage) ...
            shown = first.debug.read_text()
            assert "remem is setting up its Python environment in the background" in shown and str(data / "venv") in shown
            wait_for(stamp.exists, "the venv setup", 600, data / "setup.log")
            assert data.stat().st_mode & 0o777 == 0o700
            for written in ("setup.log", "setup.json", "setup.lock", "venv/remem-stamp"):
                assert (data / written).stat().st_mode & 0o777 == 0o600, written
            log = (data / "setup.log").read_text()
            assert "remem setup done" in log and str(ROOT) not in log.split("\n", 1)[0]
            setup_state = (data / "setup.json").read_text() + stamp.read_text()
            assert str(ROOT) not in setup_state and str(machine.home) not in setup_state  # checksums, no paths
            assert not (ROOT / "build").exists() or (ROOT / "build").stat().st_mtime < first.debug.stat().st_mtime

            api.reply(text("Noted."))
            second = machine.run("Decision: we deploy with blue-green releases, and only on Tuesdays, because "
                                 "the on-call rota is fullest then.", app)
            assert "remem is setting up" not in second.debug.read_text()              # said once
            machine.wait_for_captures(expected=1)
            api.reply(text("Blue-green, on Tuesdays."))
            third = machine.run("How do we deploy our releases, and on which day?", app)
            assert "blue-green" in third.first_request_text.lower()
            assert any(t.startswith("mcp__plugin_remem_remem__") for t in third.tool_names())

            # an updated plugin (new folder, new version): the next SessionStart upgrades the venv in the background
            v2 = tmp_path / "plugin-v2"
            shutil.copytree(ROOT, v2, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info",
                                                                   "build", "tests", "results"))
            manifest = json.loads((v2 / ".claude-plugin" / "plugin.json").read_text())
            (v2 / ".claude-plugin" / "plugin.json").write_text(json.dumps({**manifest, "version": "0.1.1-test"}))
            built_from = stamp.read_text()
            api.reply(text("Hi."))
            machine.run("Hello again, anything new in this project?", app, plugin_dir=v2)
            wait_for(lambda: stamp.read_text() != built_from, "the venv upgrade", 600, data / "setup.log")
            api.reply(text("Blue-green."))
            after = machine.run("Remind me how we deploy our releases?", app, plugin_dir=v2)
            assert "blue-green" in after.first_request_text.lower()                  # memory survived the upgrade
        finally:
            if venv_python.exists():
                machine.stop_service(str(venv_python))


SECRET = "ghp_" + "F1rstHourTokenDoNotStoreAnywhere0123456"


def old_session(machine: ClaudeMachine, project: Path, fact: str) -> None:
    """A Claude Code session from before remem was installed, as Claude Code keeps it in ~/.claude/projects."""
    folder = machine.home / ".claude" / "projects" / str(project).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (role, content) in enumerate((("user", fact), ("assistant", [{"type": "text", "text": "Noted."}]))):
        lines.append(json.dumps({"type": role, "uuid": f"0000000{i}-0000-4000-8000-00000000000{i}", "cwd": str(project),
                                 "sessionId": "old-session", "timestamp": "2026-11-02T10:00:00.000Z",
                                 "message": {"role": role, "content": content}}))
    (folder / "old-session.jsonl").write_text("\n".join(lines) + "\n")


def said_to_model(run: Any) -> str:
    return "\n".join(request_text(r) for r in run.requests)


def test_the_first_hour_installed_through_the_marketplace(tmp_path: Path) -> None:
    """A new user: `claude plugin marketplace add` + `claude plugin install remem@remem` on a clean HOME, no
    REMEM_PYTHON. The first turn, said while remem sets itself up, is kept; /remem:memory works in -p mode
    (list, search, status, import, forget); every script in the plugin's venv runs; no secret reaches the disk."""
    with AnthropicServer() as api:
        machine = ClaudeMachine(tmp_path, api, CLAUDE, python=None, path=SYSTEM_PATH)  # type: ignore[arg-type]
        data = machine.install(export_checkout(tmp_path / "checkout"))
        venv = data / "venv"
        app, billing = machine.project("app"), machine.project("billing")
        try:
            api.reply(text("Noted."))
            first = machine.run(f"We deploy with fly.io from the main branch only. The deploy token is {SECRET}.",
                                app, plugin_dir=None)
            assert "setting up" not in said_to_model(first)  # the notice is the person's (systemMessage)
            assert "remem is setting up" in first.debug.read_text()
            wait_for((venv / "remem-stamp").exists, "the venv setup", 600, data / "setup.log")
            for script, arg in (("remem", "--help"), ("remem-hook", "memory --help"), ("pip", "--version")):
                proc = subprocess.run([str(venv / "bin" / script), *arg.split()], capture_output=True, timeout=120,
                                      env=machine.env, cwd=app)
                assert proc.returncode == 0, (script, proc.stderr[-500:])

            api.reply(text("Hello."))
            hello = machine.run("Hello again.", app, plugin_dir=None)  # the first working hooks take turn 1 up
            assert "remem is ready" in hello.debug.read_text() and "remem is ready" not in said_to_model(hello)
            deadline = time.monotonic() + 120
            while not any("fly.io" in r.text for r in machine.records(app)):
                assert time.monotonic() < deadline, machine.hook_log()[-5:]
                time.sleep(1)
            api.reply(text("fly.io, from main."))
            asked = machine.run("How do we deploy, and from which branch?", app, plugin_dir=None)
            assert "fly.io" in said_to_model(asked)

            api.reply(text("Listed."))
            listed = said_to_model(machine.run("/remem:memory list", app, plugin_dir=None))
            assert "fly.io" in listed and "(id: " in listed
            api.reply(text("Found."))
            assert "fly.io" in said_to_model(machine.run("/remem:memory search deploy branch", app, plugin_dir=None))
            api.reply(text("Shown."))  # the same command typed into the interactive CLI
            typed = "\n".join(request_text(r) for r in machine.interactive("/remem:memory list", app))
            assert "remem's answer to `/remem:memory list`" in typed and "fly.io" in typed
            api.reply(text("Saved."))
            saved = said_to_model(machine.run("/remem:memory save We don't deploy on Fridays --kind decision", app,
                                              plugin_dir=None))
            assert "Saved memory" in saved
            assert any(r.text == "We don't deploy on Fridays" and r.kind == "decision" for r in machine.records(app))
            api.reply(text("Status."))
            status = said_to_model(machine.run("/remem:memory status", app, plugin_dir=None))
            assert f"plugin data: {data}" in status and "setup: ready" in status and f"memory scope: project {app}" in status

            old_session(machine, billing, "The billing service runs on Hetzner in Falkenstein.")
            api.reply(text("Imported."))
            imported = said_to_model(machine.run("/remem:memory import", app, plugin_dir=None))
            assert re.search(r"imported \d+ of \d+ sessions", imported), imported[imported.find("remem's answer"):][:800]
            assert any("Falkenstein" in r.text for r in machine.records(billing))

            target = next(r for r in machine.records(app) if "fly.io" in r.text)
            api.reply(text("Forgotten."))
            forgot = said_to_model(machine.run(f"/remem:memory forget {target.id}", app, plugin_dir=None))
            assert f"Forgot memory {target.id}" in forgot
            assert target.id not in {r.id for r in machine.records(app)}

            for where in (machine.remem_home, data):
                assert machine.files_containing(SECRET.encode(), where) == [], where
        finally:
            if (venv / "bin" / "python").exists():
                machine.stop_service(str(venv / "bin" / "python"))
