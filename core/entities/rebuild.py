"""Linking the memories of a store written before entities (or with ``entities=False``): each memory's
entities found and its links and ``ident`` tokens rewritten in place, its dense vector untouched."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..store.records import from_payload
from ..types import RememError
from . import hooks
from .store import LINK_FIELD

if TYPE_CHECKING:
    from ..store.engine import Engine

PAGE = 128


def link_all(engine: "Engine", *, scope: Any = None, progress: Callable[[int], None] | None = None) -> int:
    """Link every memory of ``scope`` (``ALL_TENANTS``: the whole store); returns how many were read."""
    engine.check_usable()
    if not hooks.enabled(engine):
        raise RememError("entities are off for this Memory (entities=False): nothing to link")
    if hooks.index(engine) is None:
        raise RememError(f"this store's backend ({engine.backend.kind}) keeps no entities")
    flt = engine.filter(scope)
    n = 0
    offset = None
    while True:
        found, offset = engine.backend.scroll(flt, limit=PAGE, offset=offset)
        with engine.write_lock:
            for f in found:
                rec = from_payload(f.id, f.payload)
                point = engine.point(rec, None)  # linked by LocalMemory.point
                if point.payload.get(LINK_FIELD) != f.payload.get(LINK_FIELD):
                    engine.backend.set_vectors([point])
                    engine.backend.set_payload([f.id], {LINK_FIELD: point.payload.get(LINK_FIELD, [])})
        n += len(found)
        if progress and found:
            progress(len(found))
        if offset is None or not found:
            return n
