"""Failed-token limits over real HTTP on 127.0.0.1: another local account's guesses never lock the owner's valid
token out, and guessing gets no cheaper (the guessing account stays blocked, whatever token or 127.x address it
tries next). The guesser runs as another account (``nobody``) when the tests can start one (as root)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import httpx  # noqa: E402

from remem import Memory, Scope  # noqa: E402
from remem.mcp_http import client_key, peer_uid  # noqa: E402

from test_mcp_http_security import INIT, MCP_HEADERS, TOKEN_ANY, serving  # noqa: E402

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the peer's account is read from /proc/net")

GUESSER = textwrap.dedent("""
    import http.client, json, sys
    host, port, token, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    body = json.dumps(%r)
    out = []
    for i in range(n):
        c = http.client.HTTPConnection(host, port, timeout=30)
        auth = token if i == n - 1 and token != "-" else "guess-%%016d" %% i
        c.request("POST", "/mcp", body, {"Authorization": "Bearer " + auth, "Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream"})
        out.append(c.getresponse().status)
        c.close()
    print(json.dumps(out))
""" % INIT)


def _system_python() -> str | None:
    """An interpreter another account may run (this venv's may sit under a home only we can enter)."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3") or ""):
        if cand and os.access(cand, os.X_OK) and subprocess.run(
                [cand, "-c", "pass"], user=65534, capture_output=True, timeout=30).returncode == 0:
            return cand
    return None


@linux
def test_the_peer_account_of_a_loopback_connection_is_read_from_the_kernel() -> None:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as srv:
            try:
                srv.bind((host, 0))
            except OSError:
                continue  # no IPv6 loopback here
            srv.listen()
            with socket.create_connection(srv.getsockname()[:2]) as _cli:
                conn, addr = srv.accept()
                with conn:
                    assert peer_uid(addr[:2], srv.getsockname()[:2]) == os.getuid()
                    assert client_key({"client": addr[:2], "server": srv.getsockname()[:2]}) == f"uid:{os.getuid()}"
    # not loopback: the address is the client (the OS says nothing about a remote account)
    assert client_key({"client": ("203.0.113.9", 50000), "server": ("10.0.0.1", 8080)}) == "addr:203.0.113.9"


@linux
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="starting another account needs root")
def test_another_accounts_guesses_do_not_lock_out_the_owner(mem: Memory) -> None:
    python = _system_python()
    if python is None:
        pytest.skip("no interpreter another account may run")
    with serving(mem, Scope(tenant="default"), TOKEN_ANY) as url:  # guesses limited to 5 a minute
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        def guess_as_nobody(n: int, token: str = "-") -> list[int]:
            done = subprocess.run([python, "-I", "-c", GUESSER, "127.0.0.1", str(port), token, str(n)], user=65534,
                                  group=65534, capture_output=True, text=True, timeout=60, cwd="/")
            assert done.returncode == 0, done.stderr
            return [int(x) for x in done.stdout.strip().strip("[]").split(",")]

        assert guess_as_nobody(6) == [401] * 5 + [429]  # the guessing account is limited...
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN_ANY}"}
        r = httpx.post(url, json=INIT, headers=headers, timeout=30)
        assert r.status_code == 200 and '"result"' in r.text  # ...the owner, on the same address, is not
        # and guessing got no cheaper: the blocked account gets no answer even with the right token, so a guess
        # that happens to be right is not told apart from a wrong one
        assert guess_as_nobody(1, TOKEN_ANY) == [429]


@linux
def test_one_account_gets_no_fresh_allowance_from_another_loopback_address(mem: Memory) -> None:
    with serving(mem, Scope(tenant="default"), TOKEN_ANY) as url:
        statuses = []
        for i in range(6):  # each guess from a different 127.x address: still one client
            transport = httpx.HTTPTransport(local_address=f"127.0.0.{i + 2}")
            with httpx.Client(timeout=30, transport=transport) as h:
                statuses.append(h.post(url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer g-{i}"})
                                .status_code)
        assert statuses == [401] * 5 + [429]


def test_requests_are_identified_only_while_some_client_is_blocked() -> None:
    """Reading the kernel's socket table costs a millisecond or two: a request pays it only while a client is
    blocked (or when its own token fails), never on the owner's normal traffic."""
    from remem.mcp_http import FailedAuth

    failures = FailedAuth(per_minute=3)
    assert not failures.blocking(now=1000.0)
    for _ in range(2):
        failures.failed("uid:1001", now=1000.0)
    assert not failures.blocking(now=1000.0)  # failures below the limit block no one
    failures.failed("uid:1001", now=1000.0)
    assert failures.blocking(now=1001.0) and failures.retry_after("uid:1001", now=1001.0) == 59
    assert failures.retry_after("uid:0", now=1001.0) == 0  # the owner's account is not the one blocked
    assert not failures.blocking(now=1060.5)
