"""Where a store's service keeps its socket, locks, state and log, and whether that place can be trusted.

The socket normally lives inside the store folder (0700: the folder's mode is the first access control). A
store path too long for AF_UNIX moves the socket to ``$XDG_RUNTIME_DIR`` or ``/tmp/remem-<uid>``, folders other
accounts may have created first: both sides refuse such a folder unless it is a real folder (not a symlink)
owned by this account with no group/other access.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

from ..config import OWN_UID, default_store_path
from .wire import ServiceSocketError

SOCKET_NAME = "service.sock"
LOCK_NAME = "service.lock"          # held by the running service for its whole life: one owner per folder
START_LOCK_NAME = "service.start.lock"  # held by a client while it starts the service: one spawn at a time
STATE_NAME = "service.json"         # pid, transport, started_at (and port + secret over TCP); mode 0600
LOG_NAME = "service.log"
MAX_SOCKET_PATH = 100               # AF_UNIX paths are capped at ~104-108 bytes


@dataclasses.dataclass(frozen=True)
class ServicePaths:
    """Where a store's service keeps its socket, locks, state and log (all inside the store folder)."""

    folder: Path
    socket: Path
    lock: Path
    start_lock: Path
    state: Path
    log: Path

    @property
    def socket_elsewhere(self) -> bool:
        """True when the socket had to move out of the store folder (a path too long for AF_UNIX)."""
        return self.socket.parent != self.folder


def store_folder(path: str | os.PathLike[str] | None) -> Path:
    """The absolute store folder, resolved exactly like the embedded backend does."""
    return Path(path if path is not None else default_store_path()).expanduser().resolve()


def fallback_socket_dir(name: str = "x" * 21) -> Path:
    """Where a socket goes when the store's path is too long for AF_UNIX: the session's runtime folder, else a
    folder in the user's home (no other account can create it first, as it could ``/tmp/remem-<uid>``), else,
    when even that path is too long, ``/tmp/remem-<uid>`` (checked to be ours and private before use)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime)
    try:
        home = Path.home() / ".remem-run"
        if home.parent.is_dir() and len(os.fsencode(str(home / name))) <= MAX_SOCKET_PATH:
            return home
    except (RuntimeError, KeyError):  # no home directory for this account
        pass
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(f"/tmp/remem-{uid}")


def service_paths(path: str | os.PathLike[str] | None) -> ServicePaths:
    folder = store_folder(path)
    sock = folder / SOCKET_NAME
    if len(os.fsencode(str(sock))) > MAX_SOCKET_PATH:
        name = hashlib.sha1(str(folder).encode()).hexdigest()[:16] + ".sock"
        sock = fallback_socket_dir(name) / name
    return ServicePaths(folder, sock, folder / LOCK_NAME, folder / START_LOCK_NAME, folder / STATE_NAME,
                        folder / LOG_NAME)


def check_private_folder(folder: Path) -> None:
    """Raise :class:`ServiceSocketError` unless ``folder`` is a real folder of this account, mode 0700 or
    tighter. FileNotFoundError when it does not exist (the service creates it)."""
    st = os.lstat(folder)
    problem = None
    if stat.S_ISLNK(st.st_mode):
        problem = "is a symbolic link"
    elif not stat.S_ISDIR(st.st_mode):
        problem = "is not a folder"
    elif st.st_uid != os.getuid():
        problem = f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    elif st.st_mode & 0o077:
        problem = f"is open to other accounts (mode {stat.S_IMODE(st.st_mode):04o}, needs 0700)"
    if problem:
        raise ServiceSocketError(f"refusing the remem socket folder {folder}: it {problem}; another account could "
                                 f"impersonate the service there. Remove it, or set XDG_RUNTIME_DIR to a private "
                                 f"folder, or use a shorter store path")


def make_socket_dir(paths: ServicePaths) -> None:
    """Create the socket's fallback folder 0700 (never reusing one another account made); the service calls it."""
    if not paths.socket_elsewhere:
        return
    folder = paths.socket.parent
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    check_private_folder(folder)


def clear_socket_path(path: Path) -> str | None:
    """Make room for our socket (the caller holds the service lock, so nobody else serves this store): a stale
    socket, or debris of ours (a file, a symlink, an empty folder), is removed. Anything else is an error, so
    clients report it instead of each falling back to an exclusive in-process store. Returns what was removed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    mode = st.st_mode
    ours = st.st_uid == os.getuid()
    if stat.S_ISSOCK(mode) or (ours and (stat.S_ISREG(mode) or stat.S_ISLNK(mode))):
        path.unlink()
        return "a stale socket" if stat.S_ISSOCK(mode) else "a file that was not a socket"
    if ours and stat.S_ISDIR(mode):
        try:
            path.rmdir()
            return "an empty folder"
        except OSError:
            pass
    kind = "a folder with files in it" if stat.S_ISDIR(mode) else "not a socket"
    owner = "" if ours else f", owned by uid {st.st_uid}"
    raise ServiceSocketError(f"{path} is {kind}{owner}, where the remem service needs its socket; remem will not "
                             f"delete it. Move it away so processes can share the store")


def transport() -> str:
    """``unix`` where Unix sockets exist, else ``tcp`` (loopback + per-store secret); REMEM_SERVICE_TRANSPORT
    overrides (tests use it to exercise the TCP path)."""
    env = (os.environ.get("REMEM_SERVICE_TRANSPORT") or "").strip().lower()
    if env in ("unix", "tcp"):
        return env
    return "unix" if hasattr(socket, "AF_UNIX") else "tcp"


def read_state(paths: ServicePaths) -> dict[str, Any] | None:
    """The running service's state file, if it is one of this account's (a regular 0600 file it owns): one
    another account planted would send our requests, unredacted, to its own listener."""
    try:
        st = os.lstat(paths.state)
        if not stat.S_ISREG(st.st_mode) or (OWN_UID is not None and (st.st_uid != OWN_UID or st.st_mode & 0o077)):
            return None
        data = json.loads(paths.state.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


__all__ = ["LOCK_NAME", "LOG_NAME", "SOCKET_NAME", "START_LOCK_NAME", "STATE_NAME", "ServicePaths",
           "check_private_folder", "clear_socket_path", "fallback_socket_dir", "make_socket_dir", "read_state",
           "service_paths", "store_folder", "transport"]
