"""Recall rendered for an LLM prompt: one line per hit (a passage: one per message, the later ones indented under
the first, see :mod:`remem.core.recall.passages`), each thing said once, cut to a token budget (tiktoken) that
it never overshoots.

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

from typing import Callable, Sequence

from .passages import bracket, passage_lines
from .repeats import EPISODE_KIND, distinct
from .tokens import count_tokens, truncate_to_tokens
from ..types import MemoryRecord, SearchHit

HEADER = "Relevant memories (most relevant first; dates are when it happened or was said, else when recorded):"
LINE_MAX_TOKENS = 200  # one long message must not eat the whole budget: its head and tail are shown


def hit_line(rec: MemoryRecord, *, lead: str = "- ", dated: bool = True) -> str:
    """``- [date · kind] text #tags (yesterday = date)``; ``lead`` and ``dated`` serve a passage's later lines."""
    tags = f" #{' #'.join(rec.tags)}" if rec.tags and rec.kind != EPISODE_KIND else ""
    text = " ".join(rec.text.split())
    if count_tokens(text) > LINE_MAX_TOKENS:
        text = truncate_to_tokens(text, LINE_MAX_TOKENS, keep="both")
    where = f" (from {' '.join(rec.source.split())})" if rec.kind == "document" and rec.source else ""  # index()
    return f"{lead}{bracket(rec, dated)}{text}{tags}{_resolved_times(rec, text)}{where}"


def hit_lines(hit: SearchHit, line: Callable[..., str] = hit_line) -> str:
    """A hit as shown: its line, or a passage's messages one per line in the order said (the later ones
    indented under the first, after "… " when a message between was not found, dated only when said on another
    day). ``line(rec, lead=, dated=)`` renders one."""
    return passage_lines(hit.records, line)


def _resolved_times(rec: MemoryRecord, text: str) -> str:
    """" (yesterday = 2023-05-07)": relative times in what was said, as dates (readers get them wrong)."""
    if rec.occurred_at is None:
        return ""
    from .timeframe import mentions

    found = mentions(text, rec.occurred_at)[:2]
    return f" ({'; '.join(f'{m.phrase} = {m.describe()}' for m in found)})" if found else ""


def fit_hits(hits: Sequence[SearchHit], token_budget: int | None, *, header: str = HEADER,
             line: Callable[..., str] = hit_line) -> list[SearchHit]:
    """The distinct hits, in rank order, whose lines as ``line`` renders them (plus header) fit in
    ``token_budget``; a passage too long for what is left is cut to its best message (LoCoMo BM25, answer tokens
    0.755 -> 0.759)."""
    kept_all = distinct(hits)
    if token_budget is None:
        return kept_all
    used = count_tokens(header) + 1 if header else 0
    kept: list[SearchHit] = []
    for hit in kept_all:
        cost = count_tokens(hit_lines(hit, line)) + 1  # +1 for the newline joining lines
        if used + cost > token_budget and hit.passage:  # a passage that does not fit: its best message may
            best = SearchHit(record=hit.record, score=hit.score, relevance=hit.relevance)
            if used + (alone := count_tokens(hit_lines(best, line)) + 1) <= token_budget:
                hit, cost = best, alone
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
    text = "\n".join([header, *(hit_lines(h) for h in kept)])
    if token_budget is not None:  # guard: token counts of joined text can differ by a merge at boundaries
        while kept and count_tokens(text) > token_budget:
            kept.pop()
            text = "\n".join([header, *(hit_lines(h) for h in kept)]) if kept else ""
    return text
