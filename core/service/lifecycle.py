"""The service process from outside: spawning it detached (output to the store's log), the exit codes it ends
with, and reading why it could not start. Imports nothing of the client, which calls it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from ..config import private_opener
from ..types import EmbedderMismatchError, RememError, StoreLockedError
from .paths import ServicePaths, service_paths
from .wire import ServiceCrashedError, ServiceError, ServiceSocketError

EXIT_LOCKED = 3     # service exit code: the store is open in-process elsewhere
EXIT_BUSY = 4       # service exit code: another live service holds the folder but does not answer
EXIT_SOCKET = 5     # service exit code: its socket path or socket folder is unusable or not ours


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


def start_error(paths: ServicePaths, code: int) -> RememError:
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
    if code < 0:  # killed by a signal: not something to retry in the caller's own process
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        try:
            free = shutil.disk_usage(paths.folder).free // 2**20
        except OSError:
            free = -1
        return ServiceCrashedError(f"the remem service for {paths.folder} was killed by {name} while opening the "
                                   f"store ({free} MB free on its disk; a full disk makes Qdrant's mapped files "
                                   f"fail). remem will not open it in this process, where that would kill it; "
                                   f"free some space and retry (log: {paths.log})")
    return ServiceError(f"the remem service for {paths.folder} exited with code {code}: {tail} "
                        f"(log: {paths.log})")


def log_tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def pid_alive(pid: int) -> bool:
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



__all__ = ["EXIT_BUSY", "EXIT_LOCKED", "EXIT_SOCKET", "log_tail", "pid_alive", "spawn_service", "start_error"]
