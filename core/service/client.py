"""Talking to the local remem service: the wire format, the sync and async clients, and auto-start.

One process (the service, :mod:`remem.core.service.server`) owns an embedded store folder; every other process sends
it JSON lines over a Unix socket inside that folder (file permissions are the access control). Each call opens
its own connection (tens of microseconds on a Unix socket), so a connection is never shared between threads,
a service that went idle and exited is simply started again, and a request that could not even connect was
certainly never applied, which makes retrying it safe.

Kept light on purpose: this module imports only the standard library and ``remem.core.types``/``config``,
so a Claude Code hook can reach a warm service in a few milliseconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import functools
import hashlib
import importlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path, PurePath
from typing import Any, Mapping, Sequence

from ..config import default_store_path
from ..types import EmbedderMismatchError, ProviderError, RememError, StoreLockedError

SOCKET_NAME = "service.sock"
LOCK_NAME = "service.lock"          # held by the running service for its whole life: one owner per folder
START_LOCK_NAME = "service.start.lock"  # held by a client while it starts the service: one spawn at a time
STATE_NAME = "service.json"         # pid, transport, started_at (and port + secret over TCP); mode 0600
LOG_NAME = "service.log"

DEFAULT_TIMEOUT = 30.0
SLOW_TIMEOUT = 900.0
START_TIMEOUT = 15.0
SLOW_METHODS = frozenset({"add_many", "import_", "export", "backup", "reembed", "remember", "optimize",
                          "iter_records", "stats", "audit", "drain_pending", "rescan_redactions"})
# safe to send again when the connection broke after the request went out (no effect, or idempotent)
RETRYABLE = frozenset({"search", "context", "get", "list", "stats", "count", "export", "iter_records", "audit",
                       "usage",
                       "_hello",
                       "_status"})
EXIT_LOCKED = 3     # service exit code: the store is open in-process elsewhere
EXIT_BUSY = 4       # service exit code: another live service holds the folder but does not answer
MAX_LINE = 1 << 28


class ServiceError(RememError):
    """The local service could not be reached, started, or did not finish a call."""


class ServiceTimeoutError(ServiceError, TimeoutError):
    """A call to the local service took longer than its timeout."""


# ---------------------------------------------------------------------------------------------- locations
@dataclasses.dataclass(frozen=True)
class ServicePaths:
    """Where a store's service keeps its socket, locks, state and log (all inside the store folder)."""

    folder: Path
    socket: Path
    lock: Path
    start_lock: Path
    state: Path
    log: Path


def store_folder(path: str | os.PathLike[str] | None) -> Path:
    """The absolute store folder, resolved exactly like the embedded backend does."""
    return Path(path if path is not None else default_store_path()).expanduser().resolve()


def service_paths(path: str | os.PathLike[str] | None) -> ServicePaths:
    folder = store_folder(path)
    sock = folder / SOCKET_NAME
    if len(os.fsencode(str(sock))) > 100:  # AF_UNIX paths are capped at ~104-108 bytes
        digest = hashlib.sha1(str(folder).encode()).hexdigest()[:16]
        base = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/remem-{os.getuid()}")
        sock = base / f"{digest}.sock"
    return ServicePaths(folder, sock, folder / LOCK_NAME, folder / START_LOCK_NAME, folder / STATE_NAME,
                        folder / LOG_NAME)


def transport() -> str:
    """``unix`` where Unix sockets exist, else ``tcp`` (loopback + per-store secret); REMEM_SERVICE_TRANSPORT
    overrides (tests use it to exercise the TCP path)."""
    env = (os.environ.get("REMEM_SERVICE_TRANSPORT") or "").strip().lower()
    if env in ("unix", "tcp"):
        return env
    return "unix" if hasattr(socket, "AF_UNIX") else "tcp"


def read_state(paths: ServicePaths) -> dict[str, Any] | None:
    try:
        return json.loads(paths.state.read_text("utf-8"))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- wire format
def encode(obj: Any) -> Any:
    """JSON-ready form that keeps the types remem passes around (datetimes, tuples, remem dataclasses)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, tuple):
        return {"$t": "tuple", "v": [encode(v) for v in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"$t": "frozenset" if isinstance(obj, frozenset) else "set", "v": [encode(v) for v in obj]}
    if isinstance(obj, _dt.datetime):
        return {"$t": "dt", "v": obj.isoformat()}
    if isinstance(obj, _dt.date):
        return {"$t": "date", "v": obj.isoformat()}
    if isinstance(obj, PurePath):
        return {"$t": "path", "v": str(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        if not cls.__module__.startswith("remem."):
            raise TypeError(f"cannot send a {cls.__name__} to the remem service")
        spec, names = _dc_info(cls)
        return {"$t": "dc", "c": spec, "v": {n: encode(getattr(obj, n)) for n in names}}
    if isinstance(obj, Mapping):
        out = {str(k): encode(v) for k, v in obj.items()}
        return {"$t": "dict", "v": out} if "$t" in out else out
    raise TypeError(f"cannot send a {type(obj).__name__} to the remem service")


def decode(obj: Any) -> Any:
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get("$t")
    if tag is None:
        return {k: decode(v) for k, v in obj.items()}
    val = obj.get("v")
    if tag == "tuple":
        return tuple(decode(v) for v in val)
    if tag == "set":
        return {decode(v) for v in val}
    if tag == "frozenset":
        return frozenset(decode(v) for v in val)
    if tag == "dt":
        return _dt.datetime.fromisoformat(val)
    if tag == "date":
        return _dt.date.fromisoformat(val)
    if tag == "path":
        return Path(val)
    if tag == "dict":
        return {k: decode(v) for k, v in val.items()}
    if tag == "dc":
        cls = _remem_attr(obj["c"])
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise ServiceError(f"unexpected type {obj['c']!r} from the service")
        return cls(**{k: decode(v) for k, v in val.items()})
    raise ServiceError(f"unknown value tag {tag!r} from the service")


@functools.lru_cache(maxsize=64)
def _dc_info(cls: type) -> tuple[str, tuple[str, ...]]:
    return f"{cls.__module__}:{cls.__qualname__}", tuple(f.name for f in dataclasses.fields(cls) if f.init)


@functools.lru_cache(maxsize=64)
def _remem_attr(spec: str) -> Any:
    module, _, qualname = spec.partition(":")
    if not (module == "remem" or module.startswith("remem.")):
        raise ServiceError(f"refusing to load {spec!r}")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def encode_error(exc: BaseException) -> dict[str, Any]:
    cls = type(exc)
    msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    data: dict[str, Any] = {"type": cls.__name__, "module": cls.__module__, "message": msg}
    if isinstance(exc, ProviderError):
        data["kind"] = exc.kind
        data["message"] = msg.split(": ", 1)[1] if msg.startswith(f"{exc.kind}: ") else msg
    return data


_BUILTIN_ERRORS = {c.__name__: c for c in (ValueError, TypeError, KeyError, FileNotFoundError, FileExistsError,
                                          PermissionError, NotImplementedError, TimeoutError, OSError,
                                          RuntimeError, IsADirectoryError, NotADirectoryError, IndexError)}


def decode_error(data: Mapping[str, Any]) -> BaseException:
    """The exception the service raised, as the same type (remem errors and common built-ins)."""
    name, module, msg = str(data.get("type")), str(data.get("module")), str(data.get("message", ""))
    cls: Any = None
    if module == "builtins":
        cls = _BUILTIN_ERRORS.get(name)
    elif module.startswith("remem."):
        try:
            cls = _remem_attr(f"{module}:{name}")
        except (ImportError, AttributeError, ServiceError):
            cls = None
    if isinstance(cls, type) and issubclass(cls, ProviderError):
        return cls(data.get("kind") or "bad_response", msg)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            return cls(msg)
        except Exception:  # noqa: BLE001 - an exception type with another constructor
            pass
    return RememError(f"{name}: {msg}")


def dumps_line(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_reject) + "\n").encode("utf-8")


def _reject(obj: Any) -> Any:
    raise TypeError(f"cannot send a {type(obj).__name__} to the remem service")


# ---------------------------------------------------------------------------------------------- sync client
def _connect(paths: ServicePaths, timeout: float) -> tuple[socket.socket, str | None]:
    """A connected socket and the TCP secret (None on Unix). Raises ConnectionError/FileNotFoundError when no
    service listens: the request was never sent."""
    if transport() == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(paths.socket))
        except BaseException:
            sock.close()
            raise
        return sock, None
    state = read_state(paths)
    if not state or state.get("transport") != "tcp":
        raise FileNotFoundError(f"no service state in {paths.state}")
    sock = socket.create_connection(("127.0.0.1", int(state["port"])), timeout=timeout)
    return sock, str(state.get("secret", ""))


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

    def request_line(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any],
                     secret: str | None) -> bytes:
        req: dict[str, Any] = {"m": method, "a": encode(list(args)), "k": encode(dict(kwargs))}
        if self.cfg:
            req["c"] = self.cfg
        if secret is not None:
            req["s"] = secret
        return dumps_line(req)

    def call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run ``method`` in the service; its result, or the exception it raised (same type)."""
        limit = self.timeout_for(method, timeout)
        deadline = time.monotonic() + limit
        started = False
        for attempt in range(3):
            try:
                sock, secret = _connect(self.paths, max(0.05, deadline - time.monotonic()))
            except (FileNotFoundError, ConnectionRefusedError, ConnectionResetError) as exc:
                if not self.autostart:
                    raise ServiceError(f"no remem service is running for {self.paths.folder}") from exc
                if started or attempt == 2:
                    raise ServiceError(f"the remem service for {self.paths.folder} is not answering "
                                       f"(log: {self.paths.log})") from exc
                start_service(self.paths.folder, embedder=self.embedder, idle_timeout=self.idle_timeout,
                              timeout=self.start_timeout)
                started = True
                continue
            except socket.timeout as exc:
                raise ServiceTimeoutError(f"connecting to the remem service at {self.paths.socket} timed out") from exc
            try:
                line = self.request_line(method, args, kwargs, secret)
                sock.settimeout(max(0.05, deadline - time.monotonic()))
                sock.sendall(line)
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
    """The running service's hello, or None when no service answers for this store (never starts one)."""
    try:
        return ServiceClient(path, autostart=False).call("_hello", timeout=timeout)
    except (RememError, OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- async client
class AsyncServiceClient:
    """The same calls over asyncio streams: a remote AsyncMemory never blocks the event loop on the socket."""

    def __init__(self, sync: ServiceClient) -> None:
        self.sync = sync

    async def _open(self, timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str | None]:
        paths = self.sync.paths
        if transport() == "unix":
            r, w = await asyncio.wait_for(asyncio.open_unix_connection(str(paths.socket), limit=MAX_LINE), timeout)
            return r, w, None
        state = read_state(paths)
        if not state or state.get("transport") != "tcp":
            raise FileNotFoundError(f"no service state in {paths.state}")
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", int(state["port"]), limit=MAX_LINE),
                                      timeout)
        return r, w, str(state.get("secret", ""))

    async def call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        sync = self.sync
        limit = sync.timeout_for(method, timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        started = False
        for attempt in range(3):
            try:
                reader, writer, secret = await self._open(max(0.05, deadline - loop.time()))
            except (FileNotFoundError, ConnectionRefusedError, ConnectionResetError) as exc:
                if not sync.autostart or started or attempt == 2:
                    raise ServiceError(f"no remem service answers for {sync.paths.folder}") from exc
                await asyncio.to_thread(start_service, sync.paths.folder, embedder=sync.embedder,
                                        idle_timeout=sync.idle_timeout, timeout=sync.start_timeout)
                started = True
                continue
            except asyncio.TimeoutError as exc:
                raise ServiceTimeoutError(f"connecting to the remem service at {sync.paths.socket} timed out") from exc
            lost: BaseException | None = None
            try:
                writer.write(sync.request_line(method, args, kwargs, secret))
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
    paths.folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    try:
        with FileLock(str(paths.start_lock), timeout=timeout, preserve_lock_file=True):
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
                    raise _start_error(paths, code)
                time.sleep(0.02)
    except Timeout as exc:
        raise ServiceError(f"timed out waiting for another process to start the remem service for "
                           f"{paths.folder}") from exc
    raise ServiceError(f"the remem service for {paths.folder} did not start within {timeout:g} s "
                       f"(log: {paths.log})")


def spawn_service(folder: Path, *, embedder: str | None = None, idle_timeout: float | None = None,
                  extra_env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Launch ``python -m remem.core.service`` detached: new session, no terminal, output to the log file."""
    paths = service_paths(folder)
    cmd = [sys.executable, "-m", "remem.core.service", "--path", str(paths.folder)]
    if embedder:
        cmd += ["--embedder", str(embedder)]
    if idle_timeout is not None:
        cmd += ["--idle-timeout", str(idle_timeout)]
    _trim_log(paths.log)
    env = {**os.environ, **(extra_env or {}), "REMEM_SERVICE": "off"}
    with open(paths.log, "ab") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(paths.folder),
                                env=env, start_new_session=True, close_fds=True)
    _SPAWNED[:] = [p for p in _SPAWNED if p.poll() is None] + [proc]  # reap finished ones; no warnings at GC
    return proc


_SPAWNED: list[subprocess.Popen[bytes]] = []


def _trim_log(log: Path, keep: int = 256 * 1024) -> None:
    try:
        if log.stat().st_size > 4 * keep:
            data = log.read_bytes()[-keep:]
            log.write_bytes(data)
    except OSError:
        pass


def _start_error(paths: ServicePaths, code: int) -> RememError:
    tail = log_tail(paths.log)
    if code == EXIT_LOCKED:
        return StoreLockedError(f"the store at {paths.folder} is open exclusively in another process "
                                f"(Memory(service='off') or REMEM_SERVICE=off); close it so the service can "
                                f"share the store. {tail}".strip())
    if "EmbedderMismatchError" in tail:
        return EmbedderMismatchError(tail)
    return ServiceError(f"the remem service for {paths.folder} exited with code {code}: {tail} "
                        f"(log: {paths.log})")


def log_tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def stop_service(path: str | os.PathLike[str] | None, timeout: float = 10.0, *, wait: bool = True) -> bool:
    """Ask the store's service to exit (it finishes in-flight calls first). True if one was running; with
    ``wait`` it returns once the process is gone and the store is free."""
    paths = service_paths(path)
    info = probe(paths.folder)
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
        if not _pid_alive(int(info.get("pid", 0))):
            return True
        time.sleep(0.05)
    return True


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:  # our own child (we spawned it): reap it, or a zombie would look alive
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except (ChildProcessError, OSError, AttributeError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def service_status(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """What ``remem doctor`` shows: running (with pid, uptime, requests), stopped, stale or unresponsive."""
    paths = service_paths(path)
    out: dict[str, Any] = {"socket": str(paths.socket), "log": str(paths.log), "transport": transport()}
    info = probe(paths.folder, timeout=2.0)
    if info is not None:
        out.update(state="running", **{k: info.get(k) for k in ("pid", "uptime_s", "requests", "embedder",
                                                                 "idle_timeout", "version", "warm")})
        return out
    state = read_state(paths)
    pid = int(state.get("pid", 0)) if state else 0
    if pid and _pid_alive(pid):
        out.update(state="unresponsive", pid=pid)
    elif paths.socket.exists() or state:
        out.update(state="stale (owner gone; replaced on next use)")
    else:
        out.update(state="stopped")
    return out


__all__ = ["AsyncServiceClient", "ServiceClient", "ServiceError", "ServicePaths", "ServiceTimeoutError",
           "decode", "encode", "probe", "service_paths", "service_status", "start_service", "stop_service",
           "store_folder"]
