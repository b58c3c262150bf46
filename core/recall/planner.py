"""Time-aware recall over memories and episodes, through the public API: the search plan the engine adopts.

:func:`recall` is what ``search()`` should do with a question (see the README of issue 13 / the lead's hook):

1. read the time the question names (:func:`~remem.core.recall.timeframe.parse_timeframe`); "before/after
   <event>" looks the event up first (:func:`~remem.core.recall.timeframe.resolve_anchor`);
2. search as usual, deeper than asked, and — when a window was named — the same search filtered to it, so an
   in-window record the unfiltered ranking left out still comes back;
3. fuse both with a boost for in-window hits, and drop what repeats a better-ranked hit (a memory and the
   episode it came from): :func:`~remem.core.recall.rendering.distinct`.

Until the engine's ``search()``/``context()`` run this plan themselves, benchmarks and callers use these
functions; they only call ``memory.search`` (sync or a service client alike).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

from .rendering import distinct, render_context
from .timeframe import TimeFrame, fuse, parse_timeframe, resolve_anchor
from ..types import SearchHit

DEPTH = 3  # candidates fetched per hit asked for: repeats are removed before the cut


def time_frame(memory: Any, query: str, *, scope: Any = None, now: _dt.datetime | None = None) -> TimeFrame | None:
    """The question's time window, with a "before/after <event>" anchor already looked up (None if not found)."""
    frame = parse_timeframe(query, now)
    if frame is not None and frame.anchor is not None:
        frame = resolve_anchor(frame, lambda q: memory.search(q, scope=scope, limit=3, reinforce=False))
    return frame


def recall(memory: Any, query: str, *, scope: Any = None, limit: int = 10, now: _dt.datetime | None = None,
           where: Mapping[str, Any] | None = None, reinforce: bool = False, **filters: Any) -> list[SearchHit]:
    """Up to ``limit`` distinct hits for ``query``, time-aware (see the module docstring)."""
    frame = time_frame(memory, query, scope=scope, now=now)
    depth = max(limit * DEPTH, 20)
    hits = memory.search(query, scope=scope, limit=depth, where=where, reinforce=reinforce, **filters)
    if frame is not None and frame.resolved and "occurred_at" not in (where or {}):
        inside = memory.search(query, scope=scope, limit=limit, where={**(where or {}), **frame.where()},
                               reinforce=reinforce, **filters)
        hits = fuse(hits, inside, frame)
    return distinct(hits)[:limit]


def recall_context(memory: Any, query: str, *, scope: Any = None, token_budget: int = 800, limit: int = 20,
                   now: _dt.datetime | None = None, **filters: Any) -> str:
    """``context()`` over :func:`recall`: the rendered, budgeted block for a prompt."""
    hits = recall(memory, query, scope=scope, limit=limit * 2, now=now, **filters)
    return render_context(hits, token_budget)


__all__ = ["recall", "recall_context", "time_frame"]
