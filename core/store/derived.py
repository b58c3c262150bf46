"""Forgetting a message forgets what was distilled from its words.

``remember()`` keeps a conversation's messages as episodes and distils memories and a session summary from them.
A memory names the messages it came from (``sources``), but an LLM's memory is attributed to its messages by the
words they share, and an LLM's summary names only the session's first and latest messages: its words may come
from any message it saw. So when messages are forgotten, a distilled record (not a message itself) of their
scope, of their session or of another that names one of them (an LLM merges what a later session adds into the
memory an earlier one gave), goes with them when it names one of them (or names none) and:

* its sources are all forgotten messages (it came from nothing else), or
* it holds a word only the forgotten messages said: a word (not a common one, such as "user") that no message
  still stored says, of the session or of the other messages the record names (a fact merged from two sessions
  survives the forget of one of its mentions). CJK text counts each pair of characters as a word.

A memory naming only messages still stored is left alone, whatever words it shares with the forgotten ones. A
session summary is rewritten instead of forgotten: its sentences, and the strings of its metadata (a keyless
summary's quoted ``parts``, its files and commands), that hold such a word become "…", and the forgotten ids
leave its sources. It is kept because it carries where a live capture of the session goes on from. The
summaries are rewritten before anything is deleted, so a failure leaves the messages in place to forget again.

The summary also notes the forgotten ids (``metadata["forgotten"]``, ids only, the latest that fit in
:data:`MAX_FORGOTTEN_CHARS`): apps capture by sending a conversation again (a restarted app sends a thread
whole), and a capture of the session treats the messages it names as unsaid (:mod:`remem.core.distill.forgotten`).

A forget that takes a session whole (its messages and its summary) leaves the summary as a note of that kind
(:func:`hollow`): no words, no sources, never valid (so never recalled or listed as current), only the session
and the ids of its forgotten messages, so a capture sending the session again does not say it again. A forget
of a whole scope with no other filter (a user erased) leaves no note, and takes the notes left before.

Left as they are: memories of ``remember(episodes=False)`` (no message records to forget: use
``forget(where={"sources": [...]})``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..scope import coerce_scope
from ..types import MemoryRecord
from . import erasure
from .records import SESSION_FORGOTTEN, from_payload
from .validation import MAX_METADATA_BYTES

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]+|(?:(?![{_CJK}])[^\W_])+(?:['.-](?:(?![{_CJK}])[^\W_])+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_COMMON = frozenset("""a an the and or but if then so of to in on at by for with from as into over about than too
is are was were be been being am do does did has have had will would can could should may might must not no yes
i me my mine we us our you your he him his she her it its they them their this that these those there here
what which who when where why how all any some each more most other just also very now still only
user users user's assistant said says say session summary outcome request requests files commands errors tools
""".split())
FORGOTTEN = "forgotten"  # a summary's metadata: the ids of its session's forgotten messages (no words)
MAX_FORGOTTEN_CHARS = 16 * 1024  # as JSON: the latest ids that fit are kept
_BOOKKEEPING = frozenset({"session", "distiller", "turns", "provisional", "messages", "covered", "prefix", "head",
                          "last_said", "request_ids", "named_in", "outcome_id", FORGOTTEN,
                          SESSION_FORGOTTEN})  # ids, hashes, counts


def words(text: str) -> set[str]:
    """The words of ``text`` that can tell where it came from: lowercased, not common ones; a version "16.2",
    a host "db-1" each one word; CJK text by its pairs of characters."""
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        if re.match(rf"[{_CJK}]", w):  # no spaces between CJK words: each pair of characters
            out.update(w[i:i + 2] for i in range(max(1, len(w) - 1)))
        elif w not in _COMMON:
            out.add(w)
    return out


@dataclass
class Derived:
    """What goes with forgotten messages: records to forget, and session summaries to rewrite without them."""
    gone: list[MemoryRecord] = field(default_factory=list)
    summaries: list[tuple[MemoryRecord, set[str], set[str]]] = field(default_factory=list)  # (rec, words, ids)

    def rewrite(self, engine: Any) -> None:
        """Each summary rewritten without the sentences and metadata strings that hold the forgotten words,
        and without the forgotten ids in its sources (see the module doc)."""
        for rec, only, ids in self.summaries:
            kept = [s if not words(s) & only else "…" for s in _SENTENCE.split(rec.text) if s]
            text = " ".join(s for i, s in enumerate(kept) if s != "…" or i == 0 or kept[i - 1] != "…")
            engine.update(rec.id, scope=rec.scope, text=text if words(text) else "…",
                          metadata=_noted(_scrubbed(rec.metadata, only), ids), replace_metadata=True,
                          sources=[s for s in rec.sources if s not in ids])


def derived_from(engine: Any, gone: Sequence[MemoryRecord]) -> Derived:
    """The distilled records that go with the forgotten ``gone`` (see the module doc), not in ``gone`` already."""
    leaving = {r.id for r in gone}
    said: dict[tuple[Any, str], list[MemoryRecord]] = {}
    for rec in gone:
        session = rec.metadata.get("session")
        if rec.kind == "episode" and isinstance(session, str):
            said.setdefault((rec.scope, session), []).append(rec)
    out = Derived()
    for (scope, session), messages in said.items():
        forgotten = {s for m in messages for s in m.sources}
        found = [r for r in _records(engine, engine.filter(scope, where={"metadata.session": session}))
                 if r.scope == scope and r.id not in leaving and not is_note(r)]
        found += _named_elsewhere(engine, scope, forgotten, leaving | {r.id for r in found})
        here = [r for r in found if r.kind == "episode"]
        only = set().union(*(words(m.text) for m in messages)) - set().union(*(words(r.text) for r in here))
        named = [r for r in found if r.kind != "episode"  # a summary may hold words of messages it does not name
                 and (r.kind == "summary" or not r.sources or set(r.sources) & forgotten)]
        elsewhere = _said_elsewhere(engine, scope, {s for r in named for s in r.sources} - forgotten
                                    - {s for r in here for s in r.sources})
        for rec in named:
            own = only - set().union(*(elsewhere.get(s, set()) for s in rec.sources))
            holds = bool(words(rec.text) & own) or _scrubbed(rec.metadata, own) != rec.metadata
            if rec.kind == "summary":  # each notes the ids, so a capture sending them again is not heard
                out.summaries.append((rec, own, forgotten))
            elif holds or (rec.sources and set(rec.sources) <= forgotten):
                out.gone.append(rec)
    return out


def forget_with_derived(engine: Any, gone: Sequence[MemoryRecord], *, dry_run: bool,
                        notes: bool = True) -> list[MemoryRecord]:
    """Forget ``gone`` and what goes with them (under the write lock the caller holds): their neighbours'
    context rewritten first and the summaries next (refused whole if one cannot be: nothing deleted, so calling
    again retries), then the records deleted. With ``notes``, the summary of a session forgotten whole is
    hollowed into a note instead (:func:`hollow`) and notes already left stay. Returns every record forgotten
    (a hollowed summary too), or with ``dry_run`` that would be."""
    also = derived_from(engine, gone)
    gone = [*gone, *also.gone]
    hollowed = _whole_sessions(gone) if notes else {}
    gone = [rec for rec in gone if not (notes and is_note(rec))]
    deleted = [rec for rec in gone if rec.id not in hollowed]
    if not dry_run:
        erasure.rewrite_neighbours(engine, [(rec, None) for rec in deleted])
        also.rewrite(engine)
        for rec, ids in hollowed.values():
            hollow(engine, rec, ids)
        for start in range(0, len(deleted), 512):
            engine.backend.delete([rec.id for rec in deleted[start:start + 512]])
        engine.after_forget(gone)
    return gone


def keeps_notes(scope: Any, *filters: Any) -> bool:
    """Whether a bulk forget of ``scope`` narrowed by ``filters`` (where, kind, tags, before) leaves notes of
    the sessions it takes whole: all but the erasure of a whole scope, which leaves no trace."""
    session = getattr(coerce_scope(scope, admin=True), "session", None)  # ALL_TENANTS has none
    return any(f is not None for f in filters) or session is not None


def is_note(rec: MemoryRecord) -> bool:
    """Whether ``rec`` is the note a forget of its session whole left (see :func:`hollow`)."""
    return rec.kind == "summary" and bool(rec.metadata.get(SESSION_FORGOTTEN))


def hollow(engine: Any, summary: MemoryRecord, ids: set[str]) -> None:
    """``summary`` made the note of its session forgotten whole: no words ("…"), tags or sources, valid for a
    millisecond when it began (so no search, current list or digest shows it), its metadata the session and the
    ids of its forgotten messages (those noted before too), read by the next capture of the session."""
    meta = {"session": summary.metadata.get("session"), SESSION_FORGOTTEN: True}
    start = summary.valid_from or summary.created_at
    engine.update(summary.id, scope=summary.scope, text="…", tags=[], sources=[], replace_metadata=True,
                  metadata=_noted({**meta, FORGOTTEN: summary.metadata.get(FORGOTTEN) or []}, ids),
                  valid_until=start + dt.timedelta(milliseconds=1))


def _whole_sessions(gone: Sequence[MemoryRecord]) -> dict[str, tuple[MemoryRecord, set[str]]]:
    """The summaries in ``gone`` (not notes) whose session has messages in ``gone`` too, by id, each with the
    ids of those messages."""
    said: dict[tuple[Any, Any], set[str]] = {}
    for rec in gone:
        if rec.kind == "episode":
            said.setdefault((rec.scope, rec.metadata.get("session")), set()).update(rec.sources)
    return {rec.id: (rec, said[key]) for rec in gone if rec.kind == "summary" and not is_note(rec)
            and (key := (rec.scope, rec.metadata.get("session"))) in said}


def _named_elsewhere(engine: Any, scope: Any, ids: set[str], seen: set[str]) -> list[MemoryRecord]:
    """The distilled records of ``scope`` in other sessions that name one of the messages ``ids``: an LLM merges
    what a later session adds into the memory an earlier one gave, which keeps that session."""
    if not ids:
        return []
    flt = engine.filter(scope, where={"sources": sorted(ids)})
    return [r for r in _records(engine, flt) if r.scope == scope and r.id not in seen and r.kind != "episode"
            and not is_note(r)]


def _said_elsewhere(engine: Any, scope: Any, ids: set[str]) -> dict[str, set[str]]:
    """The words of the messages ``ids`` (of other sessions) as stored in ``scope``, by message id."""
    if not ids:
        return {}
    flt = engine.filter(scope, kind="episode", where={"sources": sorted(ids)})
    return {s: words(r.text) for r in _records(engine, flt) if r.scope == scope for s in r.sources}


def _noted(meta: Mapping[str, Any], ids: set[str]) -> dict[str, Any]:
    """A summary's ``meta`` with ``ids`` noted as forgotten: the latest ids that fit in
    :data:`MAX_FORGOTTEN_CHARS` and in what the record's metadata may hold, so a note never makes a forget fail."""
    rest = {k: v for k, v in meta.items() if k != FORGOTTEN}
    room = min(MAX_FORGOTTEN_CHARS, MAX_METADATA_BYTES - len(json.dumps(rest, ensure_ascii=False, default=str)) - 64)
    kept: list[str] = []
    for mid in reversed([i for i in meta.get(FORGOTTEN) or () if i not in ids] + sorted(ids)):
        room -= len(json.dumps(mid, ensure_ascii=False)) + 1
        if room < 0:
            break
        kept.append(mid)
    return {**rest, FORGOTTEN: kept[::-1]} if kept else rest


def _scrubbed(value: Any, only: set[str]) -> Any:
    """``value`` (a summary's metadata) with every string that holds one of ``only`` replaced by "…", its ids,
    hashes and counts left as they are (:data:`_BOOKKEEPING`)."""
    if isinstance(value, str):
        return "…" if words(value) & only else value
    if isinstance(value, Mapping):
        return {k: v if k in _BOOKKEEPING else _scrubbed(v, only) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v, only) for v in value]
    return value


def _records(engine: Any, flt: Any) -> Iterable[MemoryRecord]:
    return [from_payload(f.id, f.payload) for f in engine.scan(flt)]


__all__ = ["FORGOTTEN", "MAX_FORGOTTEN_CHARS", "Derived", "derived_from", "forget_with_derived",
           "hollow", "is_note", "keeps_notes", "words"]
