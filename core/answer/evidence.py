"""The recalled context an answer is made from: each record under a short alias the model cites (``m1``, ``m2``),
and the way back from cited aliases to the ids of memories and messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..recall.fencing import one_line
from ..recall.passages import label
from ..recall.rendering import LINE_MAX_TOKENS, _resolved_times
from ..recall.tokens import count_tokens, truncate_to_tokens
from ..types import MemoryRecord, SearchHit


@dataclass(frozen=True)
class Item:
    """One recalled record, as the answer sees it: its alias, its hit's rank (0 = best) and score."""

    alias: str
    record: MemoryRecord
    rank: int
    score: float

    def line(self) -> str:
        """``[m3] 2023-05-08 · fact: text (yesterday = 2023-05-07) (source: docs/adr.md#Queue, lines 3-9)``"""
        rec = self.record
        text = one_line(rec.text)  # data: one line, no tag-like text (it cannot step out of the fence)
        if count_tokens(text) > LINE_MAX_TOKENS:
            text = truncate_to_tokens(text, LINE_MAX_TOKENS, keep="both")
        kind = one_line(label(rec))
        head = f"{rec.event_time:%Y-%m-%d}" + (f" · {kind}" if kind else "")
        where = f" (source: {one_line(rec.source)})" if rec.kind == "document" and rec.source else ""
        return f"[{self.alias}] {head}: {text}{_resolved_times(rec, text)}{where}"


def gather(hits: Sequence[SearchHit]) -> list[Item]:
    """Every record the hits show (a passage's messages in order), each once, aliased in rank order."""
    items: list[Item] = []
    seen: set[str] = set()
    for rank, hit in enumerate(hits):
        for rec in hit.records:
            if rec.id in seen:
                continue
            seen.add(rec.id)
            items.append(Item(alias=f"m{len(items) + 1}", record=rec, rank=rank, score=hit.score))
    return items


def items_of(records: Iterable[MemoryRecord]) -> list[Item]:
    """Records read directly (a count question's scan), aliased in the order given."""
    return [Item(alias=f"m{i + 1}", record=rec, rank=i, score=0.0) for i, rec in enumerate(records)]


def fit(items: Sequence[Item], token_budget: int) -> list[Item]:
    """The items, in order, whose lines fit in ``token_budget`` tokens (a long one is skipped, not the rest)."""
    kept, used = [], 0
    for item in items:
        cost = count_tokens(item.line()) + 1
        if used + cost > token_budget:
            continue
        kept.append(item)
        used += cost
    return kept


def citations(items: Iterable[Item]) -> tuple[str, ...]:
    """The ids an answer resting on ``items`` cites: their memory ids, then the message ids they came from."""
    items = list(items)
    ids = [it.record.id for it in items] + [s for it in items for s in it.record.sources]
    return tuple(dict.fromkeys(ids))


def resolve(cited: Iterable[object], items: Sequence[Item]) -> list[Item]:
    """The items a model cited, by alias (or by a record id it copied); anything not in the context is
    dropped: a model cannot cite what it was not shown."""
    by_key = {it.alias.lower(): it for it in items} | {it.record.id.lower(): it for it in items}
    out: dict[str, Item] = {}
    for c in cited:
        if not isinstance(c, str):
            continue
        found = by_key.get(c.strip().strip("[]").lower())
        if found is not None:
            out[found.alias] = found
    return list(out.values())


__all__ = ["Item", "citations", "fit", "gather", "items_of", "resolve"]
