"""The service's sockets: bind (replacing a stale socket, refusing one that is not ours), authenticate each
peer before reading more than a handshake line, serve JSON lines, and drain on shutdown.

Every connection is authenticated before its first request is read: on a Unix socket the peer must run as this
account (kernel credentials), over TCP it must pass the challenge-response of :mod:`.peer`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import time
import threading
from typing import Any, Protocol

from ..config import write_private
from .paths import ServicePaths, clear_socket_path, make_socket_dir
from .peer import HANDSHAKE_TIMEOUT, peer_is_us, server_handshake
from .wire import MAX_LINE, dumps_line, encode_error

log = logging.getLogger("remem.service")
GRACE = 2.0  # seconds connections accepted before the socket was removed still get served at shutdown
DRAIN_LIMIT = 8.0  # seconds the work in flight gets at shutdown (`remem serve --stop` waits 10 s for the exit)
MAX_UNPROVEN = 32  # TCP peers in their handshake at once: a new one cuts off the oldest


class _Unproven:
    """The TCP peers in their handshake, at most :data:`MAX_UNPROVEN`: a new one cuts off the one waiting
    longest. Refusing the new one instead let any local account keep the owner out by holding the slots open;
    the owner's client finishes its handshake in a millisecond, so to keep it out now takes a flood of new
    connections faster than that, each of which is dropped."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._conns: dict[socket.socket, None] = {}  # in order of arrival
        self._logged = 0.0

    def enter(self, conn: socket.socket) -> None:
        with self._lock:
            while len(self._conns) >= self._limit:
                oldest = next(iter(self._conns))
                del self._conns[oldest]
                _shut(oldest)
                if time.monotonic() - self._logged > 60:  # a flood is logged once a minute, not once a connection
                    self._logged = time.monotonic()
                    log.warning("cut off a peer still in its handshake: %d newer ones are waiting", self._limit)
            self._conns[conn] = None

    def leave(self, conn: socket.socket) -> bool:
        """Done with its handshake; False if it was cut off meanwhile (its answers could not be written)."""
        with self._lock:
            return self._conns.pop(conn, False) is None


_unproven = _Unproven(MAX_UNPROVEN)


class Service(Protocol):
    """What the sockets need of :class:`remem.core.service.server.Service` (which imports this module)."""

    paths: ServicePaths
    transport: str
    secret: str | None
    started: float
    active: int
    server: socketserver.BaseServer | None
    _state: threading.Lock

    def handle_line(self, line: bytes) -> bytes: ...


def unlink_own(paths: ServicePaths) -> None:
    for p in (paths.socket, paths.state):
        try:
            p.unlink()
        except OSError:
            pass


def _shut(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Handler(socketserver.StreamRequestHandler):
    timeout = 600  # a client that connects and never sends is dropped eventually

    def authenticated(self, svc: Service) -> bool:
        """Unix: the peer runs as our account. TCP: it proved it knows the secret, within a few KB and seconds."""
        if svc.secret is None:
            if peer_is_us(self.connection):
                return True
            log.warning("refused a connection from another account's process")
            return False
        _unproven.enter(self.connection)
        # the whole handshake within HANDSHAKE_TIMEOUT, not each read: a peer that sends a byte at a time is cut
        cut = threading.Timer(HANDSHAKE_TIMEOUT, _shut, (self.connection,))
        cut.daemon = True
        cut.start()
        self.connection.settimeout(HANDSHAKE_TIMEOUT)
        try:
            proven = server_handshake(self.rfile, self.wfile, svc.secret, self.server.server_address[1])
        except PermissionError as exc:
            self.wfile.write(dumps_line({"e": encode_error(exc)}))
            return False
        finally:
            cut.cancel()
            kept = _unproven.leave(self.connection)
        if not (proven and kept):  # cut off as it finished: a request already sent is not run unanswered
            return False
        self.connection.settimeout(self.timeout)
        return True

    def handle(self) -> None:
        svc: Service = self.server.remem  # type: ignore[attr-defined]
        conns: set[Any] = self.server.remem_conns  # type: ignore[attr-defined]
        if not self.authenticated(svc):
            return
        conns.add(self.connection)
        try:
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line:
                    return
                self.wfile.write(svc.handle_line(line))
        except OSError:
            return
        finally:
            conns.discard(self.connection)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 128


class _TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True


def bind(svc: Service) -> socketserver.BaseServer:
    paths = svc.paths
    if svc.transport == "unix":
        make_socket_dir(paths)
        removed = clear_socket_path(paths.socket)  # we hold the lock, so nobody else serves this folder
        if removed:
            log.info("replaced %s at %s", removed, paths.socket)
        old = os.umask(0o177)
        try:
            server: socketserver.BaseServer = _UnixServer(str(paths.socket), _Handler)
        finally:
            os.umask(old)
        os.chmod(paths.socket, 0o600)
    else:
        server = _TCPServer(("127.0.0.1", 0), _Handler)
    server.remem = svc  # type: ignore[attr-defined]
    server.remem_conns = set()  # type: ignore[attr-defined]
    return server


def write_state(svc: Service) -> None:
    state: dict[str, Any] = {"pid": os.getpid(), "transport": svc.transport, "started_at": svc.started,
                             "socket": str(svc.paths.socket)}
    if svc.transport == "tcp":
        state["port"] = svc.server.server_address[1]  # type: ignore[union-attr]
        state["secret"] = svc.secret
    write_private(svc.paths.state, json.dumps(state))


def drain(server: socketserver.BaseServer, svc: Service, limit: float = DRAIN_LIMIT) -> bool:
    """Serve connections that were accepted (or queued) before the socket was removed, let running requests
    finish, then close what is left (idle connections, never one mid-request). False when work was still in
    flight after ``limit`` seconds: a request stuck for good (a hook blocked on a file) must not keep the store
    locked, so the caller closes the store under it and exits."""
    sock: socket.socket = server.socket  # type: ignore[attr-defined]
    sock.setblocking(False)
    now = time.monotonic()
    grace_end, give_up = now + GRACE, now + max(limit, 0.0)
    conns: set[Any] = server.remem_conns  # type: ignore[attr-defined]
    while time.monotonic() < give_up:
        try:
            request, addr = sock.accept()
        except (BlockingIOError, InterruptedError):
            with svc._state:
                busy = svc.active
            if busy == 0 and (not conns or time.monotonic() > grace_end):
                break
            time.sleep(0.01)
            continue
        except OSError:
            break
        request.setblocking(True)
        server.process_request(request, addr)  # type: ignore[attr-defined]
    for conn in list(conns):
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    while True:  # a request that slipped in between the check and the shutdown
        with svc._state:
            if svc.active == 0:
                return True
        if time.monotonic() >= give_up:
            log.warning("%d request(s) still running after %g s; stopping without them", svc.active, limit)
            return False
        time.sleep(0.01)
