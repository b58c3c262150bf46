"""Backups: timestamped, gzipped exports of every tenant, and their pruning once they hold forgotten words.

A backup is a copy of the store as it was, so after a ``forget`` (or an edit, or a redaction re-scan) it still
holds the words that left the store. The store notes the time words last left it (every delete and every edit
that drops words: :func:`~remem.core.store.erasure.note_removed`): the embedded store in a file, a Qdrant server
in its meta collection (``ERASED_KEY``). A compaction then deletes every backup taken before that time in each
folder backups were written to, after writing a fresh one there, so a user who kept backups still has one.
Backups taken since hold nothing forgotten and are kept. The time is taken when a backup starts, so one that
raced a forget counts as taken before it.

Which backups are the store's own: for the embedded store, those in its ``backups`` folder; elsewhere (a folder
of the user's, or ``$REMEM_HOME/backups``, which every Qdrant server store shares), only those it recorded in
its meta (``FILES_KEY``). Only those are ever pruned or rotated out.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..config import private_dir
from ..scope import ALL_TENANTS
from ..types import utcnow
from .backends import ERASED_FILE, ERASED_KEY, META_FILE
from .transfer import export

if TYPE_CHECKING:
    from .engine import Engine

BACKUPS = "backups"  # the default folder, in the store's own
PATTERN = "remem-*.jsonl.gz"
STAMP = "%Y%m%dT%H%M%S%fZ"
DIRS_KEY = "backup_dirs"  # folders other than the default that backups were written to (the store's meta)
FILES_KEY = "backup_files"  # the backups written there: a folder of the user's may hold other stores' too
_TAKING: dict[str, threading.RLock] = {}  # per store: a backup is written whole before stale ones are pruned
_TAKING_GUARD = threading.Lock()


def _taking(engine: "Engine") -> threading.RLock:
    """The store's backup lock. One process has the store open (the backend's lock), so a thread lock is enough:
    a backup still being written when a compaction prunes would otherwise land after it, stale and kept."""
    with _TAKING_GUARD:
        return _TAKING.setdefault(engine.backend.location, threading.RLock())


def backup(engine: "Engine", directory: str | os.PathLike[str] | None = None, *, keep: int = 10) -> Path:
    """A timestamped, gzipped export of every tenant next to the store (or in ``directory``); keeps the ``keep``
    newest of this store's own backups there."""
    base = Path(directory).expanduser().resolve() if directory else default_backup_dir(engine)
    with _taking(engine):
        path = private_dir(base) / f"remem-{utcnow().strftime(STAMP)}.jsonl.gz"
        if base != _own_folder(engine):
            _remember(engine, path)
        export(engine, path, scope=ALL_TENANTS)
        olds = sorted(p for p in _own_backups(_meta(engine), _own_folder(engine)) if p.parent == base)
        for stale in olds[:-keep] if keep > 0 else []:
            stale.unlink(missing_ok=True)
    return path


def default_backup_dir(engine: "Engine") -> Path:
    from ..config import remem_home

    folder = getattr(engine.backend, "folder", None)
    return Path(folder) / BACKUPS if folder is not None else remem_home() / BACKUPS


def taken_at(path: Path) -> dt.datetime | None:
    """When the backup at ``path`` was started (from its name), or None for a file not named as one."""
    try:
        return dt.datetime.strptime(path.name[len("remem-"):-len(".jsonl.gz")], STAMP).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def stale_backups(folder: str | os.PathLike[str]) -> list[Path]:
    """The backups of the embedded store in ``folder``, in every folder they were written to, taken before words
    last left it (none if they never did). Reads only files: ``remem doctor`` counts them without opening it."""
    folder = Path(folder)
    try:
        erased = int((folder / ERASED_FILE).read_text("ascii"))
    except (OSError, ValueError):
        return []
    return _taken_before(erased, _own_backups(_read_json(folder / META_FILE), folder / BACKUPS))


def prune_stale(engine: "Engine", *, keep: int = 10) -> list[Path]:
    """Delete the store's backups taken before words last left it, each folder first given a fresh backup when
    none of its own is newer (see the module doc); returns what was deleted."""
    with _taking(engine):  # a backup being written now is finished first, and judged with the others
        stale = _stale_of(engine)
        own = list(_own_backups(_meta(engine), _own_folder(engine))) if stale else []
        for base in sorted({p.parent for p in stale}):
            if all(p in stale for p in own if p.parent == base):
                backup(engine, base, keep=keep + len(stale))
        for path in stale:
            path.unlink(missing_ok=True)
    return stale


def _stale_of(engine: "Engine") -> list[Path]:
    folder = getattr(engine.backend, "folder", None)
    if folder is not None:
        return stale_backups(folder)
    meta = _meta(engine)
    erased = meta.get(ERASED_KEY)
    return _taken_before(erased, _own_backups(meta, None)) if isinstance(erased, int) else []


def _taken_before(erased_ns: int, backups: Iterator[Path]) -> list[Path]:
    since = dt.datetime.fromtimestamp(erased_ns / 1e9, dt.timezone.utc)
    return [p for p in backups if (taken_at(p) or since) < since]


def _own_folder(engine: "Engine") -> Path | None:
    """The folder all of whose backups are this store's: the embedded store's own (a server's default is shared)."""
    folder = getattr(engine.backend, "folder", None)
    return Path(folder) / BACKUPS if folder is not None else None


def _own_backups(meta: dict[str, Any], own_folder: Path | None) -> Iterator[Path]:
    files = set(meta.get(FILES_KEY, []))
    folders = {Path(d) for d in meta.get(DIRS_KEY, [])} | ({own_folder} if own_folder is not None else set())
    for base in sorted(folders):
        if base.is_dir():  # a folder of the user's own may hold other stores' backups: only those it wrote
            yield from (p for p in sorted(base.glob(PATTERN)) if taken_at(p) is not None
                        and (base == own_folder or str(p) in files))


def _meta(engine: "Engine") -> dict[str, Any]:
    return engine.backend.read_meta() or {}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(engine: "Engine", path: Path) -> None:
    """Record a backup written outside the store's own folder (and its folder), for :func:`stale_backups` (the
    caller holds :func:`_taking`: two backups at once would each write the record without the other's)."""
    meta = engine.backend.read_meta()
    if meta is None:
        return
    files = [f for f in meta.get(FILES_KEY, []) if Path(f).exists()] + [str(path)]
    dirs = list(dict.fromkeys([*meta.get(DIRS_KEY, []), str(path.parent)]))
    engine.backend.write_meta({**meta, DIRS_KEY: dirs, FILES_KEY: files})


__all__ = ["ERASED_KEY", "backup", "default_backup_dir", "prune_stale", "stale_backups", "taken_at"]
