"""Talking to the local remem service: the sync and async clients.

One process (the service, :mod:`remem.core.service.server`) owns an embedded store folder; every other process
sends it JSON lines (:mod:`.wire`) over a Unix socket inside that folder. Each call opens its own connection
(tens of microseconds on a Unix socket), so a connection is never shared between threads, a service that went
idle and exited is simply started again, and a request that could not even connect was certainly never
applied, which makes retrying it safe. Before a request goes out the client checks who listens (:mod:`.peer`):
a socket served by another account is refused, and over TCP the listener must prove it knows the store's secret.

Kept light on purpose: this module imports only the standard library and ``remem.core.types``/``config``,
so a Claude Code hook can reach a warm service in a few milliseconds.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..config import private_dir
from .lifecycle import pid_alive, spawn_service, start_error
from .paths import ServicePaths, check_private_folder, read_state, service_paths, store_folder, transport
from .peer import HANDSHAKE_TIMEOUT, HandshakeError, check_listener, client_handshake, client_handshake_async
from .wire import (MAX_LINE, ServiceError, ServiceSocketError, ServiceTimeoutError, decode, decode_error,
                   dumps_line, encode)
from ..operations import RETRYABLE as RETRYABLE_OPERATIONS, SLOW
from ..types import RememError

if TYPE_CHECKING:
    import asyncio

DEFAULT_TIMEOUT = 30.0
SLOW_TIMEOUT = 900.0
START_TIMEOUT = 15.0
SLOW_METHODS = SLOW  # from the operations table: bulk operations wait longer
# safe to send again when the connection broke after the request went out (no effect, or idempotent)
RETRYABLE = RETRYABLE_OPERATIONS | {"_hello", "_status"}
# no service of ours listens (nothing was sent): start one, or report that none runs
NOT_LISTENING = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, HandshakeError)


# ---------------------------------------------------------------------------------------------- sync client
def _connect(paths: ServicePaths, timeout: float) -> tuple[socket.socket, bytes]:
    """A socket connected to this account's service for the store, and what to send before the first request
    (the TCP proof; nothing on Unix). Raises one of :data:`NOT_LISTENING` when no service of ours listens, and
    :class:`ServiceSocketError` when the socket or its folder belongs to someone else."""
    if transport() == "unix":
        if paths.socket_elsewhere:
            check_private_folder(paths.socket.parent)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(paths.socket))
            check_listener(sock, paths.socket)
        except BaseException:
            sock.close()
            raise
        return sock, b""
    state = read_state(paths)
    if not state or state.get("transport") != "tcp":
        raise FileNotFoundError(f"no service state in {paths.state}")
    port = int(state["port"])
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        sock.settimeout(min(timeout, HANDSHAKE_TIMEOUT))
        proof = client_handshake(sock, str(state.get("secret", "")), port)
    except socket.timeout as exc:
        sock.close()
        raise HandshakeError(f"the listener on 127.0.0.1:{port} did not answer the handshake") from exc
    except BaseException:
        sock.close()
        raise
    return sock, proof


def _recv_line(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)  # EOF: empty or a partial line
        if chunk.endswith(b"\n"):
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)
        if sum(map(len, chunks)) > MAX_LINE:
            raise ServiceError("response from the remem service is too large")


class ServiceClient:
    """Calls one store's service; starts it when nobody owns the store yet (``autostart``)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, embedder: str | None = None,
                 timeout: float | None = None, autostart: bool = True, idle_timeout: float | None = None,
                 start_timeout: float | None = None) -> None:
        self.paths = service_paths(path)
        self.embedder = embedder
        self.timeout = float(timeout if timeout is not None else
                             os.environ.get("REMEM_SERVICE_TIMEOUT") or DEFAULT_TIMEOUT)
        self.autostart = autostart
        self.idle_timeout = idle_timeout
        self.start_timeout = float(start_timeout if start_timeout is not None else
                                   os.environ.get("REMEM_SERVICE_START_TIMEOUT") or START_TIMEOUT)
        self.cfg: dict[str, Any] = {}

    def timeout_for(self, method: str, timeout: float | None = None) -> float:
        if timeout is not None:
            return float(timeout)
        return max(self.timeout, SLOW_TIMEOUT) if method in SLOW_METHODS else self.timeout

    def request_line(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> bytes:
        req: dict[str, Any] = {"m": method, "a": encode(list(args)), "k": encode(dict(kwargs))}
        if self.cfg:
            req["c"] = self.cfg
        return dumps_line(req)

    def start(self) -> None:
        start_service(self.paths.folder, embedder=self.embedder, idle_timeout=self.idle_timeout,
                      timeout=self.start_timeout)

    def call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run ``method`` in the service; its result, or the exception it raised (same type)."""
        limit = self.timeout_for(method, timeout)
        deadline = time.monotonic() + limit
        line = self.request_line(method, args, kwargs)  # a value the wire cannot carry fails here, unsent
        started = False
        for attempt in range(3):
            try:
                sock, proof = _connect(self.paths, max(0.05, deadline - time.monotonic()))
            except NOT_LISTENING as exc:
                if not self.autostart:
                    raise ServiceError(f"no remem service is running for {self.paths.folder}") from exc
                if started or attempt == 2:
                    raise ServiceError(f"the remem service for {self.paths.folder} is not answering "
                                       f"(log: {self.paths.log})") from exc
                self.start()
                started = True
                continue
            except socket.timeout as exc:
                raise ServiceTimeoutError(f"connecting to the remem service at {self.paths.socket} timed out") from exc
            try:
                sock.settimeout(max(0.05, deadline - time.monotonic()))
                sock.sendall(proof + line)
                raw = _recv_line(sock)
            except socket.timeout as exc:
                raise ServiceTimeoutError(
                    f"the remem service did not answer {method!r} within {limit:g} s "
                    f"({_who(self.paths)}; log: {self.paths.log})") from exc
            except OSError as exc:
                raw = b""
                lost: BaseException | None = exc
            else:
                lost = None
            finally:
                sock.close()
            if raw.endswith(b"\n"):
                return _unwrap(json.loads(raw))
            # the connection broke after the request went out: the service stopped or crashed mid-call
            if method in RETRYABLE and attempt < 2:
                time.sleep(0.05)
                continue
            raise ServiceError(f"the remem service stopped while handling {method!r}; it may or may not have "
                               f"been applied (log: {self.paths.log})") from lost
        raise ServiceError(f"could not reach the remem service for {self.paths.folder}")

    def hello(self, timeout: float | None = None) -> dict[str, Any]:
        return self.call("_hello", timeout=timeout)


def _unwrap(resp: Mapping[str, Any]) -> Any:
    if "e" in resp:
        raise decode_error(resp["e"])
    return decode(resp.get("r"))


def _who(paths: ServicePaths) -> str:
    state = read_state(paths)
    return f"pid {state.get('pid')}" if state else "pid unknown"


def probe(path: str | os.PathLike[str] | None, timeout: float = 1.0) -> dict[str, Any] | None:
    """The running service's hello, or None when no service of ours answers for this store (never starts one).
    A socket someone else owns is an error (:class:`ServiceSocketError`), not "no service"."""
    try:
        return ServiceClient(path, autostart=False).call("_hello", timeout=timeout)
    except ServiceSocketError:
        raise
    except (RememError, OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- async client
class AsyncServiceClient:
    """The same calls over asyncio streams: a remote AsyncMemory never blocks the event loop on the socket."""

    def __init__(self, sync: ServiceClient) -> None:
        self.sync = sync

    async def _open(self, timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
        import asyncio  # here: a sync caller (a Claude Code hook) should not pay for importing asyncio

        paths = self.sync.paths
        if transport() == "unix":
            if paths.socket_elsewhere:
                check_private_folder(paths.socket.parent)
            r, w = await asyncio.wait_for(asyncio.open_unix_connection(str(paths.socket), limit=MAX_LINE), timeout)
            try:
                check_listener(w.get_extra_info("socket"), paths.socket)
            except BaseException:
                w.close()
                raise
            return r, w, b""
        state = read_state(paths)
        if not state or state.get("transport") != "tcp":
            raise FileNotFoundError(f"no service state in {paths.state}")
        port = int(state["port"])
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, limit=MAX_LINE), timeout)
        try:
            proof = await asyncio.wait_for(client_handshake_async(r, w, str(state.get("secret", "")), port),
                                           min(timeout, HANDSHAKE_TIMEOUT))
        except asyncio.TimeoutError as exc:
            w.close()
            raise HandshakeError(f"the listener on 127.0.0.1:{port} did not answer the handshake") from exc
        except BaseException:
            w.close()
            raise
        return r, w, proof

    async def call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        import asyncio

        sync = self.sync
        limit = sync.timeout_for(method, timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        line = sync.request_line(method, args, kwargs)
        started = False
        for attempt in range(3):
            try:
                reader, writer, proof = await self._open(max(0.05, deadline - loop.time()))
            except NOT_LISTENING as exc:
                if not sync.autostart or started or attempt == 2:
                    raise ServiceError(f"no remem service answers for {sync.paths.folder}") from exc
                await asyncio.to_thread(sync.start)
                started = True
                continue
            except asyncio.TimeoutError as exc:
                raise ServiceTimeoutError(f"connecting to the remem service at {sync.paths.socket} timed out") from exc
            lost: BaseException | None = None
            try:
                writer.write(proof + line)
                await asyncio.wait_for(writer.drain(), max(0.05, deadline - loop.time()))
                raw = await asyncio.wait_for(reader.readline(), max(0.05, deadline - loop.time()))
            except asyncio.TimeoutError as exc:
                raise ServiceTimeoutError(f"the remem service did not answer {method!r} within {limit:g} s "
                                          f"(log: {sync.paths.log})") from exc
            except OSError as exc:
                raw, lost = b"", exc
            finally:
                writer.close()
            if raw.endswith(b"\n"):
                return _unwrap(json.loads(raw))
            if method in RETRYABLE and attempt < 2:
                await asyncio.sleep(0.05)
                continue
            raise ServiceError(f"the remem service stopped while handling {method!r}; it may or may not have "
                               f"been applied (log: {sync.paths.log})") from lost
        raise ServiceError(f"could not reach the remem service for {sync.paths.folder}")


# ---------------------------------------------------------------------------------------------- start / stop
def start_service(path: str | os.PathLike[str] | None, *, embedder: str | None = None,
                  idle_timeout: float | None = None, timeout: float = START_TIMEOUT) -> dict[str, Any]:
    """Make sure a service owns the store; start one (detached, own session, output to the store's log) if
    none answers. Returns its hello. Only one process spawns at a time (a lock next to the store)."""
    from filelock import FileLock, Timeout

    paths = service_paths(path)
    private_dir(paths.folder)
    deadline = time.monotonic() + timeout
    try:
        with FileLock(str(paths.start_lock), timeout=timeout, mode=0o600, preserve_lock_file=True):
            info = probe(paths.folder, timeout=1.0)
            if info is not None:
                return info
            proc = spawn_service(paths.folder, embedder=embedder, idle_timeout=idle_timeout)
            while time.monotonic() < deadline:
                code = proc.poll()
                info = probe(paths.folder, timeout=1.0)
                if info is not None:
                    return info
                if code is not None:
                    if code == 0:  # another service won the folder meanwhile; give it a moment
                        time.sleep(0.05)
                        continue
                    raise start_error(paths, code)
                time.sleep(0.02)
    except Timeout as exc:
        raise ServiceError(f"timed out waiting for another process to start the remem service for "
                           f"{paths.folder}") from exc
    raise ServiceError(f"the remem service for {paths.folder} did not start within {timeout:g} s "
                       f"(log: {paths.log})")


def stop_service(path: str | os.PathLike[str] | None, timeout: float = 10.0, *, wait: bool = True) -> bool:
    """Ask the store's service to exit (it finishes in-flight calls first). True if one was running; with
    ``wait`` it returns once the process is gone and the store is free."""
    paths = service_paths(path)
    try:
        info = probe(paths.folder)
    except ServiceSocketError:
        return False
    if info is None:
        return False
    try:
        ServiceClient(paths.folder, autostart=False).call("_shutdown", timeout=timeout)
    except ServiceError:
        pass
    if not wait:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(int(info.get("pid", 0))):
            return True
        time.sleep(0.05)
    return True


def service_status(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """What ``remem doctor`` shows: running (with pid, uptime, requests), stopped, stale, unresponsive or unsafe."""
    paths = service_paths(path)
    out: dict[str, Any] = {"socket": str(paths.socket), "log": str(paths.log), "transport": transport()}
    try:
        info = probe(paths.folder, timeout=2.0)
    except ServiceSocketError as exc:
        out.update(state=f"unsafe socket: {exc}")
        return out
    if info is not None:
        out.update(state="running", **{k: info.get(k) for k in ("pid", "uptime_s", "requests", "embedder",
                                                                 "idle_timeout", "version", "warm")})
        return out
    state = read_state(paths)
    pid = int(state.get("pid", 0)) if state else 0
    if pid and pid_alive(pid):
        out.update(state="unresponsive", pid=pid)
    elif os.path.lexists(paths.socket) or state:
        out.update(state="stale (owner gone; replaced on next use)")
    else:
        out.update(state="stopped")
    return out


__all__ = ["AsyncServiceClient", "ServiceClient", "ServiceError", "ServicePaths", "ServiceSocketError",
           "ServiceTimeoutError", "decode", "encode", "probe", "service_paths", "service_status", "start_service",
           "stop_service", "store_folder"]
