"""Compaction: the store's files rewritten with only what it holds now.

Qdrant keeps a deleted or overwritten point's bytes in its write-ahead log and segment files until it rewrites
them, which it does on its own schedule: the words of a forgotten memory (or of an edited one, or of a
neighbour's context before the forget rewrote it) stay on disk after ``forget`` answered. :func:`compact`
builds a new shard beside the live one from every live point (its payload and its stored dense vector: nothing
is embedded again, as ``reembed`` would), puts it in the live one's place and deletes the old files. The live
shard answers reads until the swap, and a crash leaves one whole shard (``EdgeBackend.rewrite``).

It then deletes the backups taken before words last left the store (they hold them), after writing a fresh one
where none is newer (:mod:`.backups`), unless ``prune_backups=False``.

Only the embedded store: on a Qdrant server other processes write to the same collection, and the server
compacts its own segments (its vacuum optimizer) and WAL.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterator

from ..types import RememError
from . import backups
from .backends.base import FilterSpec, PointData
from .records import from_payload

if TYPE_CHECKING:
    from .engine import Engine

PAGE = 256


def compact(engine: "Engine", *, progress: Callable[[int], None] | None = None, prune_backups: bool = True) -> int:
    """Rewrite the embedded store with its live records only, then prune the backups that hold forgotten words
    (see the module doc); returns how many records. Holds the write lock while rewriting, so no write lands in
    the old files while they are read."""
    engine.check_usable()
    rewrite = getattr(engine.backend, "rewrite", None)
    if rewrite is None:
        raise RememError("compact() rewrites the embedded store's files; a Qdrant server compacts its own "
                         "(its vacuum optimizer), and other processes write to it")
    done = 0

    def pages() -> Iterator[list[PointData]]:
        nonlocal done
        offset = None
        while True:
            found, offset = engine.backend.scroll(FilterSpec(), limit=PAGE, offset=offset)
            recs = [from_payload(f.id, f.payload) for f in found]
            dense = engine.backend.dense_vectors([r.id for r in recs])
            yield [engine.point(replace(r, embedded=r.id in dense or not engine.dense), dense.get(r.id))
                   for r in recs]
            done += len(recs)
            if progress and recs:
                progress(len(recs))
            if offset is None or not found:
                return

    with engine.write_lock:
        rewrite(pages(), engine.embedder.dim)
    if prune_backups:
        backups.prune_stale(engine)
    return done


__all__ = ["compact"]
