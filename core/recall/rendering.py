"""Recall rendered for an LLM prompt, cut to a token budget (tiktoken) that it never overshoots."""

from __future__ import annotations

from typing import Sequence

from .tokens import count_tokens
from ..types import MemoryRecord, SearchHit

HEADER = "Relevant memories (most relevant first; dates are when each was recorded or became true):"


def hit_line(rec: MemoryRecord) -> str:
    when = (rec.valid_from or rec.created_at).strftime("%Y-%m-%d")
    tags = f" #{' #'.join(rec.tags)}" if rec.tags else ""
    text = " ".join(rec.text.split())
    return f"- [{when} · {rec.kind}] {text}{tags}"


def fit_hits(hits: Sequence[SearchHit], token_budget: int | None, *, header: str = HEADER) -> list[SearchHit]:
    """The longest prefix of ``hits`` whose rendered lines (plus header) fit in ``token_budget``."""
    if token_budget is None:
        return list(hits)
    used = count_tokens(header) + 1 if header else 0
    kept: list[SearchHit] = []
    for hit in hits:
        cost = count_tokens(hit_line(hit.record)) + 1  # +1 for the newline joining lines
        if used + cost > token_budget:
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
