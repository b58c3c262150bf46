"""Compaction: the store's files rewritten with only what it holds now.

Qdrant keeps a deleted or overwritten point's bytes in its write-ahead log and segment files until it rewrites
them, which it does on its own schedule: the words of a forgotten memory (or of an edited one, or of a
neighbour's context before the forget rewrote it) stay on disk after ``forget`` answered. :func:`compact`
reads every live point (payload and its stored dense vector), backs the store up, recreates the collection and
writes them back: nothing is embedded again (``reembed`` does that, at the embedder's speed), and the deleted
bytes are gone with the old files. Backups taken before still hold what they held: delete those too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from ..types import RememError
from .backends.base import FilterSpec
from .records import from_payload

if TYPE_CHECKING:
    from .engine import Engine

CHUNK = 256


def compact(engine: "Engine", *, progress: Callable[[int], None] | None = None) -> int:
    """Rewrite the store with its live records only (see the module doc); returns how many. Holds the write
    lock throughout: no write lands in the old files while they are read, or is lost with them."""
    from .transfer import backup

    engine.check_usable()
    if engine.mismatch:
        raise RememError(f"the store's vectors were made by another embedder ({engine.mismatch}): run "
                         "`remem reembed`, which rewrites the store too")
    with engine.write_lock:
        recs = [from_payload(f.id, f.payload) for f in engine.scan(FilterSpec())]
        dense: dict[str, list[float]] = {}
        for start in range(0, len(recs), CHUNK):
            dense.update(engine.backend.dense_vectors([r.id for r in recs[start:start + CHUNK]]))
        if recs:
            backup(engine)  # read back above; if writing them fails below, this export restores them
        engine.backend.recreate(engine.embedder.dim)
        for start in range(0, len(recs), CHUNK):
            chunk = recs[start:start + CHUNK]
            engine.backend.upsert([engine.point(replace(r, embedded=r.id in dense or not engine.dense),
                                                dense.get(r.id)) for r in chunk])
            if progress:
                progress(len(chunk))
        engine.backend.optimize()  # the store's remem.json is kept: its recipe is what reembed would change
    return len(recs)


__all__ = ["compact"]
