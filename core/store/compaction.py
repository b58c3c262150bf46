"""Compaction: the store's files rewritten with only what it holds now.

Qdrant keeps a deleted or overwritten point's bytes in its write-ahead log and segment files until it rewrites
them, which it does on its own schedule: the words of a forgotten memory (or of an edited one, or of a
neighbour's context before the forget rewrote it) stay on disk after ``forget`` answered. :func:`compact`
builds a new shard beside the live one from every live point (its payload and its stored dense vector: nothing
is embedded again, as ``reembed`` would), puts it in the live one's place and deletes the old files. The live
shard answers reads and takes writes until the swap (a hook's capture does not wait for a compaction): the ids
written meanwhile are noted, and under the write lock, just before the swap, the new shard gets them as they
are then (or loses them, if deleted). A forget or an edit that drops words while copying makes the copy start
again (its files could hold them as copied), and the last of ``ATTEMPTS`` holds the write lock throughout. A
crash leaves one whole shard (``EdgeBackend.rewrite``).

It then deletes the backups taken before words last left the store (they hold them), after writing a fresh one
where none is newer (:mod:`.backups`), unless ``prune_backups=False``.

Only the embedded store's files: on a Qdrant server other processes write to the same collection, and the server
compacts its own segments (its vacuum optimizer) and WAL; there only the backups are pruned.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..types import RememError
from . import backups
from .backends.base import FilterSpec, Found, PointData
from .records import from_payload

if TYPE_CHECKING:
    from .engine import Engine

PAGE = 256
ATTEMPTS = 3  # copies made while writes go on, the last one holding the write lock


def compact(engine: "Engine", *, progress: Callable[[int], None] | None = None, prune_backups: bool = True) -> int:
    """Rewrite the embedded store with its live records only, then prune the backups that hold forgotten words
    (see the module doc); returns how many records. Writes go on while the new files are built; the write lock
    is held only to give them what was written meanwhile, and to swap."""
    engine.check_usable()
    rewrite = getattr(engine.backend, "rewrite", None)
    if rewrite is None:  # a Qdrant server rewrites its own files (other processes write to it): the backups are ours
        if prune_backups:
            backups.prune_stale(engine)
        return engine.backend.count(FilterSpec())
    done = reported = 0

    def pages() -> Iterator[list[PointData]]:
        nonlocal reported
        offset, copied = None, 0
        while True:
            found, offset = engine.backend.scroll(FilterSpec(), limit=PAGE, offset=offset)
            page = _points(engine, found)
            yield page
            copied += len(page)
            if progress and copied > reported:  # a copy started again reports only what goes past the last one
                progress(copied - reported)
                reported = copied
            if offset is None or not found:
                return

    def settle(touched: set[str]) -> tuple[list[PointData], list[str]]:
        """What the ids written since the rewrite began are now: points as stored, and ids deleted."""
        nonlocal done
        ids = sorted(touched)
        found = [f for start in range(0, len(ids), PAGE) for f in engine.backend.retrieve(ids[start:start + PAGE])]
        kept = {f.id for f in found}
        done = engine.backend.count(FilterSpec())  # what the live shard holds, as the new one will
        return _points(engine, found), [i for i in ids if i not in kept]

    for attempt in range(ATTEMPTS):  # a forget while copying: copied again, the last time with writes waiting
        with engine.write_lock if attempt == ATTEMPTS - 1 else contextlib.nullcontext():
            if rewrite(pages(), engine.embedder.dim, settle, engine.write_lock):
                break
    else:  # only writes from this thread (a progress callback) can get past the lock
        raise RememError("memories were forgotten while compacting, from the compaction's own thread; run it again")
    if prune_backups:
        backups.prune_stale(engine)
    return done


def _points(engine: "Engine", found: Sequence[Found]) -> list[PointData]:
    """Stored points as they are written again: payload and stored dense vector (nothing embedded again)."""
    recs = [from_payload(f.id, f.payload) for f in found]
    dense = engine.backend.dense_vectors([r.id for r in recs])
    return [engine.point(replace(r, embedded=r.id in dense or not engine.dense), dense.get(r.id)) for r in recs]


__all__ = ["compact"]
