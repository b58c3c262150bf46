"""The stored memories a new candidate resembles: what reconciliation compares it with.

Both distillers reconcile against memories, never against what was said (episodes) or session summaries: the
LLM one asks a model what to do with each candidate (add / merge / supersede / drop), the keyless one acts on a
correction's own words (:mod:`~remem.core.distill.corrections`).
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from .admission import content_words
from .candidates import Candidate
from .episodes import EPISODE_KIND
from ..types import MemoryRecord, RememError, Scope

log = logging.getLogger("remem.distill")

MEMORIES_ONLY = {"kind": {"$nin": ["summary", EPISODE_KIND]}}


def similar_memories(engine: Any, scope: Scope, cands: Sequence[Candidate], k: int) -> dict[int, list[MemoryRecord]]:
    """Up to ``k`` valid memories in ``scope`` itself that resemble each candidate (by index; none listed for a
    candidate with none). A failed search leaves that candidate without neighbours: it is added as it is."""
    out: dict[int, list[MemoryRecord]] = {}
    for i, cand in enumerate(cands):
        try:
            try:
                hits = engine.search(cand.text, scope=scope, limit=k + 2, reinforce=False, where=MEMORIES_ONLY)
            except TypeError:  # a client without the reinforce switch
                hits = engine.search(cand.text, scope=scope, limit=k + 2, where=MEMORIES_ONLY)
        except RememError as exc:
            log.debug("neighbour search failed: %s", exc)
            continue
        words = content_words(cand.text)
        recs = [h.record for h in hits if h.record.kind not in ("summary", EPISODE_KIND) and h.record.scope == scope
                and (engine.dense or words & content_words(h.record.text))][:k]
        if recs:
            out[i] = recs
    return out


__all__ = ["MEMORIES_ONLY", "similar_memories"]
