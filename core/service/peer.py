"""Who is on the other end of a service connection, checked before anything secret crosses it.

Unix sockets: the kernel tells each side the other's uid (``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` /
getpeereid on macOS and the BSDs); the service serves only its own account and the client talks only to a
service of its own account, so a listener another user planted receives nothing.

TCP (loopback, where Unix sockets are missing): the port comes from ``service.json`` (0600), which outlives a
killed service, and anyone may take a freed port. So the client proves nothing and sends nothing until the
listener has proven it knows the store's secret: a challenge-response with fresh nonces both ways, HMAC-SHA256
keyed with the secret and bound to the port, so the secret itself never crosses the wire and a proof cannot be
replayed or relayed from another port. Until the client has proven itself in turn, the service reads at most
:data:`HANDSHAKE_MAX` bytes a line, for at most :data:`HANDSHAKE_TIMEOUT` seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import socket
import struct
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

from .wire import ServiceSocketError

if TYPE_CHECKING:
    import asyncio

PROTOCOL = 1
HANDSHAKE_MAX = 4096       # bytes: the longest line the service reads from a peer it has not authenticated
HANDSHAKE_TIMEOUT = 5.0    # seconds the service waits for an unauthenticated peer
_XUCRED_SIZE = 76          # struct xucred on macOS/BSD: version, uid, ngroups, groups[16]


class HandshakeError(ConnectionError):
    """The TCP listener did not prove it knows the store's secret: a stale port someone else took, or not a
    remem service at all. Nothing secret was sent; the client treats it as "no service here"."""


# ---------------------------------------------------------------------------------------------- Unix peers
def peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (None where the OS cannot say)."""
    try:
        if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
            data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
            return int(struct.unpack("iII", data)[1])
        if sys.platform == "darwin" or "bsd" in sys.platform:  # getpeereid(): LOCAL_PEERCRED at SOL_LOCAL (0)
            data = sock.getsockopt(0, getattr(socket, "LOCAL_PEERCRED", 1), _XUCRED_SIZE)
            return int(struct.unpack_from("=II", data)[1])
    except OSError:
        return None
    return None


def check_listener(sock: Any, where: object) -> None:
    """Client side: refuse a socket served by another account before sending it a single byte."""
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        raise ServiceSocketError(f"the remem socket {where} is served by uid {uid}, not by you (uid {os.getuid()}); "
                                 f"refusing to send it anything. Remove it (or find out who created it)")


def peer_is_us(sock: Any) -> bool:
    """Service side: only this account's processes get an answer."""
    uid = peer_uid(sock)
    return uid is None or uid == os.getuid()


# ---------------------------------------------------------------------------------------------- TCP handshake
def _proof(secret: str, role: str, client_nonce: str, server_nonce: str, port: int) -> str:
    msg = f"remem-service/{PROTOCOL}/{role}/{client_nonce}/{server_nonce}/{port}".encode()
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def _parse(line: bytes, *keys: str) -> dict[str, Any]:
    """A handshake message: one short JSON object with string fields ``keys``; HandshakeError otherwise."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise HandshakeError("not a remem handshake") from exc
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and len(data[k]) <= 128 for k in keys):
        raise HandshakeError("not a remem handshake")
    return data


class ClientHandshake:
    """The client's side, as steps (shared by the sync and asyncio clients)."""

    def __init__(self, secret: str, port: int) -> None:
        self.secret, self.port = secret, port
        self.nonce = secrets.token_hex(16)

    def hello(self) -> bytes:
        return _line({"remem": PROTOCOL, "nonce": self.nonce})

    def answer(self, reply: bytes) -> bytes:
        """Check the listener's proof; our own proof to send (before the request) if it holds."""
        data = _parse(reply, "nonce", "proof")
        want = _proof(self.secret, "service", self.nonce, data["nonce"], self.port)
        if not hmac.compare_digest(want, data["proof"]):
            raise HandshakeError(f"the listener on 127.0.0.1:{self.port} is not this store's remem service")
        return _line({"proof": _proof(self.secret, "client", self.nonce, data["nonce"], self.port)})


def read_short_line(recv: Any, limit: int = HANDSHAKE_MAX) -> bytes:
    """Read one line of at most ``limit`` bytes with ``recv(n)``; a longer one, extra bytes after it or EOF
    before its end is a HandshakeError (the peer may send nothing else until it hears back)."""
    buf = b""
    while b"\n" not in buf:
        chunk = recv(limit + 1 - len(buf))
        if not chunk:
            raise HandshakeError("the listener closed the connection during the handshake")
        buf += chunk
        if len(buf) > limit:
            raise HandshakeError("handshake line too long")
    if not buf.endswith(b"\n"):
        raise HandshakeError("unexpected data during the handshake")
    return buf


def client_handshake(sock: socket.socket, secret: str, port: int) -> bytes:
    """Run the handshake on a connected socket; returns our proof line, to send together with the request."""
    hs = ClientHandshake(secret, port)
    sock.sendall(hs.hello())
    return hs.answer(read_short_line(sock.recv))


async def client_handshake_async(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, secret: str,
                                 port: int) -> bytes:
    hs = ClientHandshake(secret, port)
    writer.write(hs.hello())
    await writer.drain()
    buf = b""
    while b"\n" not in buf:
        chunk = await reader.read(HANDSHAKE_MAX + 1 - len(buf))
        if not chunk:
            raise HandshakeError("the listener closed the connection during the handshake")
        buf += chunk
        if len(buf) > HANDSHAKE_MAX:
            raise HandshakeError("handshake line too long")
    if not buf.endswith(b"\n"):
        raise HandshakeError("unexpected data during the handshake")
    return hs.answer(buf)


def server_handshake(rfile: BinaryIO, wfile: BinaryIO, secret: str, port: int) -> bool:
    """The service's side: prove ourselves, then check the client's proof. Reads two lines of at most
    :data:`HANDSHAKE_MAX` bytes; False (the caller closes) on anything else. A wrong proof raises
    PermissionError, for the caller to answer before closing."""
    try:
        line = rfile.readline(HANDSHAKE_MAX)
        if not line.endswith(b"\n"):
            return False
        client_nonce = _parse(line, "nonce")["nonce"]
        nonce = secrets.token_hex(16)
        wfile.write(_line({"nonce": nonce, "proof": _proof(secret, "service", client_nonce, nonce, port)}))
        wfile.flush()
        line = rfile.readline(HANDSHAKE_MAX)
        if not line.endswith(b"\n"):
            return False
        given = _parse(line, "proof")["proof"]
    except (HandshakeError, OSError):
        return False
    if not hmac.compare_digest(given, _proof(secret, "client", client_nonce, nonce, port)):
        raise PermissionError("this client does not know the store's service secret")
    return True


__all__ = ["HANDSHAKE_MAX", "HANDSHAKE_TIMEOUT", "HandshakeError", "check_listener", "client_handshake",
           "client_handshake_async", "peer_is_us", "peer_uid", "server_handshake"]
