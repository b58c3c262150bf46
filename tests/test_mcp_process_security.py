"""No secret and no memory text on a command line of a process remem starts (any local account reads
``/proc/*/cmdline``): the distiller's ``claude -p`` gets the conversation on stdin, the local service only its
folder and settings, and the CLI warns when a user puts a key in its own arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from remem.core.distill.claude_code import ClaudeCodeDistiller
from remem.core.distill.conversation import Turn

FAKE_CLAUDE = r'''#!{python}
import json, sys
from pathlib import Path
from typing import Callable
Path({out!r}).write_text(json.dumps({{"argv": sys.argv[1:], "stdin": sys.stdin.read()}}))
print(json.dumps({{"type": "result", "is_error": False, "result": "", "structured_output": {{"memories": [],
      "summary": "", "title": ""}}, "usage": {{"input_tokens": 1, "output_tokens": 1}}}}))
'''


def test_the_claude_distiller_sends_the_conversation_on_stdin_not_in_its_arguments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    out = tmp_path / "call.json"
    fake = tmp_path / "claude"
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable, out=str(out)))
    fake.chmod(0o700)
    said = "The staging database pg-stage-7 belongs to Lena; the deploy key lives in the blue vault"
    distiller = ClaudeCodeDistiller(executable=str(fake))
    distiller.extract([Turn(role="user", text=said), Turn(role="assistant", text="Noted, Lena owns pg-stage-7.")])
    call = json.loads(out.read_text())
    assert "pg-stage-7" in call["stdin"], "the conversation reaches claude -p"
    argv = "\n".join(call["argv"])
    assert "pg-stage-7" not in argv and "Lena" not in argv and "blue vault" not in argv


def test_the_service_command_line_holds_no_key_from_the_environment(store_factory: Callable[..., Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.core.service.client import start_service, stop_service

    keys = {"OPENAI_API_KEY": "sk-proj-" + "k7" * 20, "REMEM_API_KEY": "qdrant-key-0123456789abcdef",
            "REMEM_MCP_TOKENS": "tok-0123456789abcdefghij"}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    path = store_factory("none")
    pid = int(start_service(path, embedder="none", idle_timeout=60)["pid"])
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        environ = Path(f"/proc/{pid}/environ")
        assert "remem.core.service" in cmdline
        assert not [v for v in keys.values() if any(v in arg for arg in cmdline)]
        assert environ.stat().st_mode & 0o077 == 0, "its environment (the keys) is readable by its owner only"
    finally:
        stop_service(path, wait=False)


def test_the_cli_warns_that_api_key_is_visible_to_other_accounts(tmp_path: Path) -> None:
    env = {**os.environ, "REMEM_HOME": str(tmp_path), "REMEM_SERVICE": "off"}
    proc = subprocess.run([sys.executable, "-m", "remem.cli", "stats", "--help"], env=env, capture_output=True,
                          text=True)
    assert "REMEM_API_KEY" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "remem.cli", "stats", "--path", str(tmp_path / "s"),
                           "--embedder", "none", "--api-key", "not-used-0123456789"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert "visible to other local accounts" in proc.stderr and "set REMEM_API_KEY" in proc.stderr
