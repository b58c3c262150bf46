"""The one call between the write path and the relation store for the relations a memory comes with (an LLM
distiller's, vetted: :mod:`.given`). Its own module: the relation store imports the entity hooks, which import
:mod:`.given`, so neither may import the relation store back."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .given import relation_claims
from .relations import record_claims

if TYPE_CHECKING:
    from ..store.engine import Engine
    from ..types import MemoryRecord

log = logging.getLogger("remem.entities")


def hand_over(engine: "Engine", rec: "MemoryRecord") -> None:
    """Give the relation store the relations ``rec``'s metadata gives (the one call between the write path and
    it): recorded as said by ``rec``, true from each claim's ``since`` (else when ``rec`` was said), closed when
    ``rec`` stops being true. Never raises: the memory and its links are stored whatever becomes of them."""
    try:
        claims = relation_claims(rec)
        if not claims:
            return
        when = rec.occurred_at or rec.valid_from or rec.created_at
        record_claims(engine, rec.scope, claims, rec.id, when, until=rec.valid_until)
    except Exception as exc:  # noqa: BLE001 - relations are an addition to the memory, never a reason to refuse it
        log.warning("could not store the relations of memory %s: %s: %s", rec.id, type(exc).__name__, exc)


__all__ = ["hand_over"]
