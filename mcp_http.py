"""The MCP server over HTTP: bearer tokens, one parsed identity per request, and rate limits.

Every request is authenticated, loopback included (any local account can reach 127.0.0.1): with no token
configured ``remem mcp --http`` creates one in a 0600 file and says where. The middleware is the only place
that reads the headers: a header it relies on that appears twice is a 400 (one copy would authenticate, the
other choose the tenant), and what it decided — the token, the tenant it may use — travels to the tools in the
ASGI scope (:func:`identity_of`), never re-read from the headers. Failed token guesses are limited per client
(429 + Retry-After) in a table of bounded size: on loopback the client is the local account that owns the
connection (:func:`peer_uid`), so another account's guesses never lock the owner out; elsewhere its address.

Standard library only at import time: ``remem mcp`` over stdio never loads any of this.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import secrets
import stat
import sys
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .core.config import OWN_UID, private_dir, remem_home, tighten
from .core.types import RememError

IDENTITY_KEY = "remem.identity"
TOKEN_FILE = "mcp-token"
# headers a request may carry once: ours, and the ones the MCP transport routes on
SINGLE_HEADERS = frozenset({"authorization", "x-remem-tenant", "x-remem-user", "mcp-session-id",
                            "mcp-protocol-version", "last-event-id", "content-type", "content-length", "host"})


@dataclass(frozen=True)
class Token:
    value: str
    tenants: frozenset[str] = frozenset()  # empty: any tenant
    user: str | None = None  # pinned: the token acts as this user only (X-Remem-User may name no other)

    def allows(self, tenant: str | None) -> bool:
        return not self.tenants or tenant in self.tenants


def parse_tokens(text: str | None) -> dict[str, Token]:
    """``TOKEN``, ``TOKEN:tenant1|tenant2``, and either with ``;user=NAME`` (``TOKEN:acme;user=alice``)
    entries, comma- or newline-separated; ``#`` comments. A token without a user pin may act as any user of its
    tenants. (A tenant may hold ``@``: an e-mail address is a fine tenant id.)"""
    out: dict[str, Token] = {}
    for raw in (text or "").replace(",", "\n").splitlines():
        entry = raw.split("#", 1)[0].strip()
        if not entry:
            continue
        entry, semi, option = entry.partition(";")
        name, eq, user = option.partition("=")
        if semi and (name.strip() != "user" or not eq or not user.strip()):
            raise ValueError(f"MCP token entry {raw.strip()[:8]}…: after ';' only 'user=NAME' (the user it acts "
                             f"as), got {option.strip()!r}")
        value, _, pins = entry.partition(":")
        value = value.strip()
        if len(value) < 16:
            raise ValueError("MCP tokens must be at least 16 characters (use `python -c 'import secrets; "
                             "print(secrets.token_urlsafe(32))'`)")
        out[value] = Token(value, frozenset(p.strip() for p in pins.split("|") if p.strip()), user.strip() or None)
    return out


class SecretFileError(RememError):
    """A file of secrets other accounts could read or have written: refused, as ssh refuses such a key."""


def read_secret_file(path: str | os.PathLike[str]) -> str:
    """The text of a file of secrets (bearer tokens), refused when another account could read it (any group or
    other permission) or could have written it (owned by another account but root): a token any local account
    can read authenticates any local account. The error names the fix (``chmod 600 PATH``)."""
    path = Path(path).expanduser()
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())  # the file opened, not the name (which could be swapped after a check)
        if OWN_UID is not None:
            if st.st_uid not in (OWN_UID, 0):
                raise SecretFileError(f"{path} belongs to uid {st.st_uid}, not to you (uid {OWN_UID}): another "
                                      f"account could have written these tokens; keep your own copy, then "
                                      f"`chmod 600 {path}`")
            if st.st_mode & 0o077:
                raise SecretFileError(f"{path} is open to other accounts (mode {stat.S_IMODE(st.st_mode):04o}): "
                                      f"anyone who can read a token can use it; run `chmod 600 {path}`")
        return fh.read().decode("utf-8")


def load_tokens(tokens_file: str | os.PathLike[str] | None = None) -> dict[str, Token]:
    """``REMEM_MCP_TOKENS`` plus the entries of ``tokens_file`` (which must be private: :func:`read_secret_file`)."""
    tokens = parse_tokens(os.environ.get("REMEM_MCP_TOKENS"))
    if tokens_file:
        tokens.update(parse_tokens(read_secret_file(tokens_file)))
    return tokens


def default_token(path: str | os.PathLike[str] | None = None) -> tuple[dict[str, Token], Path]:
    """The token of ``$REMEM_HOME/mcp-token`` (0600), created on first use: ``--http`` without configured
    tokens still authenticates every request, and the user's own clients read the token from that file."""
    target = Path(path) if path is not None else remem_home() / TOKEN_FILE
    private_dir(target.parent)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        tighten(target)  # ours and left loose by an older version: made 0600; another account's: refused below
    else:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
    return parse_tokens(read_secret_file(target)), target


@dataclass
class Limits:
    """HTTP options: requests per minute per token, and memories per tenant (both optional)."""

    rate_per_minute: int | None = None
    quota: int | None = None
    _hits: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def retry_after(self, key: str, now: float | None = None) -> int:
        """0 when the request may go ahead (and counts it), else the seconds until it may."""
        if not self.rate_per_minute:
            return 0
        now = time.monotonic() if now is None else now
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - 60.0:
                hits.popleft()
            if len(hits) >= self.rate_per_minute:
                return max(1, math.ceil(hits[0] + 60.0 - now))
            hits.append(now)
            return 0


def _proc_net_address(host: str, port: int) -> str | None:
    """``host:port`` as ``/proc/net/tcp(6)`` writes it: each 32-bit word of the address in host byte order, hex."""
    try:
        packed = ipaddress.ip_address(host).packed
    except ValueError:
        return None
    words = [packed[i:i + 4] for i in range(0, len(packed), 4)]
    return "".join(w[::-1].hex() if sys.byteorder == "little" else w.hex() for w in words).upper() + f":{port:04X}"


def peer_uid(client: tuple[str, int] | None, server: tuple[str, int] | None) -> int | None:
    """The account that owns the other end of a loopback TCP connection (Linux: the kernel's socket table), or
    None where the OS does not say. The client's socket has the client's address as its local end and ours as its
    remote end; its owner cannot be forged by an unprivileged process, unlike the source address it picks."""
    if not client or not server or not sys.platform.startswith("linux"):
        return None
    (chost, cport), (shost, sport) = client[:2], server[:2]
    tables = (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6))  # the kernel builds each one walking every socket
    for table, family in tables if ":" not in chost else tables[::-1]:  # (~1-2 ms): the likely one first
        local, remote = _proc_net_address(_as_family(chost, family), cport), \
            _proc_net_address(_as_family(shost, family), sport)
        if local is None or remote is None:
            continue
        try:
            with open(table, encoding="ascii") as fh:
                next(fh, None)
                for line in fh:
                    f = line.split()
                    if len(f) > 7 and f[1] == local and f[2] == remote:
                        return int(f[7])
        except (OSError, ValueError):
            continue
    return None


def _as_family(host: str, family: int) -> str:
    """``127.0.0.1`` as it appears in the IPv6 table (``::ffff:127.0.0.1``) and the reverse."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if family == 6 and ip.version == 4:
        return f"::ffff:{ip}"
    if family == 4 and ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def client_key(scope: Mapping[str, Any]) -> str:
    """Whom failed guesses are counted against: on loopback the local account behind the connection (so another
    account's guesses never lock out the owner, and one account cannot get a fresh allowance from each of the
    16 million 127.x addresses), elsewhere (or where the OS does not say) the client address."""
    client, server = scope.get("client"), scope.get("server")
    host = (client or ("unknown", 0))[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return f"addr:{host}"
    mapped = getattr(ip, "ipv4_mapped", None)
    if ip.is_loopback or (mapped is not None and mapped.is_loopback):
        uid = peer_uid(tuple(client), tuple(server) if server else None)  # type: ignore[arg-type]
        if uid is not None:
            return f"uid:{uid}"
        if sys.platform.startswith("linux"):  # the kernel should have said: one allowance for every such client,
            return "uid:unknown"              # not one per 127.x address
    return f"addr:{host}"


class FailedAuth:
    """Failed token guesses per client (:func:`client_key`: the local account on loopback, else the address):
    after ``per_minute`` in a minute that client gets 429 (valid token or not, or guessing would go on) until the
    oldest failure is a minute old. At most ``max_clients`` clients are tracked (least recently failing dropped
    first), so a flood of addresses cannot grow it."""

    def __init__(self, per_minute: int = 10, max_clients: int = 4096, window: float = 60.0) -> None:
        self.per_minute, self.max_clients, self.window = per_minute, max_clients, window
        self._fails: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._blocked_until = 0.0  # no client is blocked after this: until then requests must say who they are

    def blocking(self, now: float | None = None) -> bool:
        """Whether any client may be blocked now (cheap: a request need not be identified when none is)."""
        return (time.monotonic() if now is None else now) < self._blocked_until

    def _recent(self, key: str, now: float) -> deque[float] | None:
        fails = self._fails.get(key)
        while fails and fails[0] <= now - self.window:
            fails.popleft()
        return fails

    def retry_after(self, key: str, now: float | None = None) -> int:
        """Seconds this address must wait (0: it may try)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            fails = self._recent(key, now)
            if fails is None or len(fails) < self.per_minute:
                return 0
            return max(1, math.ceil(fails[0] + self.window - now))

    def failed(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            fails = self._recent(key, now)
            if fails is None:
                fails = self._fails[key] = deque(maxlen=self.per_minute)
            fails.append(now)
            if len(fails) >= self.per_minute:
                self._blocked_until = max(self._blocked_until, fails[0] + self.window)
            self._fails.move_to_end(key)
            while len(self._fails) > self.max_clients:
                self._fails.popitem(last=False)

    def __len__(self) -> int:
        return len(self._fails)


@dataclass(frozen=True)
class Identity:
    """What the middleware decided about one request; the tools read this, never the headers."""

    token: Token
    tenant: str | None = None   # chosen with X-Remem-Tenant (already checked against the token's pins)
    user: str | None = None     # the token's pinned user, or X-Remem-User (already checked against the pin)


def identity_of(request: Any) -> Identity | None:
    """The authenticated identity of an HTTP request (None if it did not pass our middleware)."""
    scope = getattr(request, "scope", None)
    ident = scope.get(IDENTITY_KEY) if isinstance(scope, dict) else None
    return ident if isinstance(ident, Identity) else None


class AuthMiddleware:
    """ASGI: one copy of each header we rely on (400), a valid bearer token (401; guesses limited per address,
    429), a tenant the token may use (403), and a per-token rate limit (429 + Retry-After)."""

    def __init__(self, app: Any, tokens: Mapping[str, Token], limits: Limits,
                 failures: FailedAuth | None = None) -> None:
        self.app, self.tokens, self.limits = app, dict(tokens), limits
        self.failures = failures if failures is not None else FailedAuth()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope.pop(IDENTITY_KEY, None)  # only this middleware sets it
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            if name in headers and name in SINGLE_HEADERS:
                return await _reply(send, 400, f"the {name} header may appear only once")
            headers[name] = raw_value.decode("latin-1")
        # who the client is costs a read of the kernel's socket table on loopback: paid by failed attempts, and
        # by every request only while some client is blocked
        client = client_key(scope) if self.failures.blocking() else None
        wait = self.failures.retry_after(client) if client is not None else 0
        if wait:
            return await _reply(send, 429, "too many failed authentication attempts",
                                [(b"retry-after", str(wait).encode())])
        auth = headers.get("authorization", "")
        given = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        match = next((t for t in self.tokens.values() if secrets.compare_digest(t.value.encode(), given.encode())),
                     None)
        if match is None:
            self.failures.failed(client or client_key(scope))
            return await _reply(send, 401, "a valid bearer token is required",
                                [(b"www-authenticate", b'Bearer realm="remem"')])
        tenant = headers.get("x-remem-tenant", "").strip() or None
        if tenant is None and len(match.tenants) == 1:
            tenant = next(iter(match.tenants))
        if tenant is not None and not match.allows(tenant):
            return await _reply(send, 403, f"this token may not use tenant {tenant!r}")
        wait = self.limits.retry_after(match.value)
        if wait:
            return await _reply(send, 429, "rate limit exceeded", [(b"retry-after", str(wait).encode())])
        user = headers.get("x-remem-user", "").strip() or None
        if match.user is not None and user not in (None, match.user):
            return await _reply(send, 403, f"this token may not act as user {user!r}")
        scope[IDENTITY_KEY] = Identity(match, tenant, match.user or user)
        return await self.app(scope, receive, send)


async def _reply(send: Any, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


def http_app(server: Any, *, host: str = "127.0.0.1", tokens: Mapping[str, Token] | None = None,
             limits: Limits | None = None, failures: FailedAuth | None = None) -> Any:
    """The Streamable HTTP ASGI app behind the auth middleware; refuses to serve without tokens (loopback
    too: every local account can reach it)."""
    tokens = dict(tokens or {})
    if not tokens:
        raise RememError(f"refusing to serve MCP on {host} without bearer tokens: set REMEM_MCP_TOKENS or "
                         f"--tokens-file (`remem mcp --http` creates one in $REMEM_HOME/{TOKEN_FILE})")
    return AuthMiddleware(server.streamable_http_app(host=host), tokens, limits or Limits(), failures)


__all__ = ["AuthMiddleware", "FailedAuth", "SecretFileError", "client_key", "peer_uid", "read_secret_file", "Identity", "Limits", "Token", "default_token", "http_app",
           "identity_of", "load_tokens", "parse_tokens"]
