"""The MCP server over real HTTP on 127.0.0.1 against a client that holds a token pinned to one tenant and wants
another's memories: duplicated headers, id probing, token guessing, odd values, and a loopback server started
without tokens. Raw requests go through httpx; normal use through the official MCP client."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("mcp")

import httpx  # noqa: E402
from mcp import Client  # noqa: E402

from remem import Memory, Scope  # noqa: E402
from remem.mcp_http import FailedAuth, Token, default_token  # noqa: E402
from remem.mcp_server import Limits, build_server, http_app, parse_tokens  # noqa: E402

TOKEN_ANY = "tok-any-0123456789abcdef"
TOKEN_ACME = "tok-acme-0123456789abcdef"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(mem: Memory) -> Iterator[tuple[str, Memory]]:
    """The MCP HTTP app on a free loopback port (uvicorn in a thread), guesses limited to 5 a minute."""
    with serving(mem, Scope(tenant="default"), f"{TOKEN_ANY}, {TOKEN_ACME}:acme") as url:
        yield url, mem


@contextlib.contextmanager
def serving(mem: Memory, scope: Scope, tokens: str) -> Iterator[str]:
    import uvicorn

    server = build_server(mem, scope=scope)
    app = http_app(server, tokens=parse_tokens(tokens), limits=Limits(), failures=FailedAuth(per_minute=5))
    port = _free_port()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        uv.should_exit = True
        thread.join(5)


def _client(url: str, token: str, **headers: str) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **headers}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


def _session(h: httpx.Client, url: str, token: str) -> dict[str, str]:
    """A raw, initialized MCP session: the headers a follow-up request needs."""
    r = h.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    hdrs = {**MCP_HEADERS, "Authorization": f"Bearer {token}", "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18"}
    assert h.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hdrs).status_code == 202
    return hdrs


def _call(name: str, args: dict[str, Any], rid: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}


async def test_duplicated_headers_cannot_move_a_pinned_token_to_another_tenant(served: tuple[str, Memory]) -> None:
    """Finding 1: bogus + acme-pinned Authorization, X-Remem-Tenant globex + acme used to act in globex."""
    url, mem = served
    attack = [("Authorization", "Bearer bogus-0123456789abcdef"), ("Authorization", f"Bearer {TOKEN_ACME}"),
              ("X-Remem-Tenant", "globex"), ("X-Remem-Tenant", "acme"), *MCP_HEADERS.items()]
    with httpx.Client(timeout=30) as h:
        assert h.post(url, json=INIT, headers=attack).status_code == 400
        session = _session(h, url, TOKEN_ACME)  # a legitimate session for the pinned token, then the attack
        for tool, args in (("memory_save", {"text": "planted by acme in globex"}), ("memory_search", {"query": "x"})):
            headers = [*session.items(), ("X-Remem-Tenant", "globex"), ("X-Remem-Tenant", "acme")]
            r = h.post(url, json=_call(tool, args), headers=headers)
            assert r.status_code == 400 and "x-remem-tenant" in r.json()["error"]
        twice = {"Authorization": [f"Bearer {TOKEN_ANY}"], "X-Remem-User": ["alice", "bob"],
                 "Mcp-Session-Id": [session["mcp-session-id"]]}
        for name, values in twice.items():  # any header we read, duplicated on its own
            headers = [*session.items(), *((name, v) for v in values)]
            assert h.post(url, json=_call("memory_recent", {}), headers=headers).status_code == 400, name
        r = h.post(url, json=_call("memory_recent", {}), headers=session)
        assert r.status_code == 200 and "No memories yet" in r.text  # the same session, one copy each: fine
    assert mem.list(scope=Scope(tenant="globex")) == []
    # normal use through the official client is unaffected, and the pinned token lands in its own tenant
    async with _client(url, TOKEN_ACME) as c:
        r = await c.call_tool("memory_save", {"text": "Acme ships on Fridays"})
        assert not r.is_error, r.content[0].text
    assert [r.text for r in mem.list(scope=Scope(tenant="acme"))] == ["Acme ships on Fridays"]
    assert mem.list(scope=Scope(tenant="globex")) == []


async def test_a_user_pinned_by_the_token_or_the_server_cannot_be_swapped_with_a_header(mem: Memory) -> None:
    """Review: X-Remem-User used to act as any user, even on a server started for one user only."""
    bob = mem.add("bob's salary is 180k, do not share", scope=Scope(tenant="acme", user="bob"))
    alice = mem.add("alice's locker code is 4417", scope=Scope(tenant="acme", user="alice"))
    token_bob = "tok-bob-0123456789abcdef"
    with serving(mem, Scope(tenant="acme", user="alice"), f"{TOKEN_ANY}, {token_bob}:acme;user=bob") as url:
        async with _client(url, TOKEN_ANY, **{"X-Remem-User": "bob"}) as c:  # the server serves alice only
            for tool, args in (("memory_search", {"query": "salary"}), ("memory_forget", {"memory_id": bob.id})):
                r = await c.call_tool(tool, args)
                assert r.is_error and "serves user 'alice' only" in r.content[0].text, r.content[0].text
        async with _client(url, TOKEN_ANY) as c:
            r = await c.call_tool("memory_search", {"query": "salary locker code"})
            assert "4417" in r.content[0].text and "180k" not in r.content[0].text
    with serving(mem, Scope(tenant="acme"), f"{token_bob}:acme;user=bob") as url:
        with httpx.Client(timeout=30) as h:
            r = h.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {token_bob}",
                                                "X-Remem-User": "alice"})
            assert r.status_code == 403 and "may not act as user 'alice'" in r.json()["error"]
        async with _client(url, token_bob) as c:  # no header: the pinned user, not the whole tenant
            r = await c.call_tool("memory_search", {"query": "salary locker code"})
            assert "180k" in r.content[0].text and "4417" not in r.content[0].text
    assert mem.get(bob.id, scope=Scope(tenant="acme", user="bob")) and mem.get(alice.id, scope=Scope(tenant="acme"))


def test_a_token_entry_pins_a_user_only_as_user_and_a_tenant_may_hold_an_at_sign() -> None:
    """Review: TOKEN:alice@example.com|bob@example.com was read as tenant alice, user example.com|bob@..."""
    tokens = parse_tokens("tok-0123456789abcdef:alice@example.com|bob@example.com, "
                          "tok-abcdef0123456789:acme;user=bob")
    assert tokens["tok-0123456789abcdef"] == Token("tok-0123456789abcdef",
                                                   frozenset({"alice@example.com", "bob@example.com"}), None)
    assert tokens["tok-abcdef0123456789"].user == "bob" and tokens["tok-abcdef0123456789"].tenants == {"acme"}
    for bad in ("tok-0123456789abcdef:acme;user=", "tok-0123456789abcdef;role=admin"):
        with pytest.raises(ValueError, match="only 'user=NAME'"):
            parse_tokens(bad)


async def test_tenant_is_decided_per_request_not_per_session(served: tuple[str, Memory]) -> None:
    url, mem = served
    with httpx.Client(timeout=30) as h:
        session = _session(h, url, TOKEN_ANY)
        for tenant in ("globex", "initech"):
            r = h.post(url, json=_call("memory_save", {"text": f"{tenant} keeps invoices for 7 years"}),
                       headers={**session, "X-Remem-Tenant": tenant})
            assert r.status_code == 200 and "Saved memory" in r.text, r.text
        # the pinned token reusing that session id is still pinned
        r = h.post(url, json=_call("memory_recent", {}),
                   headers={**session, "Authorization": f"Bearer {TOKEN_ACME}", "X-Remem-Tenant": "globex"})
        assert r.status_code == 403
    assert [r.text for r in mem.list(scope=Scope(tenant="globex"))] == ["globex keeps invoices for 7 years"]
    assert [r.text for r in mem.list(scope=Scope(tenant="initech"))] == ["initech keeps invoices for 7 years"]


async def test_a_pinned_token_cannot_tell_another_tenants_ids_from_missing_ones(served: tuple[str, Memory]) -> None:
    url, mem = served
    theirs = mem.add("Globex's merger closes in May", scope=Scope(tenant="globex")).id
    missing = str(uuid.uuid4())
    async with _client(url, TOKEN_ACME) as c:
        for tool, extra in (("memory_get", {}), ("memory_update", {"text": "changed"}),
                            ("memory_supersede", {"new_text": "changed"}), ("memory_forget", {})):
            answers = []
            for rid in (theirs, missing):
                r = await c.call_tool(tool, {"id": rid, **extra})
                answers.append((r.is_error, r.content[0].text.replace(rid, "<id>")))
            assert answers[0] == answers[1], (tool, answers)
    assert mem.get(theirs, scope=Scope(tenant="globex")).text == "Globex's merger closes in May"


async def test_failed_token_guesses_are_limited_per_client(served: tuple[str, Memory]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as h:
        statuses = [(await h.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer guess-{i:016d}"}))
                    .status_code for i in range(5)]
        assert statuses == [401] * 5
        blocked = await h.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": "Bearer guess-x"})
        assert blocked.status_code == 429 and 1 <= int(blocked.headers["retry-after"]) <= 60
        # while blocked, even the right token gets no answer from this address (or guessing would go on)
        right = await h.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN_ANY}"})
        assert right.status_code == 429
    if sys.platform.startswith("linux"):  # on loopback the client is the account: another 127.x address is no escape
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(timeout=30, transport=transport) as other:
            r = await other.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": "Bearer guess-y"})
            assert r.status_code == 429


def test_failed_guess_table_stays_bounded() -> None:
    failures = FailedAuth(per_minute=3, max_clients=100)
    for i in range(10_000):
        failures.failed(f"10.0.{i // 256}.{i % 256}", now=1000.0)
    assert len(failures) == 100
    for _ in range(3):
        failures.failed("10.9.9.9", now=1000.0)
    assert failures.retry_after("10.9.9.9", now=1001.0) == 59
    assert failures.retry_after("10.9.9.9", now=1060.5) == 0  # a minute later it may try again


async def test_odd_values_get_clear_errors_not_library_messages(served: tuple[str, Memory]) -> None:
    url, _ = served
    async with _client(url, TOKEN_ANY) as c:
        for args in ({"query": "x", "as_of": "1e18"}, {"query": "x", "since": "99999-01-01"},
                     {"query": "x", "until": "NaN"}):
            r = await c.call_tool("memory_search", args)
            text = r.content[0].text
            assert r.is_error and "memory search did not run" in text, text
            assert not re.search(r"Errno|Traceback|OSError|Overflow|failed to extract", text), text


async def test_a_broken_store_gives_a_remem_error_not_the_library_message(mem: Memory) -> None:
    mem.backend.close()  # the store underneath fails in a way remem does not anticipate
    async with Client(build_server(mem, scope=Scope(tenant="t"))) as c:
        r = await c.call_tool("memory_search", {"query": "anything"})
    text = r.content[0].text
    assert r.is_error and "remem hit an internal error" in text and "log has the details" in text
    assert "NoneType" not in text and "attribute" not in text, text


# ---------------------------------------------------------------------------------------------- no tokens
def test_loopback_http_without_tokens_creates_a_private_token(tmp_path: Path, store_factory: Any) -> None:
    """Finding 7: every local account could use every tenant of a token-less loopback server."""
    home = tmp_path / "home"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "REMEM_MCP_TOKENS"}
    env.update(REMEM_HOME=str(home), REMEM_SERVICE="off")
    proc = subprocess.Popen([sys.executable, "-m", "remem.cli", "mcp", "--http", "--port", str(port),
                             "--path", str(store_factory("none")), "--embedder", "none", "--tenant", "t"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        token_file = home / "mcp-token"
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline:
            try:
                status = httpx.post(url, json=INIT, headers=MCP_HEADERS, timeout=5).status_code
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert status == 401  # no token, no answer, even on loopback
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and stat.S_IMODE(home.stat().st_mode) == 0o700
        token = token_file.read_text().strip()
        r = httpx.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}, timeout=10)
        assert r.status_code == 200 and '"result"' in r.text  # initialized
        assert default_token(token_file)[0].keys() == {token}  # the next start keeps the same token
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert str(token_file) in err and token not in err  # says where the token is, never the token itself
