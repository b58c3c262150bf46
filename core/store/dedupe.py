"""Idempotent and near-duplicate writes: the same text in a scope is stored once, a near-duplicate is merged.

Merging is guarded by what makes two statements different even when they are close in meaning: numbers,
identifiers, proper nouns, negation and conflicting metadata, so "v1.6" vs "v1.7" and "likes" vs "doesn't
like" are never merged.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import time
from dataclasses import replace
from typing import Any, Collection, Mapping

from ..recall import lexical
from ..recall.passages import conversation, message_id
from ..recall.repeats import EPISODE_KIND
from ..types import MemoryRecord, utcnow
from .backends.base import Backend, Cond, PrefetchSpec
from .records import build_filter, from_payload, normalize_text
from .validation import MAX_METADATA_BYTES, MAX_TAGS

_NEGATIONS = re.compile(r"\b(not|no|never|don't|doesn't|didn't|isn't|wasn't|won't|can't|cannot|without|stopped|"
                        r"dislikes?|hates?)\b", re.I)
_NUMBER_RE = re.compile(
    r"\d+(?:[.,:]\d+)*|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|first|second|"
    r"third|fourth|fifth|last|next|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|"
    r"march|april|may|june|july|august|september|october|november|december)s?\b", re.I)
_PROPER_RE = re.compile(r"\b[A-Z][\w-]+")
# capitalised only because a sentence starts with them ("We never deploy ...", "User: Our CI runs ...")
_SENTENCE_STARTS = frozenset("""a an the and or but so if then when while also just please never always
this that these those it its i i'm i've we we're our you your they their he she his her my user
""".split())
_WORD_RE = re.compile(r"[a-z0-9]+")
MAX_SOURCES = 64
SUMMARY_KIND = "summary"
# metadata the distillation pipeline adds to say where a memory came from: never a reason not to merge
PROVENANCE_KEYS = frozenset({"session", "distiller", "merged_from_session", "fallback"})
# where a dated note sits in its thread (:mod:`.threads`): "likes tea" said twice is one note wherever it was said
THREAD_KEYS = frozenset({"thread", "message_id", "position", "follows", "followed_by", "merged_messages"})
# [[conversation, message id], ...]: the dated notes merged into this one. Their neighbours name them (and hold
# their words as context), so a forget or an edit of this one must reach those neighbours too (:mod:`.erasure`)
MERGED_MESSAGES = "merged_messages"
MAX_MERGED_MESSAGES = 64  # a note repeated more often is stored again: its metadata stays small


def find_duplicate(backend: Backend, rec: MemoryRecord, dense: list[float] | None, *, threshold: float,
                   rrf_k: int) -> MemoryRecord | None:
    """The current memory ``rec`` repeats, if any: the same content hash, else a guarded near-duplicate."""
    now_ts = time.time()
    flt = build_filter(rec.scope, kind=rec.kind, valid_ts=now_ts)  # a superseded memory is never revived
    flt.must.append(Cond("content_hash", eq=rec.content_hash))
    # a message is the same message only in its own session, and a session has its own summary; a memory is the
    # same memory whichever session (or distiller) it came from: "we always use ruff" said in two sessions is
    # one preference with both sources
    ignore = () if rec.kind in (EPISODE_KIND, SUMMARY_KIND) else PROVENANCE_KEYS | THREAD_KEYS
    for f in backend.scroll(flt, limit=5)[0]:
        same = from_payload(f.id, f.payload)
        if not conflicting(same.metadata, rec.metadata, ignore) and _room_for(same, rec):
            return same
    if rec.kind == EPISODE_KIND:  # what was said is kept as said: only an exact repeat (a re-capture) is one
        return None
    flt = build_filter(rec.scope, kind=rec.kind, valid_ts=now_ts)
    if dense is not None:
        # stored vectors are 2 x the text's embedding (Dot; older stores: text + context); relative to the new
        # one's squared norm the score is the cosine
        norm2 = sum(x * x for x in dense) or 1.0
        cands = [replace(c, score=c.score / norm2)
                 for c in backend.query([PrefetchSpec("dense", dense, 5)], flt, 5, rrf_k)]
        cutoff: float | None = threshold
    else:
        cands = backend.query([PrefetchSpec("bm25", lexical.bm25_query(rec.text), 5)], flt, 5, rrf_k)
        cutoff = None
    for cand in cands:
        other = from_payload(cand.id, cand.payload)
        if other.scope != rec.scope or conflicting(other.metadata, rec.metadata, ignore) or not _room_for(other, rec):
            continue
        if same_meaning(rec.text, other.text, cand.score if cutoff is not None else None, cutoff):
            return other
    return None


def merge_into(backend: Backend, existing: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
    """Fold ``new`` into ``existing``: tags and provenance accumulate, importance keeps the higher value."""
    # bounded like one write's (MAX_TAGS, MAX_METADATA_BYTES): repeating a memory must not grow it without end,
    # under a tenant quota or not (the record count stays, a record would not)
    merged_tags = tuple(dict.fromkeys([*existing.tags, *new.tags]))[:MAX_TAGS]
    meta = {**{k: v for k, v in new.metadata.items() if k not in THREAD_KEYS}, **existing.metadata}  # one place
    if len(json.dumps(meta, ensure_ascii=False, default=str)) > MAX_METADATA_BYTES:
        meta = dict(existing.metadata)
    merged = merged_messages(existing)
    said = conversation(new)
    if said is not None and (said[1], str(message_id(new))) not in said_as(existing):
        meta[MERGED_MESSAGES] = [list(pair) for pair in (*merged, (said[1], str(message_id(new))))]
    sources = tuple(dict.fromkeys([*existing.sources, *new.sources]))[:MAX_SOURCES]
    update = {"tags": list(merged_tags), "sources": list(sources),
              "importance": max(existing.importance, new.importance), "meta": meta,
              "merged_count": existing.merged_count + 1, "updated_ts": time.time()}
    backend.set_payload([existing.id], update)
    return replace(existing, tags=merged_tags, importance=update["importance"], metadata=meta, sources=sources,
                   merged_count=update["merged_count"], updated_at=utcnow())


def merged_messages(rec: MemoryRecord) -> list[tuple[str, str]]:
    """(conversation, message id) of the dated notes merged into ``rec`` (:data:`MERGED_MESSAGES`)."""
    value = rec.metadata.get(MERGED_MESSAGES)
    pairs = value if isinstance(value, (list, tuple)) else ()
    return [(str(p[0]), str(p[1])) for p in pairs if isinstance(p, (list, tuple)) and len(p) == 2]


def said_as(rec: MemoryRecord) -> list[tuple[str, str]]:
    """(conversation, message id) of each message ``rec``'s words were said as: itself, if it is a message of a
    conversation (not a memory naming its source message), and the dated notes merged into it."""
    conv = conversation(rec)
    return [*([(conv[1], str(message_id(rec)))] if conv is not None else []), *merged_messages(rec)]


def _same_day(a: Any, b: Any) -> bool:
    """The same day where either was said, or in UTC (one moment told in two offsets is one day)."""
    return a.date() == b.date() or a.astimezone(_dt.timezone.utc).date() == b.astimezone(_dt.timezone.utc).date()


def _room_for(existing: MemoryRecord, new: MemoryRecord) -> bool:
    """A message merges into a note that can still name it (:data:`MAX_MERGED_MESSAGES`); an event merges only
    into one of the same day ("went climbing with Sam" in May and in June are two events: merged, the June one
    was kept nowhere)."""
    if new.kind == "event" and existing.occurred_at and new.occurred_at and not _same_day(existing.occurred_at,
                                                                                         new.occurred_at):
        return False
    return conversation(new) is None or len(merged_messages(existing)) < MAX_MERGED_MESSAGES


def conflicting(a: Mapping[str, Any], b: Mapping[str, Any], ignore: Collection[str] = ()) -> bool:
    """Whether the two share a metadata key with different values (``ignore``: keys that say where a record
    came from, not what it says)."""
    return any(k in b and b[k] != v and k not in ignore for k, v in a.items())


def _names_in(a: str, b: str) -> bool:
    """Every name ``a`` capitalises is said in ``b`` too ("Alice likes tea" is not "Bob likes tea"; "CI runs on
    GitHub Actions" is "Our CI runs on GitHub Actions")."""
    said = set(_WORD_RE.findall(b.lower()))
    return all(w.lower() in _SENTENCE_STARTS or _NUMBER_RE.fullmatch(w) or set(_WORD_RE.findall(w.lower())) <= said
               for w in _PROPER_RE.findall(a))  # days and months are the numbers' guard


def _numbers(text: str) -> list[str]:
    """The numbers, ordinals, days and months of ``text``, in order ("Fridays" and "a Friday" are one day)."""
    return [n.lower().removesuffix("s") if n[-1:].isalpha() else n for n in _NUMBER_RE.findall(text)]


def same_meaning(a: str, b: str, cosine: float | None, threshold: float | None) -> bool:
    """Near-duplicate test: close in meaning (or in words, without vectors), with the same numbers,
    identifiers and polarity, so "v1.6" vs "v1.7" or "likes" vs "doesn't like" are never merged."""
    if _numbers(a) != _numbers(b):
        return False
    if not (_names_in(a, b) and _names_in(b, a)):
        return False
    if set(lexical.identifiers(a)) != set(lexical.identifiers(b)):
        return False
    if bool(_NEGATIONS.search(a)) != bool(_NEGATIONS.search(b)):
        return False
    wa, wb = set(_WORD_RE.findall(normalize_text(a))), set(_WORD_RE.findall(normalize_text(b)))
    jaccard = len(wa & wb) / max(1, len(wa | wb))
    if cosine is not None and threshold is not None:
        return cosine >= threshold and jaccard >= 0.5
    return jaccard >= 0.8


__all__ = ["MERGED_MESSAGES", "PROVENANCE_KEYS", "THREAD_KEYS", "conflicting", "find_duplicate", "merge_into",
           "merged_messages", "said_as", "same_meaning"]
