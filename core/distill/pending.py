"""A durable queue of captures the LLM could not distil yet, so an outage or an empty quota loses nothing.

One JSON file per capture in a folder (``<store>/pending`` for the embedded store, ``$REMEM_HOME/pending``
for server backends). Files are written atomically (temp file + fsync + rename); a worker claims an entry by
renaming it, so two processes draining at once never distil the same capture twice, and an entry claimed by a
process that died is released again after ``stale_after`` seconds. Entries hold *redacted* messages only.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..config import private_dir, remem_home, write_private

_SUFFIX = ".json"
_CLAIMED = ".claimed"


@dataclass(frozen=True)
class PendingEntry:
    """One queued capture: its id (the file stem) and the stored payload."""

    id: str
    data: dict[str, Any]

    @property
    def attempts(self) -> int:
        return int(self.data.get("attempts", 0))

    def of_store(self, engine: Any) -> bool:
        """Whether this capture is ``engine``'s: a queue may be shared by stores (``$REMEM_HOME/pending``)."""
        return self.data.get("location") in (None, store_location(engine))


class _Queue:
    """What both queues derive from ``ids()``, ``claim()`` and ``replace()``: the envelope, length, claiming in
    turn, putting a failed entry back."""

    @staticmethod
    def _new_entry(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A sortable id (oldest first) and the stored payload of a new entry."""
        return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}", {"attempts": 0, "queued_at": time.time(), **data}

    @staticmethod
    def _retried(entry: PendingEntry, error: str | None) -> dict[str, Any]:
        """The payload of an entry put back after a failed attempt: the attempt counted, the error noted."""
        return {**entry.data, "attempts": entry.attempts + 1, **({"error": error} if error else {})}

    def ids(self) -> list[str]:
        raise NotImplementedError

    def claim(self, entry_id: str) -> PendingEntry | None:
        raise NotImplementedError

    def done(self, entry: PendingEntry) -> None:
        """The entry was distilled: delete it."""
        raise NotImplementedError

    def replace(self, entry: PendingEntry, data: dict[str, Any]) -> None:
        """Put a claimed entry back holding ``data`` (the claim ends)."""
        raise NotImplementedError

    def release(self, entry: PendingEntry, error: str | None = None) -> None:
        """Put a claimed entry back (distillation failed again), counting the attempt."""
        self.replace(entry, self._retried(entry, error))

    def __len__(self) -> int:
        return len(self.ids())

    def claimed(self) -> Iterator[PendingEntry]:
        """Claim every available entry in turn (oldest first)."""
        for entry_id in self.ids():
            entry = self.claim(entry_id)
            if entry is not None:
                yield entry


class PendingQueue(_Queue):
    """Folder-backed FIFO of JSON payloads; safe across threads and processes."""

    def __init__(self, folder: str | os.PathLike[str], *, stale_after: float = 600.0) -> None:
        self.folder = Path(folder)
        self.stale_after = stale_after

    # ------------------------------------------------------------------ writing
    def put(self, data: dict[str, Any]) -> str:
        """Store ``data`` durably; returns the entry id (sortable: oldest first)."""
        private_dir(self.folder)
        entry_id, payload = self._new_entry(data)
        self._write(self.folder / (entry_id + _SUFFIX), payload)
        return entry_id

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        write_private(path, json.dumps(data, ensure_ascii=False, default=str), durable=True)

    # ------------------------------------------------------------------ reading
    def ids(self) -> list[str]:
        """Unclaimed entry ids, oldest first (stale claims are released first)."""
        if not self.folder.is_dir():
            return []
        self._release_stale()
        return sorted(p.name[: -len(_SUFFIX)] for p in self.folder.glob("*" + _SUFFIX) if not p.name.startswith("."))

    def peek(self, *, in_flight: bool = False) -> list[PendingEntry]:
        """Every unclaimed entry, oldest first, without claiming it; ``in_flight`` adds the ones a worker is
        distilling right now (still waiting, as far as a user counting them is concerned)."""
        paths = [self.folder / (entry_id + _SUFFIX) for entry_id in self.ids()]
        if in_flight and self.folder.is_dir():
            paths += [p for p in self.folder.glob(f"*{_CLAIMED}*") if not p.name.startswith(".")]
        out = []
        for path in paths:
            try:
                out.append(PendingEntry(path.name.split(_CLAIMED, 1)[0].removesuffix(_SUFFIX), self._read(path)))
            except (OSError, ValueError):
                continue
        return sorted(out, key=lambda e: e.id)

    @staticmethod
    def _read(path: Path) -> dict[str, Any]:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a queue entry")
        return data

    # ------------------------------------------------------------------ claiming
    def claim(self, entry_id: str) -> PendingEntry | None:
        """Take an entry for processing; None when another worker got it first (or it is unreadable)."""
        src = self.folder / (entry_id + _SUFFIX)
        dst = self.folder / f"{entry_id}{_CLAIMED}{os.getpid()}"
        try:
            os.rename(src, dst)
        except FileNotFoundError:
            return None
        os.utime(dst)
        try:
            return PendingEntry(entry_id, self._read(dst))
        except (OSError, ValueError):
            dst.rename(self.folder / f".{entry_id}.corrupt")  # keep it for a human, out of the queue
            return None

    def done(self, entry: PendingEntry) -> None:
        (self.folder / f"{entry.id}{_CLAIMED}{os.getpid()}").unlink(missing_ok=True)

    def replace(self, entry: PendingEntry, data: dict[str, Any]) -> None:
        self._write(self.folder / (entry.id + _SUFFIX), data)
        (self.folder / f"{entry.id}{_CLAIMED}{os.getpid()}").unlink(missing_ok=True)

    def _release_stale(self) -> None:
        now = time.time()
        for path in self.folder.glob(f"*{_CLAIMED}*"):
            try:
                if now - path.stat().st_mtime > self.stale_after:
                    entry_id = path.name.split(_CLAIMED, 1)[0]
                    os.rename(path, self.folder / (entry_id + _SUFFIX))
            except OSError:
                continue


class CollectionQueue(_Queue):
    """The same queue in a Qdrant server's meta collection (``Memory(url=...)``): app servers keep no state.

    A claim writes this process's token onto the entry and reads it back; the one whose token is there
    proceeds. Two claims landing in the same instant can both read their own write on an eventually
    consistent cluster, so a capture may, rarely, be distilled twice (de-duplication then merges it)."""

    KIND = "pending"

    def __init__(self, state: Any, *, stale_after: float = 600.0) -> None:
        self.state = state
        self.stale_after = stale_after
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def put(self, data: dict[str, Any]) -> str:
        entry_id, payload = self._new_entry(data)
        self.state.put(self.KIND, entry_id, payload)
        return entry_id

    def _free(self, payload: dict[str, Any], now: float) -> bool:
        return not payload.get("claimed_by") or now - float(payload.get("claimed_at") or 0) > self.stale_after

    def ids(self) -> list[str]:
        now = time.time()
        return sorted(p["state_key"] for p in self.state.scan(self.KIND) if self._free(p, now))

    def peek(self, *, in_flight: bool = False) -> list[PendingEntry]:
        now = time.time()
        entries = [PendingEntry(p["state_key"], dict(p.get("data") or {})) for p in self.state.scan(self.KIND)
                   if in_flight or self._free(p, now)]
        return sorted(entries, key=lambda e: e.id)

    def claim(self, entry_id: str) -> PendingEntry | None:
        current = self.state.get(self.KIND, entry_id)
        if current is None or not self._free(current, time.time()):
            return None
        self.state.update(self.KIND, entry_id, {"claimed_by": self.owner, "claimed_at": time.time()})
        mine = self.state.get(self.KIND, entry_id)
        if mine is None or mine.get("claimed_by") != self.owner:
            return None
        return PendingEntry(entry_id, dict(mine.get("data") or {}))

    def done(self, entry: PendingEntry) -> None:
        self.state.delete(self.KIND, entry.id)

    def replace(self, entry: PendingEntry, data: dict[str, Any]) -> None:
        self.state.put(self.KIND, entry.id, data)  # rewritten without the claim


def store_location(engine: Any) -> Any:
    """What a queued capture records of its store (see :meth:`PendingEntry.of_store`)."""
    return getattr(getattr(engine, "backend", None), "location", None)


def pending_folder(engine: Any) -> Path:
    """``<store folder>/pending`` for the embedded store (``$REMEM_HOME/pending`` for a backend without state)."""
    folder = getattr(getattr(engine, "backend", None), "folder", None)
    return Path(folder) / "pending" if folder is not None else remem_home() / "pending"


def queue_for(engine: Any) -> PendingQueue | CollectionQueue:
    """The embedded store's folder queue, or a Qdrant server's collection queue (nothing on the app machine)."""
    state = getattr(getattr(engine, "backend", None), "state", None)
    if state is not None:
        return CollectionQueue(state)
    return PendingQueue(pending_folder(engine))


__all__ = ["CollectionQueue", "PendingEntry", "PendingQueue", "pending_folder", "queue_for", "store_location"]
