"""One ranked search inside Qdrant: BM25, dense and identifier candidates fused, then decay.

The engine's ``search()`` runs the recall plan (:mod:`remem.core.recall.planner`) over this primitive: the
plan may call it more than once per question (a time window, an anchor event), always with the same filter
builder, so every call stays inside the caller's scope.

What is valid "now" is checked here rather than in Qdrant: a filter condition besides the tenant makes Qdrant
check every point of the tenant, and the two validity ranges cost a third of a search (100k memories in 20
tenants, BM25 only, one process: p50 / p95 7.8 / 13.4 ms with them in the filter, 5.3 / 8.1 ms checked here).
So the query asks a few more hits than wanted under the scope's own filter, drops those not valid at
``valid_ts`` (superseded, expired, not yet valid), and asks again with the validity ranges in the filter only
when too few are left. BM25 scores do not depend on the filter, so the result is the same; with dense
candidates fused, a superseded record can still hold a place in one candidate list before fusion (it is never
returned).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..recall import lexical
from ..types import SearchHit
from .backends.base import FilterSpec, PrefetchSpec
from .records import from_payload, valid_at, valid_payload

if TYPE_CHECKING:
    from ..settings import Settings
    from .backends.base import Backend

DENSE_WEIGHT = 0.5  # BM25 over text+context leads; the dense list refines (LoCoMo: +0.004 R@10, steadier MRR)
SPARE = 5  # hits asked beyond the limit, so a few invalid ones dropped need no second query


def ranked(backend: "Backend", settings: "Settings", query: str, qvec: list[float] | None, flt: FilterSpec,
           limit: int, now_ts: float | None = None, valid_ts: float | None = None) -> list[SearchHit]:
    """Up to ``limit`` hits for ``query`` under ``flt``, best first by decayed score; with ``valid_ts``, only
    records valid then (``flt`` holding no validity condition of its own)."""
    now_ts = time.time() if now_ts is None else now_ts
    depth = max(settings.prefetch, limit * 2)
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
        asked = backend.query(prefetches, flt, limit + SPARE, settings.rrf_k)
        found = [f for f in asked if valid_payload(f.payload, valid_ts)][:limit]
        if len(found) < limit and len(asked) == limit + SPARE:  # too many dropped, and more may match
            strict = FilterSpec(must=[*flt.must, *valid_at(valid_ts)], must_not=flt.must_not, should=flt.should)
            found = backend.query(prefetches, strict, limit, settings.rrf_k)
    hits = [SearchHit(record=(rec := from_payload(f.id, f.payload)), relevance=f.score,
                      score=settings.decay.score(f.score, rec, now_ts)) for f in found]
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits[:limit]


__all__ = ["DENSE_WEIGHT", "SPARE", "ranked"]
