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
from typing import Any, Callable

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from remem.core.service.client import stop_service  # noqa: E402
from remem.mcp_stdio import MANIFEST, OFF_MESSAGE, SETUP_MESSAGE, record_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "remem-hook"
TOOLS = {"memory_search", "memory_save", "memory_get", "memory_update", "memory_supersede", "memory_forget",
         "memory_recent", "memory_stats", "memory_answer", "memory_about", "memory_entities"}


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


def _exchange(args: list[str], lines: list[Any], env: dict[str, str], cwd: Path) -> tuple[int, list[dict[str, Any]]]:
    """Send raw lines (a client's bugs, which the official client cannot produce) and collect the replies."""
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    proc = subprocess.run(args, input=text, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def test_malformed_requests_get_json_rpc_errors_and_the_server_stays_up(tmp_path: Path) -> None:
    """A client bug (params that are not an object, a protocolVersion that is not a string, an id that is a
    list) gets a JSON-RPC error; the server keeps answering, so the session is not lost."""
    env = {"PATH": "/usr/bin:/bin", "REMEM_HOME": str(tmp_path / "home"), "REMEM_EMBEDDER": "none"}
    rc, replies = _exchange([sys.executable, "-m", "remem.cli", "mcp", "--tenant", "t"], [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": [1]},
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {**INIT, "protocolVersion": ["2025-06-18"]}},
        {"jsonrpc": "2.0", "id": [3], "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": [1]},
        {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": "x"},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
    ], env, tmp_path)
    assert rc == 0
    by_id = {json.dumps(r["id"]): r for r in replies}
    for mid in ("1", "2", "5", "6"):
        assert by_id[mid]["error"]["code"] == -32602, by_id[mid]
    assert by_id["null"]["error"]["code"] == -32600
    assert by_id["4"]["result"]["protocolVersion"] == "2025-06-18"
    assert {t["name"] for t in by_id["7"]["result"]["tools"]} == TOOLS


def test_the_plugin_server_without_remem_answers_garbage_with_errors(tmp_path: Path) -> None:
    """Switched off (or setting up), the plugin's server has nothing to hand a message to: a line that is not
    JSON-RPC gets an error, not a crash, and the next request is answered."""
    rc, replies = _exchange([sys.executable, "-S", str(ROOT / "mcp_stdio.py"), "--off"], [
        "not json", "[1, 2]", "[" * 100_000 + "]" * 100_000,
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_search", "arguments": {}}},
    ], {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, tmp_path)
    assert rc == 0
    assert [r["error"]["code"] for r in replies[:3]] == [-32700, -32600, -32700]
    assert replies[3]["id"] == 1 and "result" in replies[3]
    assert replies[4]["result"]["isError"] and replies[4]["result"]["content"][0]["text"] == OFF_MESSAGE


def test_a_server_that_cannot_start_answers_tool_calls_with_why(tmp_path: Path) -> None:
    """When the SDK server cannot be built (a broken install), the front stays: the tool call gets the reason
    as its result and later requests are answered, instead of the client losing the server."""
    code = ("import sys; from remem.mcp_stdio import Front, load_manifest\n"
            "def build(): raise ImportError('No module named mcp')\n"
            "sys.exit(Front(load_manifest(), build).serve())")
    rc, replies = _exchange([sys.executable, "-c", code], [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_search", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ], {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, tmp_path)
    assert rc == 0
    assert replies[1]["id"] == 2 and replies[1]["result"]["isError"]
    assert "No module named mcp" in replies[1]["result"]["content"][0]["text"]
    assert replies[2] == {"jsonrpc": "2.0", "id": 3, "result": {}}
