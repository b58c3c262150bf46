"""The stdio MCP server's fast start (mcp_stdio.py), through the official MCP client: the handshake it answers
from data/mcp_manifest.json is what the SDK server would answer, the first tool call hands the session to the
SDK server, and without remem (being set up, or switched off) the plugin's server still connects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from remem.core.service.client import stop_service  # noqa: E402
from remem.mcp_stdio import MANIFEST, SETUP_MESSAGE, record_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "remem-hook"
TOOLS = {"memory_search", "memory_save", "memory_get", "memory_update", "memory_supersede", "memory_forget",
         "memory_recent", "memory_stats"}


def test_the_recorded_handshake_is_what_the_sdk_server_answers(tmp_path: Path) -> None:
    fresh = record_manifest(tmp_path / "manifest.json")
    committed = json.loads(Path(MANIFEST).read_text())
    assert fresh == committed, "a tool changed: re-record with `python -m remem.mcp_stdio --record`"


async def test_the_plugin_server_answers_at_once_and_hands_tool_calls_to_the_sdk(
        tmp_path: Path, store_factory: Callable[..., Path]) -> None:
    home = tmp_path / "remem-home"
    home.mkdir()
    shutil.move(str(store_factory("none")), home / "store")
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "REMEM_HOME": str(home), "REMEM_EMBEDDER": "none", "REMEM_SERVICE": "auto",
           "REMEM_SERVICE_IDLE": "60", "REMEM_PYTHON": sys.executable, "CLAUDE_PROJECT_DIR": str(project)}
    params = StdioServerParameters(command=str(LAUNCHER), args=["mcp"], env=env, cwd=str(project))
    try:
        async with Client(params) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            assert (await c.list_prompts()).prompts == []
            saved = await c.call_tool("memory_save", {"text": "The nightly export runs at 02:00 UTC", "kind": "fact"})
            assert not saved.is_error and "Saved memory" in saved.content[0].text
            found = await c.call_tool("memory_search", {"query": "when does the nightly export run"})
            assert "02:00 UTC" in found.content[0].text
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS   # now answered by the SDK server
    finally:
        stop_service(home / "store", wait=False)


def bare_python() -> str | None:
    exe = shutil.which("python3", path="/usr/bin:/bin")
    if exe is None:
        return None
    ok = subprocess.run([exe, "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('remem') is not None)"],
                        capture_output=True, timeout=30).returncode == 0
    return exe if ok else None


@pytest.mark.skipif(bare_python() is None, reason="no python3 without remem on /usr/bin:/bin")
async def test_without_remem_the_plugin_server_still_connects(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    async with Client(StdioServerParameters(command=str(LAUNCHER), args=["mcp"], env=env)) as c:
        assert {t.name for t in (await c.list_tools()).tools} == TOOLS
        r = await c.call_tool("memory_search", {"query": "anything"})
        assert r.is_error and r.content[0].text == SETUP_MESSAGE
    async with Client(StdioServerParameters(command=str(LAUNCHER), args=["mcp"],
                                            env={**env, "REMEM_HOOKS": "0"})) as c:
        assert (await c.list_tools()).tools == []
