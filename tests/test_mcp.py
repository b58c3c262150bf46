"""The MCP server: tools through the SDK's own clients (in-process, real stdio subprocess, Streamable HTTP)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

pytest.importorskip("mcp")

import httpx  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from remem.core.recall.fencing import fenced_lines
from remem import Memory, Scope  # noqa: E402
from remem.core.service.client import start_service, stop_service  # noqa: E402
from remem.core.types import RememError  # noqa: E402
from remem.mcp_server import Limits, Token, build_server, http_app, install_config, parse_tokens  # noqa: E402

TOOLS = {"memory_search", "memory_save", "memory_get", "memory_update", "memory_supersede", "memory_forget",
         "memory_recent", "memory_stats", "memory_answer", "memory_about", "memory_entities"}


def _saved_id(text: str) -> str:
    return text.split("memory ", 1)[1].split(":", 1)[0]


async def test_tools_round_trip_in_process_and_stay_in_the_configured_scope(mem: Memory) -> None:
    acme = build_server(mem, scope=Scope(tenant="acme", user="alice"))
    other = build_server(mem, scope=Scope(tenant="globex"))
    async with Client(acme) as c, Client(other) as o:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == TOOLS
        assert all(len(t.description or "") > 40 for t in tools.values())
        assert "scope" not in json.dumps([t.input_schema for t in tools.values()])  # the model never picks scope
        r = await c.call_tool("memory_save", {"text": "Deploys go through ArgoCD", "kind": "decision",
                                              "tags": ["deploy"], "importance": 8})
        assert not r.is_error
        rid = _saved_id(r.content[0].text)
        r = await c.call_tool("memory_search", {"query": "how do we deploy", "kind": "decision"})
        assert rid in r.content[0].text and "ArgoCD" in r.content[0].text
        got = json.loads((await c.call_tool("memory_get", {"memory_id": rid})).content[0].text)
        assert got["scope"] == {"tenant": "acme", "user": "alice", "agent": None, "session": None}
        r = await c.call_tool("memory_update", {"memory_id": rid, "tags": ["deploy", "ci"]})
        assert not r.is_error and mem.get(rid, scope=Scope(tenant="acme", user="alice")).tags == ("deploy", "ci")
        r = await c.call_tool("memory_supersede", {"memory_id": rid, "new_text": "Deploys go through Flux now"})
        new_id = r.content[0].text.split("superseded by ", 1)[1].split(":", 1)[0]
        assert mem.get(rid, scope=Scope(tenant="acme", user="alice")).superseded_by == new_id
        recent = (await c.call_tool("memory_recent", {})).content[0].text
        assert "Flux" in recent and "ArgoCD" not in recent  # current memories only
        assert json.loads((await c.call_tool("memory_stats", {})).content[0].text)["count"] == 2
        # another tenant's server neither finds nor deletes acme's memories, even by id
        assert "No matching memories" in (await o.call_tool("memory_search", {"query": "deploy"})).content[0].text
        r = await o.call_tool("memory_forget", {"memory_id": new_id})  # answered like memory_get
        assert r.is_error and "no memory with id" in r.content[0].text
        assert mem.get(new_id, scope=Scope(tenant="acme", user="alice"))
        r = await o.call_tool("memory_get", {"memory_id": new_id})
        assert r.is_error and "did not run" in r.content[0].text
        r = await c.call_tool("memory_forget", {"memory_id": new_id})
        assert r.content[0].text == f"Forgot memory {new_id}."
        r = await c.call_tool("memory_save", {"text": "   "})
        assert r.is_error and "memory save did not run" in r.content[0].text



async def test_id_tools_take_memory_id_like_the_adapters_and_still_accept_id(mem: Memory) -> None:
    """memory_get/update/supersede/forget name their id ``memory_id``, as the adapters' memory_forget does (the
    model sees one name everywhere); a client written against the old ``id`` still works."""
    sc = Scope(tenant="acme")
    async with Client(build_server(mem, scope=sc)) as c:
        tools = {t.name: t.input_schema for t in (await c.list_tools()).tools}
        for name in ("memory_get", "memory_update", "memory_supersede", "memory_forget"):
            assert "memory_id" in tools[name]["properties"] and "id" not in tools[name]["properties"], name
            assert "memory_id" in tools[name]["required"], name
        rid = mem.add("The CI runs on Buildkite", scope=sc).id
        for key in ("memory_id", "id"):  # the new name, then what old clients send
            r = await c.call_tool("memory_get", {key: rid})
            assert not r.is_error and json.loads(r.content[0].text)["id"] == rid, r.content[0].text
            r = await c.call_tool("memory_update", {key: rid, "tags": [key]})
            assert not r.is_error and mem.get(rid, scope=sc).tags == (key,), r.content[0].text
        r = await c.call_tool("memory_supersede", {"id": rid, "new_text": "The CI runs on GitHub Actions"})
        assert not r.is_error and mem.get(rid, scope=sc).superseded_by, r.content[0].text
        new_id = r.content[0].text.split("superseded by ", 1)[1].split(":", 1)[0]
        other = mem.add("The staging cluster is in Frankfurt", scope=sc).id
        assert (await c.call_tool("memory_forget", {"memory_id": new_id})).content[0].text == \
            f"Forgot memory {new_id}."
        assert (await c.call_tool("memory_forget", {"id": other})).content[0].text == f"Forgot memory {other}."
        r = await c.call_tool("memory_forget", {})
        assert r.is_error and "memory_id" in r.content[0].text


async def test_importance_may_come_as_a_whole_float_but_is_never_rounded(mem: Memory) -> None:
    """A model's JSON may send 7 as 7.0: saved as 7; 7.5 is an error the model sees, not a silent 8."""
    sc = Scope(tenant="acme")
    async with Client(build_server(mem, scope=sc)) as c:
        r = await c.call_tool("memory_save", {"text": "Releases are tagged on Thursdays", "importance": 7.0})
        assert not r.is_error and mem.get(_saved_id(r.content[0].text), scope=sc).importance == 7
        rid = _saved_id(r.content[0].text)
        for tool, args in (("memory_save", {"text": "Hotfixes skip the release train"}),
                           ("memory_update", {"memory_id": rid})):
            r = await c.call_tool(tool, {**args, "importance": 7.5})
            assert r.is_error and "importance" in r.content[0].text, r.content[0].text
        assert (await c.call_tool("memory_update", {"memory_id": rid, "importance": 9.0})).is_error is False
        assert [rec.importance for rec in mem.list(scope=sc)] == [9]

async def test_stdio_server_shares_the_store_with_other_processes(store_factory: Callable[..., Path],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = store_factory("none")
    env = {"REMEM_SERVICE": "auto", "REMEM_SERVICE_IDLE": "60", "PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "remem.cli", "mcp", "--path", str(path), "--embedder", "none", "--tenant", "proj"])
    try:
        async with Client(params) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            r = await c.call_tool("memory_save", {"text": "The staging database is pg-stage-2"})
            assert not r.is_error, r.content[0].text
            rid = _saved_id(r.content[0].text)
            # meanwhile this process reads and writes the same store through the same service
            monkeypatch.setenv("REMEM_SERVICE", "auto")
            other = Memory(path=path, embedder="none", service="require")
            assert other.get(rid, scope=Scope(tenant="proj")).scope == Scope(tenant="proj")
            other.add("The production database is pg-prod-1", scope=Scope(tenant="proj"))
            r = await c.call_tool("memory_search", {"query": "production database"})
            assert "pg-prod-1" in r.content[0].text
    finally:
        stop_service(path, wait=False)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")
async def test_a_hung_service_costs_a_tool_call_the_turn_timeout_and_the_server_recovers(
        store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The store is opened on the first tool call, through its service; a stopped service must cost that call
    the turn timeout (not the service client's 30 s, with the event loop blocked), say what is wrong, and leave
    the server working once the service answers again."""
    path = store_factory("none")
    monkeypatch.setenv("REMEM_SERVICE", "auto")
    monkeypatch.setenv("REMEM_TURN_TIMEOUT", "1")
    pid = int(start_service(path, embedder="none", idle_timeout=120)["pid"])
    server = build_server(scope=Scope(tenant="proj"), path=str(path), embedder="none")
    os.kill(pid, signal.SIGSTOP)
    try:
        async with Client(server) as c:
            for tool, args in (("memory_search", {"query": "deploy"}), ("memory_stats", {})):
                started = time.monotonic()
                r = await c.call_tool(tool, args)
                assert time.monotonic() - started < 15, tool  # generous: the turn timeout is 1 s here
                assert r.is_error and "local service is not answering" in r.content[0].text, r.content[0].text
            os.kill(pid, signal.SIGCONT)
            r = await c.call_tool("memory_save", {"text": "The staging database is pg-stage-2"})
            assert not r.is_error, r.content[0].text
            assert "pg-stage-2" in (await c.call_tool("memory_search", {"query": "staging database"})).content[0].text
    finally:
        os.kill(pid, signal.SIGCONT)
        stop_service(path, wait=False)


# ------------------------------------------------------------------------------------------ HTTP
TOKEN_ANY = "tok-any-0123456789abcdef"
TOKEN_ACME = "tok-acme-0123456789abcdef"
TOKEN_SLOW = "tok-slow-0123456789abcdef"


@pytest.fixture
def http_server(mem: Memory) -> Iterator[tuple[str, Memory]]:
    import uvicorn

    tokens = parse_tokens(f"{TOKEN_ANY}, {TOKEN_ACME}:acme\n{TOKEN_SLOW}")
    limits = Limits(rate_per_minute=30, quota=3)
    app = http_app(build_server(mem, scope=Scope(tenant="default"), tokens=tokens, limits=limits),
                   tokens=tokens, limits=limits)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/mcp", mem
    server.should_exit = True
    thread.join(5)


def _client(url: str, token: str, **headers: str) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **headers}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


async def test_http_requires_a_token_and_pins_tokens_to_tenants(http_server: tuple[str, Memory]) -> None:
    url, mem = http_server
    async with httpx.AsyncClient() as h:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
            resp = await h.post(url, json={}, headers=headers)
            assert resp.status_code == 401 and resp.headers["www-authenticate"].startswith("Bearer")
        resp = await h.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN_ACME}",
                                                   "X-Remem-Tenant": "globex"})
        assert resp.status_code == 403
    async with _client(url, TOKEN_ACME) as c:  # pinned to one tenant: that is where its memories go
        r = await c.call_tool("memory_save", {"text": "Acme ships on Fridays"})
        assert not r.is_error, r.content[0].text
    assert [r.text for r in mem.list(scope=Scope(tenant="acme"))] == ["Acme ships on Fridays"]
    async with _client(url, TOKEN_ANY, **{"X-Remem-Tenant": "globex"}) as c:
        r = await c.call_tool("memory_search", {"query": "ships"})
        assert "No matching memories" in r.content[0].text
        for i in range(3):
            assert not (await c.call_tool("memory_save", {"text": f"globex fact {i} about topic{i}"})).is_error
        r = await c.call_tool("memory_save", {"text": "one too many"})
        assert r.is_error and "quota" in r.content[0].text


async def test_http_rate_limit_answers_429_with_retry_after(http_server: tuple[str, Memory]) -> None:
    url, _ = http_server
    statuses = []
    async with httpx.AsyncClient() as h:
        for _ in range(31):
            resp = await h.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN_SLOW}"})
            statuses.append(resp.status_code)
        assert 429 not in statuses[:30] and statuses[30] == 429
        assert 1 <= int(resp.headers["retry-after"]) <= 60
        other = await h.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN_ANY}"})
        assert other.status_code != 429  # the limit is per token


def test_http_refuses_to_expose_the_memory_without_tokens(mem: Memory) -> None:
    server = build_server(mem, scope=Scope(tenant="t"))
    for host in ("0.0.0.0", "127.0.0.1"):  # loopback too: every local account can reach it
        with pytest.raises(RememError, match="without bearer tokens"):
            http_app(server, host=host)
    with pytest.raises(ValueError, match="at least 16"):
        parse_tokens("short")
    assert parse_tokens("a" * 20 + ":x|y") == {"a" * 20: Token("a" * 20, frozenset({"x", "y"}))}


def test_install_merges_into_existing_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "sub").mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}, "x": 1}))
    written = install_config("project", cwd=project / "sub", server_args=["--embedder", "none"])
    assert written == project / ".mcp.json"
    data = json.loads(written.read_text())
    assert data["x"] == 1 and data["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert data["mcpServers"]["remem"]["args"][-3:] == ["mcp", "--embedder", "none"]
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))  # the store this shell uses goes with the server
    data = json.loads(install_config("project", cwd=project).read_text())
    assert data["mcpServers"]["remem"]["env"] == {"REMEM_HOME": str((tmp_path / "home").resolve())}
    desktop = tmp_path / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir()
    desktop.write_text(json.dumps({"mcpServers": {"fs": {"command": "fs", "env": {"KEY": "k"}}}, "theme": "dark"}))
    desktop.chmod(0o600)
    install_config("claude-desktop", cwd=project, config_path=desktop)
    assert desktop.stat().st_mode & 0o777 == 0o600  # rewriting it never loosens its mode
    data: dict[str, Any] = json.loads(desktop.read_text())
    assert data["theme"] == "dark" and "fs" in data["mcpServers"]
    args = data["mcpServers"]["remem"]["args"]
    assert args[args.index("--project") + 1] == str(project.resolve())  # Desktop runs outside the project


DESKTOP_KEY = "ghp_R8x2Kq9LmZ4vT7bN1cW5yH3jP6sD0fGaE2uI"


def _desktop_config(tmp_path: Path) -> Path:
    desktop = tmp_path / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir()
    desktop.write_text(json.dumps({"mcpServers": {"github": {"command": "gh", "env": {"TOKEN": DESKTOP_KEY}}}}))
    desktop.chmod(0o600)
    return desktop


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and symlinks")
def test_install_never_shows_the_desktop_configs_keys_to_other_accounts(tmp_path: Path) -> None:
    """Claude Desktop's config holds other servers' keys: while remem rewrites it, no file with them is readable
    by others at any step (umask 022), and a link planted where a fixed temp name would be is not followed."""
    desktop = _desktop_config(tmp_path)
    exposed: list[str] = []
    watching = [False]

    def audit(event: str, args: tuple[Any, ...]) -> None:  # every file-system step: who could read the keys?
        if not watching[0] or not event.startswith(("os.", "open", "tempfile.", "shutil.")):
            return
        watching[0] = False  # the checks below are file-system events too
        try:
            for entry in desktop.parent.iterdir():
                if entry.is_file() and not entry.is_symlink() and entry.stat().st_mode & 0o077 \
                        and DESKTOP_KEY in entry.read_text(errors="replace"):
                    exposed.append(f"{event}: {entry.name} {oct(entry.stat().st_mode & 0o777)}")
        finally:
            watching[0] = True

    sys.addaudithook(audit)  # cannot be removed: inert once `watching` is off
    old_umask = os.umask(0o022)
    watching[0] = True
    try:
        install_config("claude-desktop", cwd=tmp_path, config_path=desktop)
    finally:
        watching[0] = False
        os.umask(old_umask)
    assert exposed == []
    assert desktop.stat().st_mode & 0o777 == 0o600
    data = json.loads(desktop.read_text())
    assert data["mcpServers"]["github"]["env"]["TOKEN"] == DESKTOP_KEY and "remem" in data["mcpServers"]
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched")
    (desktop.parent / (desktop.name + ".tmp")).symlink_to(elsewhere)  # where the old code wrote first
    install_config("claude-desktop", cwd=tmp_path, config_path=desktop, name="remem2")
    assert elsewhere.read_text() == "untouched" and not desktop.is_symlink()
    assert set(json.loads(desktop.read_text())["mcpServers"]) == {"github", "remem", "remem2"}


def test_a_failed_install_keeps_the_old_config_and_leaves_no_copy_of_its_keys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the final rename fails (a full disk, a read-only folder), the old config stays as it was and no
    half-written copy of it (with every server's keys) is left next to it."""
    desktop = _desktop_config(tmp_path)
    before = desktop.read_bytes()

    def refuse(src: Any, dst: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        install_config("claude-desktop", cwd=tmp_path, config_path=desktop)
    assert desktop.read_bytes() == before
    assert [p.name for p in desktop.parent.iterdir()] == [desktop.name]


async def test_search_shows_a_passage_message_by_message_with_ids_and_sources(mem: Memory) -> None:
    scope = Scope(tenant="acme", user="alice")
    at = "2024-06-01T09:00:00Z"
    res = mem.remember([{"role": "user", "content": "My sister Priya is getting married in Lisbon next June.",
                         "id": "u1", "timestamp": at},
                        {"role": "assistant", "content": "Congratulations! Are you going to the wedding?",
                         "id": "a1", "timestamp": at}], scope=scope, session="s1")
    async with Client(build_server(mem, scope=scope)) as c:
        text = (await c.call_tool("memory_search", {"query": "Priya's wedding in Lisbon", "kind": "episode"})
                ).content[0].text
    lines = fenced_lines(text)
    ep = {e.sources[0]: e.id for e in res.episodes}
    assert lines[0].startswith("- [2024-06-01 · user] My sister Priya")
    assert f"(id: {ep['u1']}; sources: u1)" in lines[0]
    assert lines[1].startswith("  [assistant] Congratulations") and f"(id: {ep['a1']}; sources: a1)" in lines[1]
