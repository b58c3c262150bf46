"""What makes a recalled line a repeat of another: the rule :func:`distinct` applies to ranked hits.

Hits mix distilled memories and episodes (what was said). A memory whose source episodes are among the hits is
replaced by them at its rank; a hit whose source messages were all shown already is dropped; a hit whose words
are nearly all in one line already shown (a session summary quoting a request) is dropped. A message as it was
said is weighed against a summary quoting it only once its passage is joined (``join_passages``): it may bring
the rest of its exchange. No tiktoken here: the Claude Code hooks import this on their hot path.
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Sequence

from ..types import MemoryRecord, SearchHit

EPISODE_KIND = "episode"
PROMOTE_MIN_OVERLAP = 0.5  # a memory is replaced by its episode only if the episode holds most of its words
CONTAINED = 0.85  # share of a hit's words already in one rendered line that makes it a repeat
_WORD_RE = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the and or but if of to in on at by for with from as is are was were be been it its this "
                  "that i me my we our you your he she they them their his her user users s so do did".split())
# "not" and "no" are words here: "is allergic" and "is not allergic" say different things
SHORT = 6  # a line with fewer content words repeats only a line of its own conversation


def words(text: str) -> set[str]:
    """A text's content words (lowercased, stop words left out): what "says the same thing" compares."""
    return {w for w in _WORD_RE.findall(text.lower()) if w not in _STOP}


_words = words


MessageKey = tuple[object, object, str]
"""A message as (scope, conversation, id): a caller's own message ids need only be unique within a conversation
(a session, or a thread of dated notes: a chat app numbers each chat's messages from 1)."""


def conversation_of(rec: MemoryRecord) -> str | None:
    """The session, else the thread, a record was said in (None: neither)."""
    for key in ("session", "thread"):
        value = rec.metadata.get(key)
        if isinstance(value, str):
            return value
    return None


def said_ids(rec: MemoryRecord) -> frozenset[MessageKey]:
    """The messages a record stands for: an episode its own message, a memory the messages it came from."""
    session = conversation_of(rec)
    if rec.sources:
        return frozenset((rec.scope, session, s) for s in rec.sources)
    mid = rec.metadata.get("message_id") if rec.kind == EPISODE_KIND or "thread" in rec.metadata else None
    return frozenset([(rec.scope, session, str(mid))]) if mid else frozenset()


def hit_ids(hit: SearchHit) -> frozenset[MessageKey]:
    """The messages a hit stands for: those of its record, or of every message of its passage."""
    return frozenset(s for rec in hit.records for s in said_ids(rec))


def hit_words(hit: SearchHit) -> set[str]:
    """The content words a hit shows (what "says the same thing" compares)."""
    return _words(hit.text)


def contained(words: set[str], lines: Iterable[set[str]]) -> bool:
    """True when one of ``lines`` (their words) holds nearly all of ``words`` (:data:`CONTAINED` of them)."""
    if not words:
        return False
    need = CONTAINED * len(words)
    for prev in lines:  # a plain loop: this runs for every pair of candidates of every search
        if len(prev) >= need and len(words & prev) >= need:
            return True
    return False


Place = tuple[object, object, object]
"""Where a line was said: (scope, conversation, and an event's day)."""


def place_of(rec: MemoryRecord) -> Place:
    day = rec.occurred_at.date() if rec.kind == "event" and rec.occurred_at is not None else None
    return rec.scope, conversation_of(rec), day


class Lines:
    """The lines kept so far, with an index of their words: a candidate is compared only with the lines that
    hold one of its rarest words (a search for 1,000 hits compared each of 5,000 candidates with every line
    kept: 2 s, quadratic)."""

    def __init__(self) -> None:
        self.lines: list[tuple[set[str], Place]] = []
        self.index: dict[str, list[int]] = {}

    def add(self, words: set[str], where: Place) -> None:
        for w in words:
            self.index.setdefault(w, []).append(len(self.lines))
        self.lines.append((words, where))

    def near(self, words: set[str]) -> Iterable[tuple[set[str], Place]]:
        """The lines that may hold :data:`CONTAINED` of ``words``: one holding that many holds at least one of
        any ``len(words) - need + 1`` of them (the rarest are looked up)."""
        if len(self.lines) <= 32:
            return self.lines
        misses = len(words) - math.ceil(CONTAINED * len(words)) + 1
        rare = sorted(words, key=lambda w: len(self.index.get(w, ())))[:misses]
        return [self.lines[i] for i in sorted({i for w in rare for i in self.index.get(w, ())})]


def repeats(words: set[str], where: Place, lines: Iterable[tuple[set[str], Place]] | Lines) -> bool:
    """Whether a line (its ``words``, said at ``where``) repeats one of ``lines``: nearly all its words are in
    one of them; a short line's only in one of its own conversation ("We moved to Berlin." is not "My sister
    Anna moved to Berlin"); an event's never in one of an event of another day (climbing with Sam in May and in
    June)."""
    found = lines.near(words) if isinstance(lines, Lines) else lines
    return contained(words, (w for w, at in found if (len(words) >= SHORT or at[:2] == where[:2])
                             and not (at[2] and where[2] and at[2] != where[2])))  # an event of another day


def known(keys: frozenset[MessageKey]) -> set[MessageKey]:
    """``keys`` as a set to look records up in: each also under "any session" (a memory ``add()``ed with
    ``sources`` but no session names messages of its scope, whichever session said them)."""
    return {*keys, *((scope, None, mid) for scope, _, mid in keys)}


FRAMING = frozenset("please remember ok okay let lets go then also so just note noted".split())
"""Words that frame a message ("Please remember: ...", "OK, let's go with ...") but say nothing a memory of it
must repeat."""


def _promote(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Memories whose source episodes are among the hits give their rank to those episodes (the original says
    more: the speaker, the reason next to the decision); a memory that says all its episodes say (their words
    but framing, :data:`CONTAINED` of them) takes the better of their ranks instead, and they go (the distilled
    line is the shorter one to read: "User: never use tabs, always 4 spaces." for "Please remember: never use
    tabs in this repo, always 4 spaces.")."""
    episodes: dict[MessageKey, int] = {}
    for i, h in enumerate(hits):
        if h.record.kind == EPISODE_KIND:
            for sid in known(hit_ids(h)):
                episodes.setdefault(sid, i)
    if not episodes:
        return list(hits)
    place = {i: (i, 0) for i in range(len(hits))}  # where each hit is shown: (rank, order at that rank)
    for i, h in enumerate(hits):
        rec = h.record
        src = said_ids(rec)
        if rec.kind in (EPISODE_KIND, "summary") or not src or not all(s in episodes for s in src):
            continue
        idx = sorted({episodes[s] for s in src})
        mine = words(rec.text)
        held = words(" ".join(hits[j].text for j in idx))
        if not mine or i not in place or len(mine & held) / len(mine) < PROMOTE_MIN_OVERLAP:
            continue
        said = held - FRAMING
        if said and len(mine & said) >= CONTAINED * len(said) and all(j in place for j in idx):
            place[i] = min(place[j] for j in (i, *idx))  # the memory says it all: it is shown, they are not
            for j in idx:
                del place[j]
            continue
        del place[i]  # the episodes say more: they are shown, at the better of the two ranks
        for k, j in enumerate(idx):
            if j in place:
                place[j] = min(place[j], (i, k))
    return [hits[i] for i in sorted(place, key=place.__getitem__)]


def distinct(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` in rank order with every repeat removed (see the module docstring)."""
    out: list[SearchHit] = []
    said: set[MessageKey] = set()
    seen_words = Lines()  # the words of each line kept, and where it was said
    seen_not_summaries = Lines()  # of each line kept but a summary's
    sessions: set[tuple[object, object]] = set()
    for h in _promote(hits):
        rec = h.record
        src = hit_ids(h)
        if src and src <= said:
            continue
        session = (rec.scope, rec.metadata.get("session"))
        if rec.kind == "summary" and session[1] is not None and session in sessions:
            continue  # the session's own turns or memories, ranked higher, already said the relevant part
        words, where = hit_words(h), place_of(rec)
        # a message is weighed against summaries once joined (passages.join_passages)
        if repeats(words, where, seen_words if rec.kind != EPISODE_KIND else seen_not_summaries):
            continue
        sessions.add(session)
        out.append(h)
        seen_words.add(words, where)
        if rec.kind != "summary":  # a summary only quotes its turns in part: they can still be said in full
            said.update(known(src))
            seen_not_summaries.add(words, where)
    return out


__all__ = ["EPISODE_KIND", "FRAMING", "Lines", "MessageKey", "Place", "contained", "conversation_of", "distinct", "hit_ids",
           "hit_words", "known", "place_of", "repeats", "said_ids", "words"]
