"""Time-aware recall over memories and episodes, through the public API: the search plan the engine adopts.

:func:`recall` is what ``search()`` should do with a question (see the README of issue 13 / the lead's hook):

1. read the time the question names (:func:`~remem.core.recall.timeframe.parse_timeframe`); "before/after
   <event>" looks the event up first (:func:`~remem.core.recall.timeframe.resolve_anchor`);
2. search as usual, deeper than asked, and — when a window was named — the question filtered to the window, so
   an in-window record the unfiltered ranking left out still comes back. A closed window ("in May 2023") is
   searched without its time words; an open one ("before/after ...") with them ("before <date>" takes in that
   date, "after <event>" starts at the event's day);
3. fuse both rankings (reciprocal rank), boost in-window hits of a closed window and what a person the question
   names said (:mod:`~remem.core.recall.speakers`), and drop what repeats a better-ranked hit (a memory and the
   episode it came from): :func:`~remem.core.recall.repeats.distinct`;
4. join neighbouring messages of one conversation into passages (:mod:`~remem.core.recall.passages`).

The engine's ``search()`` runs :func:`plan` over its own ranked search, with ``now`` = ``as_of`` or the clock.
:func:`recall` and :func:`recall_context` run it through the public API with a caller's ``now`` (a replay, a
test); they only call ``memory.search`` (sync or a service client alike).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Mapping, Sequence

from .passages import flatten, join_passages
from .rendering import render_context
from .repeats import distinct
from .speakers import boost_named_speakers
from .timeframe import TIME_BOOST, TimeFrame, fuse, parse_timeframe, resolve_anchor
from ..types import SearchHit

DEPTH = 5  # candidates fetched per hit asked for: repeats are removed and passages joined before the cut
# (LoCoMo via remember(), minilm: any@10 0.877 at 3, 0.885 at 5, passages fuller; +16% search p50 at 100k)
PAD_DAYS = 2  # a day named in a question, widened: it is often told of a day or two later (LoCoMo: +1.5 pts)
OPEN_PAD_DAYS = 1  # "before April 10": the day named is in (what happened just before is told on it)


Search = Callable[[str, "Mapping[str, Any] | None", int], Sequence[SearchHit]]
"""``search(query, where, limit)``: one ranked search in the caller's scope and filters; an empty ``query``
asks for the newest records under ``where`` (the engine's search does so; a public ``search()`` returns none)."""


def plan(search: Search, query: str, *, limit: int = 10, where: Mapping[str, Any] | None = None,
         now: _dt.datetime | None = None) -> list[SearchHit]:
    """The recall plan over any ranked ``search`` (the engine's own, or the public API's): up to ``limit``
    distinct hits, time-aware (see the module docstring)."""
    frame = parse_timeframe(query, now)
    if frame is not None and frame.anchor is not None:
        frame = resolve_anchor(frame, lambda q: search(q, where, 3))
    hits = flatten(search(query, where, max(limit * DEPTH, 20)))
    if frame is not None and frame.resolved and "occurred_at" not in (where or {}):
        open_ended = frame.start is None or frame.end is None
        if open_ended:
            if frame.relation == "before" and frame.end is not None and not frame.anchor_ids:
                frame = frame.padded(OPEN_PAD_DAYS)  # "before April 10" takes in April 10 (an event: up to it)
        elif frame.start is not None and frame.end is not None and (frame.end - frame.start).days <= 1:
            frame = frame.padded(PAD_DAYS)
        window = {**(where or {}), **frame.where()}
        # "after the roadtrip": what is meant usually names the roadtrip too, so the words stay in; and half the
        # timeline is no place to boost (LoCoMo, 62 before/after questions: any@10 0.58 stripped and boosted,
        # 0.74 kept and fused, 0.76 with no window at all)
        inside = flatten(search(query if open_ended else without_phrase(query, frame), window, limit))
        if not inside:  # nothing in the window shares a word with the question ("what happened last week"):
            inside = flatten(search("", window, limit))  # what happened then, newest first
        hits = fuse(hits, inside, frame, factor=0.0 if open_ended else TIME_BOOST)
    return join_passages(distinct(boost_named_speakers(hits, query)))[:limit]


def time_frame(memory: Any, query: str, *, scope: Any = None, now: _dt.datetime | None = None) -> TimeFrame | None:
    """The question's time window, with a "before/after <event>" anchor already looked up (None if not found)."""
    frame = parse_timeframe(query, now)
    if frame is not None and frame.anchor is not None:
        frame = resolve_anchor(frame, lambda q: memory.search(q, scope=scope, limit=3, reinforce=False))
    return frame


def recall(memory: Any, query: str, *, scope: Any = None, limit: int = 10, now: _dt.datetime | None = None,
           where: Mapping[str, Any] | None = None, reinforce: bool = False, **filters: Any) -> list[SearchHit]:
    """:func:`plan` through the public API: ``memory.search`` (in-process or a service client) does each
    search. Reinforcement is off by default: the plan searches deeper than it returns."""
    return plan(lambda q, w, n: memory.search(q, scope=scope, limit=n, where=w, reinforce=reinforce, **filters),
                query, limit=limit, where=where, now=now)


def recall_context(memory: Any, query: str, *, scope: Any = None, token_budget: int = 800, limit: int = 20,
                   now: _dt.datetime | None = None, **filters: Any) -> str:
    """``context()`` over :func:`recall`: the rendered, budgeted block for a prompt."""
    hits = recall(memory, query, scope=scope, limit=limit * 2, now=now, **filters)
    return render_context(hits, token_budget)


def without_phrase(query: str, frame: TimeFrame) -> str:
    """The question minus the words that named its time ("where did X run before the migration" -> "where did
    X run"): within the window, the time words only pull up the anchor event itself."""
    low = query.lower()
    at = low.find(frame.phrase.lower())
    if at < 0:
        return query
    rest = (query[:at] + query[at + len(frame.phrase):]).strip(" ,?")
    return rest if len(rest.split()) >= 2 else query


__all__ = ["OPEN_PAD_DAYS", "PAD_DAYS", "Search", "plan", "recall", "recall_context", "time_frame"]
