"""One ranked search inside Qdrant: BM25, dense and identifier candidates fused, then decay.

The engine's ``search()`` runs the recall plan (:mod:`remem.core.recall.planner`) over this primitive: the
plan may call it more than once per question (a time window, an anchor event), always with the same filter
builder, so every call stays inside the caller's scope.

What is valid "now" is checked here rather than in Qdrant: a filter condition besides the tenant makes Qdrant
check every point of the tenant, and the two validity ranges cost a third of a search (100k memories in 20
tenants, BM25 only, one process: p50 / p95 5.3 / 9.5 ms with them in the filter, 3.6 / 6.0 ms checked here;
``python -m remem.bench.validity_check``). So the query asks more hits than wanted under the scope's own
filter, drops those not valid at ``valid_ts`` (superseded, expired, not yet valid), and asks again with the
validity ranges in the filter only when too few are left. A record not valid then is never returned. BM25
alone ranks the same either way (its scores do not depend on the filter); when lists are fused (identifiers,
dense), an invalid record can still hold a rank in one list and move a valid one down in the fusion.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..recall import lexical
from ..types import SearchHit
from .backends.base import FilterSpec, PrefetchSpec
from .records import from_payload, valid_payload, valid_within

if TYPE_CHECKING:
    from ..settings import Settings
    from .backends.base import Backend

DENSE_WEIGHT = 0.5  # BM25 over text+context leads; the dense list refines (LoCoMo: +0.004 R@10, steadier MRR)
SPARE = 5  # hits asked beyond the limit (a quarter of it, at least this), so that the invalid ones dropped
# seldom need a second query: stores that keep superseded versions in the same words as the current ones have
# them near the top. search(limit=10) asks 62 for its 50 candidates; a hit read costs ~25 us of payload


def ranked(backend: "Backend", settings: "Settings", query: str, qvec: list[float] | None, flt: FilterSpec,
           limit: int, now_ts: float | None = None, valid_ts: float | None = None) -> list[SearchHit]:
    """Up to ``limit`` hits for ``query`` under ``flt``, best first by decayed score; with ``valid_ts``, only
    records valid then (``flt`` holding no validity condition of its own)."""
    now_ts = time.time() if now_ts is None else now_ts
    spare = 0 if valid_ts is None else max(SPARE, limit // 4)
    depth = max(settings.prefetch, limit * 2, limit + spare)
    prefetches = [PrefetchSpec("bm25", lexical.bm25_query(query), depth)]
    if qvec:
        prefetches.append(PrefetchSpec("dense", qvec, depth, weight=DENSE_WEIGHT))
    ident = lexical.ident_vector(query)
    if ident[0]:
        prefetches.append(PrefetchSpec("ident", ident, depth))
    prefetches = [p for p in prefetches if not isinstance(p.vector, tuple) or p.vector[0]]
    if not prefetches:
        return []
    if valid_ts is None:
        found = backend.query(prefetches, flt, limit, settings.rrf_k)  # the plan asks deeper than it returns
    else:
        asked = backend.query(prefetches, flt, limit + spare, settings.rrf_k)
        found = [f for f in asked if valid_payload(f.payload, valid_ts)][:limit]
        if len(found) < limit and len(asked) == limit + spare:  # too many dropped, and more may match
            found = backend.query(prefetches, valid_within(flt, valid_ts), limit, settings.rrf_k)
    hits = [SearchHit(record=(rec := from_payload(f.id, f.payload)), relevance=f.score,
                      score=settings.decay.score(f.score, rec, now_ts)) for f in found]
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits[:limit]


__all__ = ["DENSE_WEIGHT", "SPARE", "ranked"]
