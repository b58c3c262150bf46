"""One ranked search inside Qdrant: BM25, dense and identifier candidates fused, then decay.

The engine's ``search()`` runs the recall plan (:mod:`remem.core.recall.planner`) over this primitive: the
plan may call it more than once per question (a time window, an anchor event), always with the same filter
builder, so every call stays inside the caller's scope.

What is valid "now" is checked here rather than in Qdrant: a filter condition besides the tenant makes Qdrant
check every point of the tenant, and the two validity ranges cost a third of a search (100k memories in 20
tenants, BM25 only, one process: p50 / p95 5.3 / 9.5 ms with them in the filter, 3.6 / 6.0 ms checked here;
``python -m remem.bench.validity_check``). So the query asks more hits than wanted under the scope's own
filter, drops those not valid at ``valid_ts`` (superseded, expired, not yet valid), and asks again with the
validity ranges in the filter only when too few are left. How many more it asks follows the share the store
dropped lately (:class:`DropRate`); a store that still often asks twice puts the ranges in the filter at once.
A record not valid then is never returned. BM25 alone ranks the same either way (its scores do not depend on
the filter); when lists are fused (identifiers, dense), an invalid record can still hold a rank in one list and
move a valid one down in the fusion.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from ..recall import aliases, lexical, support
from ..types import SearchHit, SparseVec
from .backends.base import FilterSpec, PrefetchSpec
from .records import from_payload, valid_payload, valid_within

if TYPE_CHECKING:
    from ..settings import Settings
    from .backends.base import Backend

DENSE_WEIGHT = 0.5  # BM25 over text+context leads; the dense list refines (LoCoMo: +0.004 R@10, steadier MRR)
SPARE = 5  # hits asked beyond the limit (a quarter of it, at least this), so that the invalid ones dropped
# seldom need a second query: stores that keep superseded versions in the same words as the current ones have
# them near the top. search(limit=10) asks 62 for its 50 candidates; a hit read costs ~25 us of payload


def fixed_spare(limit: int) -> int:
    """The spare a search asks when nothing says more is needed: a quarter of ``limit``, at least :data:`SPARE`."""
    return max(SPARE, limit // 4)


class DropRate:
    """What a store's searches dropped lately as not valid now (moving averages), and what it says the next
    search should do.

    A store that supersedes often has old versions, in the same words as the current ones, among its top hits:
    with a fixed spare, three in ten of its searches needed the second query. So the spare follows the share
    of asked hits dropped, and a store whose searches still need the second query often (at least
    :attr:`again_max` of them) or drop half of what they ask puts the validity ranges in Qdrant's filter at
    once (one query, as before validity was checked on the hits). It measures again on the hits every
    :attr:`probe_every` searches, in case that changed. One per open store, shared by its searches (threads
    may race on it: it is a hint, never a result)."""

    share_max = 0.5  # from this share of asked hits dropped on, the ranges cost less in the filter
    again_max = 0.1  # a search asking twice is a store's slowest: past this rate, the filter is cheaper
    probe_every = 20

    def __init__(self, weight: float = 0.2) -> None:
        self.weight = weight
        self.share = 0.0  # of the hits asked, dropped
        self.again = 0.0  # of the searches, asked a second time
        self._filtered = 0

    def spare(self, limit: int) -> int | None:
        """Hits to ask beyond ``limit``; None when validity belongs in the filter for this search."""
        if self.share >= self.share_max or self.again >= self.again_max:
            if self._filtered < self.probe_every:
                self._filtered += 1
                return None
            self._filtered = 0  # measure again on the hits
        share = min(self.share, self.share_max)
        return max(fixed_spare(limit), math.ceil(1.5 * limit * share / (1.0 - share)))

    def saw(self, asked: int, dropped: int, again: bool) -> None:
        """A search on the hits asked ``asked``, dropped ``dropped`` of them and asked ``again`` or not."""
        if asked:
            self.share += self.weight * (dropped / asked - self.share)
        self.again += self.weight * (float(again) - self.again)


def ranked(backend: "Backend", settings: "Settings", query: str, qvec: list[float] | None, flt: FilterSpec,
           limit: int, now_ts: float | None = None, valid_ts: float | None = None,
           drops: DropRate | None = None, floor: float | None = None,
           extra_ident: SparseVec | None = None, alias_bm25: SparseVec | None = None) -> list[SearchHit]:
    """Up to ``limit`` hits for ``query`` under ``flt``, best first by decayed score; with ``valid_ts``, only
    records valid then (``flt`` holding no validity condition of its own). ``drops``: the store's recent drop
    share, which sets the spare and learns from this search. ``floor``: the embedder's relevance floor
    (:mod:`~remem.core.recall.support`). ``alias_bm25``: other names of entities the query names by an alias,
    added to its BM25 terms (:mod:`~remem.core.recall.aliases`)."""
    now_ts = time.time() if now_ts is None else now_ts
    spare = 0
    if valid_ts is not None:
        planned = drops.spare(limit) if drops is not None else fixed_spare(limit)
        if planned is not None:
            spare = planned
        else:  # this store drops most of what it asks: the ranges go in the filter
            flt, valid_ts = valid_within(flt, valid_ts), None
    depth = max(settings.prefetch, limit * 2, limit + spare)
    prefetches = [PrefetchSpec("bm25", aliases.expand(lexical.bm25_query(query), alias_bm25), depth)]
    if qvec:
        prefetches.append(PrefetchSpec("dense", qvec, depth, weight=DENSE_WEIGHT))
    ident = lexical.ident_vector(query)
    if ident[0]:
        prefetches.append(PrefetchSpec("ident", ident, depth))
    weight = float(getattr(settings, "entity_weight", 1.0)) or float(getattr(settings, "relation_weight", 0.0))
    if extra_ident and extra_ident[0] and weight > 0:  # the entities the question names (core.entities)
        prefetches.append(PrefetchSpec("ident", extra_ident, depth, weight=weight))
    prefetches = [p for p in prefetches if not isinstance(p.vector, tuple) or p.vector[0]]
    if not prefetches:
        return []
    if valid_ts is None:
        found = backend.query(prefetches, flt, limit, settings.rrf_k)  # the plan asks deeper than it returns
    else:
        asked = backend.query(prefetches, flt, limit + spare, settings.rrf_k)
        valid = [f for f in asked if valid_payload(f.payload, valid_ts)]
        found = valid[:limit]
        again = len(found) < limit and len(asked) == limit + spare  # too many dropped, and more may match
        if again:
            found = backend.query(prefetches, valid_within(flt, valid_ts), limit, settings.rrf_k)
        if drops is not None:
            drops.saw(len(asked), len(asked) - len(valid), again)
    hits = [SearchHit(record=(rec := from_payload(f.id, f.payload)), relevance=f.score,
                      score=settings.decay.score(f.score, rec, now_ts)) for f in found]
    hits.sort(key=lambda h: h.score, reverse=True)
    hits = hits[:limit]
    raised = set(extra_ident[0]) if extra_ident and weight > 0 else set()
    named = {f.id for f in found if raised and any(lexical.entity_token(i) in raised
                                                   for i in f.payload.get("entities") or ())}
    if not named:
        return support.supported(hits, query, qvec, floor, backend)
    # a memory linked to an entity the question names or reaches through a relation is supported by that name,
    # though it shares no word with the question ("the service Dana maintains" -> "the worker moved to Redis")
    kept = {h.record.id for h in support.supported([h for h in hits if h.record.id not in named], query, qvec,
                                                   floor, backend)}
    return [h for h in hits if h.record.id in named or h.record.id in kept]


__all__ = ["DENSE_WEIGHT", "SPARE", "DropRate", "fixed_spare", "ranked"]
