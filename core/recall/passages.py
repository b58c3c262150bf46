"""Passages: neighbouring messages of one conversation, recalled together, shown as one hit.

An episode is indexed with the messages just before it as its context (:mod:`remem.core.distill.episodes`), so
the messages of one exchange rank close to each other: the question, its answer and the reply often all come
back. As separate hits they crowd out everything else; as one passage, in the order they were said, they read as
the exchange they were and leave the other places in the list to other things (LoCoMo through ``remember()``,
BM25 only: evidence recall_any@10 0.808 as separate hits, 0.862 joined, on the same ranking; the same as
the 19 best single messages, which is about what ten passages show: they show more, not a better ranking).

Dated notes of one thread (:mod:`remem.core.store.threads`) are joined the same way. Two episodes are
neighbours when one follows the other: its ``metadata["follows"]`` (the ids of the messages
just before it, its recall context) names the other's message, in the same scope and session. A passage is
built at the rank of its best message, takes in neighbours of any of its messages from further down the list,
and holds at most :data:`PASSAGE_MAX` messages: an exchange, not a transcript (a longer one would eat a prompt's
budget, and the benchmarks count a hit for at most three sources). A hit whose messages a better-ranked passage
shows already is dropped: a memory distilled from them, or one of them found again (a second search's ranking).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable, Sequence

from .repeats import EPISODE_KIND, MessageKey, Place, hit_ids, hit_words, known, place_of, repeats, said_ids
from ..types import MemoryRecord, SearchHit

PASSAGE_MAX = 3
CONTEXT_TURNS = 2  # messages before an episode indexed as its recall context (distill.episodes writes them)
CONTEXT_AFTER = 2  # and after it, as they arrive (BM25 only, LoCoMo any@10: 1 -> 0.869, 2 -> 0.877, 3 -> 0.873)
CONTEXT_TURN_TOKENS = 120  # each of those messages in the context, clipped
LINK_KEYS = ("follows", "followed_by")  # the metadata keys naming the messages said just before and just after


def message_id(rec: MemoryRecord) -> str | None:
    """The id of the message an episode holds: its ``metadata["message_id"]``, else its one source (the rule
    for every reader of episodes: passages here, the capture's neighbours in ``distill.episodes``)."""
    mid = rec.metadata.get("message_id") or (rec.sources[0] if rec.sources else None)
    return str(mid) if mid else None


def clipped(text: str, tokens: int) -> str:
    """``text`` with its white space folded, cut to ``tokens`` (its head and tail kept). tiktoken is loaded
    here, not on import: the Claude Code prompt hook imports this module on its hot path."""
    from .tokens import truncate_to_tokens

    return truncate_to_tokens(" ".join(text.split()), tokens, keep="both")


def links(rec: MemoryRecord, key: str = "follows") -> list[str]:
    """The ids of the messages said just before ``rec`` (``follows``, nearest last) or just after it
    (``followed_by``, nearest first); none for a store written before they were kept."""
    value = rec.metadata.get(key)
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _follows(rec: MemoryRecord) -> frozenset[str]:
    return frozenset(links(rec))


def conversation(rec: MemoryRecord) -> tuple[Any, str] | None:
    """(scope, session) of an episode, (scope, "thread:<name>") of a dated note in a thread
    (:mod:`remem.core.store.threads`); None for anything else."""
    if not message_id(rec):
        return None
    if rec.kind == EPISODE_KIND:
        session = rec.metadata.get("session")
        return (rec.scope, session) if isinstance(session, str) else None
    thread = rec.metadata.get("thread")
    return (rec.scope, f"thread:{thread}") if rec.kind == "note" and isinstance(thread, str) else None


def follows_directly(prev: MemoryRecord, rec: MemoryRecord) -> bool:
    """False when a message was said between ``prev`` and ``rec`` (a passage can skip one it did not find):
    a reader is shown the gap. True when it cannot tell (a store written before ``follows`` was kept)."""
    before = links(rec)
    return not before or before[-1] == message_id(prev)


def said_order(rec: MemoryRecord) -> tuple[int, float]:
    """Sort key: the order messages of one session were said in (their position; a position that is not a
    whole number, from a record edited by hand, sorts first), then when they were stored."""
    pos = rec.metadata.get("position")
    return (pos if isinstance(pos, int) and not isinstance(pos, bool) else -1), rec.created_at.timestamp()


def label(rec: MemoryRecord) -> str:
    """A line's label: the record's kind; for a message, its role (reads better than "episode"), or nothing
    when its text starts with the speaker's name already ("Ana: ..." says who)."""
    if rec.kind != EPISODE_KIND:
        from .fencing import one_line  # a kind stored before kinds were checked may hold anything

        return one_line(rec.kind)
    if rec.metadata.get("speaker"):
        return ""
    role = str(rec.metadata.get("role") or "said")
    return role if re.fullmatch(r"[a-z]{1,20}", role) else "said"


def bracket(rec: MemoryRecord, dated: bool, labelled: bool = True) -> str:
    """A line's ``[date · label] `` prefix (empty when there is neither)."""
    parts = [f"{rec.event_time:%Y-%m-%d}"] if dated else []
    if labelled and (name := label(rec)):
        parts.append(name)
    return f"[{' · '.join(parts)}] " if parts else ""


def passage_lines(records: Sequence[MemoryRecord], line: Callable[..., str]) -> str:
    """A hit's records as shown, one line each by ``line(rec, lead=, dated=)``: the later messages of a passage
    indented under the first, after "… " when a message between was not found, dated only when said on
    another day. Shared by ``context()``, the tools and the prompt hook (which counts characters, not tokens)."""
    lines: list[str] = []
    day = None
    prev: MemoryRecord | None = None
    for rec in records:
        this_day = rec.event_time.date()
        lead = "- " if prev is None else "  " if follows_directly(prev, rec) else "  … "  # … : a message skipped
        lines.append(line(rec, lead=lead, dated=prev is None or this_day != day))
        day, prev = this_day, rec
    return "\n".join(lines)


class _Entry:
    """One place in the output: a hit, or a passage growing from one."""

    def __init__(self, hit: SearchHit, key: tuple[Any, str] | None) -> None:
        self.hit = hit
        self.key = key
        self.members: list[MemoryRecord] = list(hit.records)
        self.ids = {message_id(m) for m in self.members}
        self.follows = set().union(*(_follows(m) for m in self.members))

    def takes(self, recs: tuple[MemoryRecord, ...], ids: set[str | None], follows: set[str]) -> bool:
        """Room for ``recs`` (of this conversation), none shown yet, and one of them next to one of ours."""
        if len(self.members) + len(recs) > PASSAGE_MAX or ids & self.ids:
            return False
        return bool(ids & self.follows) or bool(self.ids & follows)

    def add(self, recs: tuple[MemoryRecord, ...], ids: set[str | None], follows: set[str]) -> None:
        self.members.extend(recs)
        self.ids |= ids
        self.follows |= follows

    def result(self) -> SearchHit:
        if len(self.members) == 1:
            return self.hit
        ordered = tuple(sorted(self.members, key=said_order))
        return SearchHit(record=self.hit.record, score=self.hit.score, relevance=self.hit.relevance,
                         passage=ordered)


def _key(hit: SearchHit) -> tuple[Any, str] | None:
    """The conversation a hit's messages belong to (scope, session); None for anything else."""
    key = conversation(hit.record)
    if key is None or any(conversation(r) != key for r in hit.passage):
        return None
    return key


def join_passages(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` (ranked, repeats already removed) with neighbouring episodes joined into passages at the rank
    of their best message, and the memories such a passage already shows dropped (see the module docstring)."""
    entries: list[_Entry] = []
    by_conversation: dict[tuple[Any, str], list[_Entry]] = {}
    for hit in hits:
        key = _key(hit)
        if key is None:
            entries.append(_Entry(hit, None))
            continue
        recs = hit.records
        ids = {message_id(r) for r in recs}
        follows = set().union(*(_follows(r) for r in recs))
        same = by_conversation.setdefault(key, [])
        target = next((e for e in same if e.takes(recs, ids, follows)), None)
        if target is not None:
            target.add(recs, ids, follows)
            continue
        entry = _Entry(hit, key)
        entries.append(entry)
        same.append(entry)
    out: list[SearchHit] = []
    shown: set[MessageKey] = set()
    summaries: list[tuple[set[str], Place]] = []
    for entry in entries:
        hit = entry.result()
        src = hit_ids(hit)
        if src and src <= shown:
            continue
        if hit.record.kind == EPISODE_KIND and repeats(hit_words(hit), place_of(hit.record), summaries):
            continue  # a better-ranked session summary says it all (a passage with more to say stays)
        if hit.record.kind == "summary":
            summaries.append((hit_words(hit), place_of(hit.record)))
        if hit.passage and src & shown:  # part of it is shown already (two searches' passages overlap)
            hit = _without(hit, shown)
            src = hit_ids(hit)
        out.append(hit)
        if hit.record.kind != "summary":
            shown.update(known(src))
    return out


def _without(hit: SearchHit, shown: set[MessageKey]) -> SearchHit:
    """A passage without the messages a better-ranked hit shows already (its head, if gone, becomes the first
    message left)."""
    rest = tuple(rec for rec in hit.passage if not said_ids(rec) <= shown)
    head = next((rec for rec in rest if rec.id == hit.record.id), rest[0])
    return SearchHit(record=head, score=hit.score, relevance=hit.relevance, passage=rest if len(rest) > 1 else ())


def completed(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` with the episodes an older remem stored given what later ones know of their neighbours:
    ``follows`` (the messages just before, so recall joins them into passages) and ``followed_by`` with the
    messages just after added to their recall ``context`` (a question found by its answer). For ``reembed``,
    which rewrites every record: without it, a store written before those existed keeps recalling its older
    conversations worse than it recalls new ones.

    Only stored episodes are known here, so neighbours are the episodes of the same scope and session next
    to each other in the order said: a message that was not kept (a "Thanks!") is not seen, and a passage
    joined across it shows no "…" for it. Positions cannot tell that gap from a tool call between two
    messages, which a live capture joins across. An episode that has either field already keeps it."""
    sessions: dict[tuple[Any, str], list[int]] = {}
    for i, rec in enumerate(records):
        session = rec.metadata.get("session")
        if rec.kind == EPISODE_KIND and isinstance(session, str) and message_id(rec):
            sessions.setdefault((rec.scope, session), []).append(i)
    out = list(records)
    for members in sessions.values():
        members.sort(key=lambda i: said_order(records[i]))
        said_in_order = [records[i] for i in members]
        for n, rec in enumerate(said_in_order):
            before = _run(said_in_order, n, -1)
            after = _run(said_in_order, n, 1)
            meta, context = dict(rec.metadata), rec.context
            if "follows" not in meta and before:
                meta["follows"] = [message_id(r) for r in reversed(before)]  # nearest last
            if "followed_by" not in meta:
                meta["followed_by"] = [message_id(r) for r in after]
                context = " ".join([*([context] if context else []),
                                    *(clipped(r.text, CONTEXT_TURN_TOKENS) for r in after)]) or None
            if meta != rec.metadata:
                out[members[n]] = replace(rec, metadata=meta, context=context)
    return out


def _run(in_order: Sequence[MemoryRecord], n: int, step: int) -> list[MemoryRecord]:
    """The episodes said right before ``in_order[n]`` (``step`` -1: up to :data:`CONTEXT_TURNS`, nearest first)
    or after it (+1: up to :data:`CONTEXT_AFTER`)."""
    count = CONTEXT_TURNS if step < 0 else CONTEXT_AFTER
    return [in_order[j] for j in range(n + step, n + step * (count + 1), step) if 0 <= j < len(in_order)]


def flatten(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Passages back into their messages (the best-ranked first, at the passage's score): for a plan that
    ranks hits which were joined already (the public :func:`~remem.core.recall.planner.recall` over
    ``search()``), so that they are joined again across its rankings."""
    out: list[SearchHit] = []
    for hit in hits:
        out.append(SearchHit(record=hit.record, score=hit.score, relevance=hit.relevance) if hit.passage else hit)
        out.extend(SearchHit(record=rec, score=hit.score, relevance=hit.relevance)
                   for rec in hit.passage if rec.id != hit.record.id)  # by id: a hit from the service is a copy
    return out


__all__ = ["CONTEXT_AFTER", "CONTEXT_TURNS", "CONTEXT_TURN_TOKENS", "LINK_KEYS", "PASSAGE_MAX", "bracket", "clipped", "completed",
           "conversation", "links",
           "flatten", "follows_directly", "join_passages", "label", "message_id",
           "passage_lines", "said_order"]
