"""Re-embedding: rebuild dense vectors in place after the embedder changed, or for writes a failing provider
left without one. A full migration embeds everything first and writes a backup before touching the store; it
also rewrites the sparse vectors with the current recipe and completes episodes an older remem stored
(:func:`~remem.core.recall.passages.completed`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from ..types import RememError
from .backends.base import FilterSpec
from .plan import EmbedDocuments, Plan
from ..recall.passages import completed
from .records import from_payload

if TYPE_CHECKING:
    from .engine import Engine


def reembed_plan(engine: "Engine", *, pending_only: bool = False,
                 progress: Callable[[int], None] | None = None) -> Plan[int]:
    from .backends import ERASED_KEY
    from .backups import DIRS_KEY, FILES_KEY, backup

    if engine.closed:
        raise RememError("this Memory is closed")
    if pending_only and not engine.mismatch:
        # filtered here, not in Qdrant: Edge matches booleans only on indexed fields
        recs = [from_payload(f.id, f.payload) for f in engine.scan(FilterSpec())
                if f.payload.get("embedded") is False]
        for start in range(0, len(recs), 64):
            chunk = recs[start:start + 64]
            vecs = yield EmbedDocuments(chunk, keep_on_error=False)
            with engine.write_lock:
                engine.backend.upsert([engine.point(replace(r, embedded=True), v) for r, v in zip(chunk, vecs)])
            if progress:
                progress(len(chunk))
        return len(recs)
    # episodes an older remem stored get what it did not know of their neighbours (passages, what came after)
    recs = completed([from_payload(f.id, f.payload) for f in engine.scan(FilterSpec())])
    vectors: list[list[float] | None] = []
    for start in range(0, len(recs), 64):  # embed everything before touching the store
        vectors.extend((yield EmbedDocuments(recs[start:start + 64], keep_on_error=False)))
    with engine.write_lock:
        if recs:
            saved, engine.mismatch = engine.mismatch, None
            try:
                backup(engine)
            finally:
                engine.mismatch = saved
        engine.backend.recreate(engine.embedder.dim)
        for start in range(0, len(recs), 256):
            engine.backend.upsert([engine.point(replace(r, embedded=True), v)
                                   for r, v in zip(recs[start:start + 256], vectors[start:start + 256])])
            if progress:
                progress(len(recs[start:start + 256]))
        kept = {k: v for k, v in (engine.backend.read_meta() or {}).items()
                if k in (DIRS_KEY, FILES_KEY, ERASED_KEY)}  # where backups went, and when words last left
        engine.backend.write_meta({**engine.store_meta(), **kept})
        engine.mismatch = None
    return len(recs)


__all__ = ["reembed_plan"]
