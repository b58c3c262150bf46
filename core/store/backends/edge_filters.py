"""How a :class:`~.base.FilterSpec` becomes a Qdrant Edge filter.

Qdrant Edge reads a boolean to match as a number (``MatchValue(True).value`` is 1), and no stored boolean equals a
number, so ``where={"pinned": True}`` matched nothing in the embedded store while a Qdrant server found the pinned
memories. A boolean condition is therefore given as the ids of the points that hold that value, which the backend
reads first (``holding``).
"""

from __future__ import annotations

from typing import Any, Callable

import qdrant_edge as qe

from .base import Cond, FilterSpec


def _cond(c: Cond) -> Any:
    if c.empty:
        return qe.IsEmptyCondition(c.key)
    if c.is_range:
        return qe.FieldCondition(c.key, range=qe.RangeFloat(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))
    if c.any_of is not None:
        return qe.FieldCondition(c.key, match=qe.MatchAny(list(c.any_of)))
    return qe.FieldCondition(c.key, match=qe.MatchValue(c.eq))


def edge_filter(flt: FilterSpec | None, holding: Callable[[str, bool, Any], set[str]]) -> Any:
    """``flt`` for the shard (None when it has no condition), each boolean condition as the ids
    ``holding(key, value, within)`` names, read among the points its other must/must_not conditions allow
    (``within``: the tenant's, not the whole store)."""
    if flt is None or not (flt.must or flt.must_not or flt.should):
        return None
    plain = [c for c in flt.must if not isinstance(c.eq, bool)], [c for c in flt.must_not if not isinstance(c.eq, bool)]
    within = qe.Filter(must=[_cond(c) for c in plain[0]] or None, must_not=[_cond(c) for c in plain[1]] or None)

    def cond(c: Cond) -> Any:
        return qe.HasIdCondition(holding(c.key, c.eq, within)) if isinstance(c.eq, bool) else _cond(c)
    return qe.Filter(must=[cond(c) for c in flt.must] or None, must_not=[cond(c) for c in flt.must_not] or None,
                     should=[cond(c) for c in flt.should] or None)


__all__ = ["edge_filter"]
