"""Starting, stopping and describing a store's service: one spawn at a time, a detached process, a clear error
when it cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from ..config import private_dir, private_opener
from ..types import EmbedderMismatchError, RememError, StoreLockedError
from .client import START_TIMEOUT, ServiceClient, probe
from .paths import ServicePaths, read_state, service_paths, transport
from .wire import ServiceError, ServiceSocketError

EXIT_LOCKED = 3     # service exit code: the store is open in-process elsewhere
EXIT_BUSY = 4       # service exit code: another live service holds the folder but does not answer
EXIT_SOCKET = 5     # service exit code: its socket path or socket folder is unusable or not ours


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
    with open(paths.log, "ab", opener=private_opener) as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(paths.folder),
                                env=env, start_new_session=True, close_fds=True)
    _SPAWNED[:] = [p for p in _SPAWNED if p.poll() is None] + [proc]  # reap finished ones; no warnings at GC
    return proc


_SPAWNED: list[subprocess.Popen[bytes]] = []


def _trim_log(log: Path, keep: int = 256 * 1024) -> None:
    try:
        if log.stat().st_size > 4 * keep:
            data = log.read_bytes()[-keep:]
            with open(log, "wb", opener=private_opener) as fh:
                fh.write(data)
    except OSError:
        pass


def _start_error(paths: ServicePaths, code: int) -> RememError:
    tail = log_tail(paths.log)
    if code == EXIT_LOCKED:
        return StoreLockedError(f"the store at {paths.folder} is open exclusively in another process "
                                f"(Memory(service='off') or REMEM_SERVICE=off); close it so the service can "
                                f"share the store. {tail}".strip())
    if code == EXIT_SOCKET:
        return ServiceSocketError(f"the remem service for {paths.folder} cannot use its socket: "
                                  f"{log_tail(paths.log, 1).split('ServiceSocketError: ', 1)[-1]}")
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
    if pid and _pid_alive(pid):
        out.update(state="unresponsive", pid=pid)
    elif os.path.lexists(paths.socket) or state:
        out.update(state="stale (owner gone; replaced on next use)")
    else:
        out.update(state="stopped")
    return out


__all__ = ["EXIT_BUSY", "EXIT_LOCKED", "EXIT_SOCKET", "log_tail", "service_status", "spawn_service",
           "start_service", "stop_service"]
