"""Recall rendered for an LLM prompt: one line per hit, each thing said once, cut to a token budget (tiktoken)
that it never overshoots.

Hits mix distilled memories and episodes (what was said, see :mod:`remem.core.distill.episodes`). Saying the
same thing twice wastes the budget, so :func:`distinct` drops what an earlier line already said:

* a memory whose source episodes are among the hits is replaced by them, at the memory's rank: the episode is
  the original (speaker, wording, the reason next to the decision) and the memory was distilled from it;
* a hit whose source messages were all rendered already (a memory after its episode) is dropped, and so is a
  session summary after a better-ranked turn or memory of its session (they said the part that matters);
* a hit whose words are nearly all in one line already rendered (a session summary quoting a request, the
  same statement kept in two sessions) is dropped.

Dates are event time when known (``occurred_at``: when it was said or happened), else when the memory became
true or was recorded; relative times in what was said are resolved against it ("yesterday = 2023-05-07").
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Sequence

from .tokens import count_tokens, truncate_to_tokens
from ..types import MemoryRecord, SearchHit

HEADER = "Relevant memories (most relevant first; dates are when it happened or was said, else when recorded):"
EPISODE_KIND = "episode"
LINE_MAX_TOKENS = 200  # one long message must not eat the whole budget: its head and tail are shown
PROMOTE_MIN_OVERLAP = 0.5  # a memory is replaced by its episode only if the episode holds most of its words
CONTAINED = 0.85  # share of a hit's words already in one rendered line that makes it a repeat
_WORD_RE = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the and or but if of to in on at by for with from as is are was were be been it its this "
                  "that i me my we our you your he she they them their his her user users s so do did not no".split())


def event_time(rec: MemoryRecord) -> _dt.datetime:
    """When the thing happened (or was said) if known, else when it became true or was recorded."""
    return rec.occurred_at or rec.valid_from or rec.created_at


def _label(rec: MemoryRecord) -> str:
    if rec.kind == EPISODE_KIND:  # who said it reads better than "episode"
        role = str(rec.metadata.get("role") or "said")
        return role if re.fullmatch(r"[a-z]{1,20}", role) else "said"
    return rec.kind


def hit_line(rec: MemoryRecord) -> str:
    when = event_time(rec).strftime("%Y-%m-%d")
    tags = f" #{' #'.join(rec.tags)}" if rec.tags and rec.kind != EPISODE_KIND else ""
    text = " ".join(rec.text.split())
    if count_tokens(text) > LINE_MAX_TOKENS:
        text = truncate_to_tokens(text, LINE_MAX_TOKENS, keep="both")
    return f"- [{when} · {_label(rec)}] {text}{tags}{_resolved_times(rec, text)}"


def _resolved_times(rec: MemoryRecord, text: str) -> str:
    """" (yesterday = 2023-05-07)": relative times in what was said, as dates (readers get them wrong)."""
    if rec.occurred_at is None:
        return ""
    from .timeframe import mentions

    found = mentions(text, rec.occurred_at)[:2]
    return f" ({'; '.join(f'{m.phrase} = {m.describe()}' for m in found)})" if found else ""


def _words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.lower()) if w not in _STOP}


def said_ids(rec: MemoryRecord) -> frozenset[str]:
    """The message ids a record stands for: an episode its own message, a memory the messages it came from."""
    if rec.sources:
        return frozenset(rec.sources)
    mid = rec.metadata.get("message_id") if rec.kind == EPISODE_KIND else None
    return frozenset([str(mid)]) if mid else frozenset()


def _promote(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Memories whose source episodes are among the hits give their rank to those episodes."""
    episodes: dict[str, int] = {}
    for i, h in enumerate(hits):
        if h.record.kind == EPISODE_KIND:
            for sid in said_ids(h.record):
                episodes.setdefault(sid, i)
    if not episodes:
        return list(hits)
    out: list[SearchHit] = []
    used: set[int] = set()
    for i, h in enumerate(hits):
        if i in used:
            continue
        rec = h.record
        src = said_ids(rec)
        if rec.kind not in (EPISODE_KIND, "summary") and src and all(s in episodes for s in src):
            idx = sorted({episodes[s] for s in src})
            words = _words(rec.text)
            held = _words(" ".join(hits[j].record.text for j in idx))
            if words and len(words & held) / len(words) >= PROMOTE_MIN_OVERLAP:
                for j in idx:
                    if j not in used:
                        used.add(j)
                        out.append(hits[j])
                continue
        used.add(i)
        out.append(h)
    return out


def distinct(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` in rank order with every repeat removed (see the module docstring)."""
    out: list[SearchHit] = []
    said: set[str] = set()
    seen_words: list[set[str]] = []
    sessions: set[tuple[object, object]] = set()
    for h in _promote(hits):
        rec = h.record
        src = said_ids(rec)
        if src and src <= said:
            continue
        session = (rec.scope, rec.metadata.get("session"))
        if rec.kind == "summary" and session[1] is not None and session in sessions:
            continue  # the session's own turns or memories, ranked higher, already said the relevant part
        sessions.add(session)
        words = _words(rec.text)
        if words and any(len(words - prev) <= (1.0 - CONTAINED) * len(words) for prev in seen_words):
            continue
        out.append(h)
        if rec.kind != "summary":  # a summary only quotes its turns in part: they can still be said in full
            said.update(src)
        seen_words.append(words)
    return out


def fit_hits(hits: Sequence[SearchHit], token_budget: int | None, *, header: str = HEADER) -> list[SearchHit]:
    """The distinct hits, in rank order, whose rendered lines (plus header) fit in ``token_budget``."""
    kept_all = distinct(hits)
    if token_budget is None:
        return kept_all
    used = count_tokens(header) + 1 if header else 0
    kept: list[SearchHit] = []
    for hit in kept_all:
        cost = count_tokens(hit_line(hit.record)) + 1  # +1 for the newline joining lines
        if used + cost > token_budget:
            if cost > 40:  # a long line does not fit; a shorter one further down still may
                continue
            break
        kept.append(hit)
        used += cost
    return kept


def render_context(hits: Sequence[SearchHit], token_budget: int | None = None, *, header: str = HEADER) -> str:
    kept = fit_hits(hits, token_budget, header=header)
    if not kept:
        return ""
    text = "\n".join([header, *(hit_line(h.record) for h in kept)])
    if token_budget is not None:  # guard: token counts of joined text can differ by a merge at boundaries
        while kept and count_tokens(text) > token_budget:
            kept.pop()
            text = "\n".join([header, *(hit_line(h.record) for h in kept)]) if kept else ""
    return text
