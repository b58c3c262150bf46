"""Threads: dated notes said close together in one scope are read as one conversation.

A user who stores a conversation turn by turn with ``add(text, occurred_at=...)`` gives no session and no
``context=``, yet each turn means little alone: an answer ("Yes, every Tuesday") is found by its question.
``remember()`` keeps the messages around each episode for that reason (:mod:`remem.core.distill.episodes`); a
dated note gets the same from its neighbours in time. A note added with its own ``occurred_at`` and no ``context=``
joins the thread of the notes of the same scope dated within the thread gap of it (else it starts one): the two
notes before it become its recall context and ``metadata["follows"]``, it becomes the context after them
(``followed_by``; their BM25 vector is rewritten, their dense vector is the text's alone), and recall joins
neighbours found together into one passage, as it does for episodes (:mod:`remem.core.recall.passages`). LoCoMo
turns ``add()``ed one by one, BM25 only: evidence recall_any@10 0.734 alone, 0.812 with the turns before as
context, 0.891 with both sides and passages.

One call places its dated notes in the order of their dates (a history fetched newest first reads oldest
first). Notes said before every note of the thread said next (the next page of a history paged newest first,
even one that ends further than the gap from it) go first in it, with what follows them as their context after.
A note dated between stored notes of its thread (a message that arrives late, a history back-filled out of order) goes
between them in date order: the notes said just before and after it are its links and context, and theirs are
rewritten around it (:mod:`remem.core.store.thread_insert`). The notes a new one is placed from are those said
last near its date, not those stored last (a back-filled history is stored after what was said later).
``metadata={"thread": "name"}`` names the thread itself (with or without a date); ``thread_gap_minutes``
(:class:`~remem.core.settings.Settings`, 30 by default) is the gap; ``0`` turns inference off. Facts, preferences
and the other kinds are never threaded: what they say does not depend on what was said next to them. Thread keys
are bookkeeping: they never keep two notes that say the same thing apart (:data:`THREAD_KEYS`, ignored by
de-duplication). Calls at the same time keep a thread's order: ``add_many`` embeds first (a note's dense vector is
its text's alone), then finds where its notes go in their threads, places and stores them (and moves and relinks
the stored notes around them) in one step under the store's write lock, so two calls never continue one thread
from the same note or take the same position.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from ..recall.passages import (CONTEXT_AFTER, CONTEXT_TURN_TOKENS, CONTEXT_TURNS, LINK_KEYS, clipped, links, message_id,
                               said_order)
from ..scope import coerce_scope, own_records
from ..types import MemoryRecord, RememError, Scope, to_datetime
from .backends.base import Cond
from .dedupe import PROVENANCE_KEYS, THREAD_KEYS, conflicting
from .records import content_hash, from_payload, valid_within
from .thread_insert import (Insertion, arrange, extend_stored, later_notes, make_room, relink, said_first,
                            said_next)

log = logging.getLogger("remem.store.threads")

THREAD_KIND = "note"
LOOKUP_LIMIT = 32  # stored notes looked at to find the thread a new one continues
_PLACE_KEYS = frozenset({"position", "follows", "followed_by", "merged_messages"})


@dataclass
class _Thread:
    """What is known of one thread while a call places its notes: its name, next position, last notes."""

    name: str
    position: int
    last_at: dt.datetime | None
    history: list[tuple[str, str]] = field(default_factory=list)  # (text, message id), the last said last
    stored_tail: list[MemoryRecord] = field(default_factory=list)  # stored notes still waiting for what follows
    placed: list[int] = field(default_factory=list)  # indexes of this call's items in the thread, in order
    inserting: bool = False  # a stored note is dated after one of the call's: placed by thread_insert.arrange
    first: list[MemoryRecord] | None = None  # the thread's first notes, when the call's are all said before them
    started: bool = False  # started by this call, no name given: it may go first in the stored thread said next


@dataclass
class Placement:
    """What placing a call's items decided: the items to store (with context and thread metadata) and, for
    the stored notes they follow, the notes said after them (:func:`extend_stored`)."""

    items: list[dict[str, Any]]
    record_ids: list[str | None]
    after_stored: dict[str, tuple[MemoryRecord, list[tuple[str, str]]]] = field(default_factory=dict)
    inserted: list[Insertion] = field(default_factory=list)  # threads the call's notes go into between stored ones


def _threadable(item: Mapping[str, Any]) -> bool:
    meta = item.get("metadata") or {}
    if not isinstance(meta, Mapping) or item.get("context") or item.get("kind", THREAD_KIND) != THREAD_KIND:
        return False
    if "session" in meta or "distiller" in meta:  # remember()'s own records know their conversation
        return False
    named = meta.get("thread")
    return isinstance(named, str) and bool(named.strip()) or (named is None and item.get("occurred_at") is not None)


def _placeable(item: Mapping[str, Any], gap: dt.timedelta) -> bool:
    """Whether :func:`place` places ``item``: a threadable note, in a named thread or with inference on."""
    return _threadable(item) and (gap > dt.timedelta(0) or bool((item.get("metadata") or {}).get("thread")))


def _gap(engine: Any) -> dt.timedelta:
    return dt.timedelta(minutes=engine.settings.thread_gap_minutes)


def _when(item: Mapping[str, Any]) -> dt.datetime | None:
    try:
        return to_datetime(item.get("occurred_at"))
    except (TypeError, ValueError):
        return None  # the write itself reports the bad date


def _said_last(engine: Any, flt: Any, limit: int = LOOKUP_LIMIT) -> list[Any] | None:
    """The notes of ``flt`` said last (by date, up to ``limit``); None when the store cannot order by date (a
    server collection created before dates were indexed): the caller falls back to the newest stored."""
    try:
        return engine.backend.newest(flt, limit, by="occurred_ts")
    except (RememError, ValueError, OverflowError):
        raise
    except Exception as exc:  # noqa: BLE001 - the server's own error for a field it cannot order by
        log.debug("ordering by date failed: %s", exc)
        return None


def _lookup(engine: Any, scope: Scope, name: str | None, at: dt.datetime | None,
            gap: dt.timedelta) -> tuple[list[Any], bool]:
    """The stored notes a new one's thread is found from: a named thread's newest stored (it may be undated) and,
    for a long one, its notes said last; else those dated within ``gap`` of ``at``, said last first (the newest
    stored can be said earlier: a history back-filled), and the ones said before ``at`` when all of those were
    said after it. Also: whether they hold every note of the thread dated after ``at``."""
    own = own_records(scope)  # a tenant's scope also holds its users' notes (and they may have said more since)
    if name:
        flt = engine.filter(scope, kind=THREAD_KIND, where={"thread": name, **own})
        found = engine.backend.newest(flt, LOOKUP_LIMIT)
        if len(found) < LOOKUP_LIMIT or at is None:
            return found, len(found) < LOOKUP_LIMIT
        dated = _said_last(engine, flt)
        return found + (dated or []), dated is not None
    if at is None:
        return [], True  # an undated note names its thread or starts one
    flt = engine.filter(scope, kind=THREAD_KIND, where={"occurred_at": {"$gte": at - gap, "$lte": at + gap}, **own})
    found = _said_last(engine, flt)
    if found is None:
        found = engine.backend.newest(flt, LOOKUP_LIMIT)
        return found, len(found) < LOOKUP_LIMIT
    if len(found) < LOOKUP_LIMIT or any(_said_at(f) <= at.timestamp() for f in found):
        return found, True
    before = engine.filter(scope, kind=THREAD_KIND, where={"occurred_at": {"$gte": at - gap, "$lte": at}, **own})
    return found + (_said_last(engine, before) or []), False


def _said_at(found: Any) -> float:
    value = found.payload.get("occurred_ts")
    return float(value) if isinstance(value, (int, float)) else float("inf")


def _stored_thread(engine: Any, scope: Scope, name: str | None, at: dt.datetime | None,
                   gap: dt.timedelta) -> _Thread | None:
    """The stored thread a note continues: the named one, else the thread of the last note said before ``at``
    among those dated within ``gap`` of it (none: the note is older than all of them, and starts one). When one
    of its notes is dated after ``at``, the note goes between (:mod:`remem.core.store.thread_insert`)."""
    try:  # a date at the end of the calendar has no window around it: the note starts a thread
        found, complete = _lookup(engine, scope, name, at, gap)
    except (RememError, ValueError, OverflowError) as exc:  # a failed lookup costs the context, never the write
        log.debug("thread lookup failed: %s", exc)
        return None
    unique = {f.id: f for f in found}.values()
    recs = [r for r in (from_payload(f.id, f.payload) for f in unique)
            if r.scope == scope and isinstance(r.metadata.get("thread"), str) and message_id(r)]
    if not recs:
        return None
    if name is None:  # the thread of the last note said before it (there may be two near it)
        before = [r for r in recs if r.occurred_at is not None and at is not None and r.occurred_at <= at]
        if before:
            name = str(max(before, key=lambda r: (r.occurred_at, said_order(r))).metadata["thread"])
        else:  # older than all of them (a history paged newest first): it goes first in the next one's thread
            nxt = min((r for r in recs if r.occurred_at is not None), key=lambda r: (r.occurred_at, said_order(r)),
                      default=None)
            first = said_first(engine, scope, str(nxt.metadata["thread"]), at) if nxt and at else None
            return None if first is None else _going_first(str(nxt.metadata["thread"]), first, at)
    members = sorted((r for r in recs if r.metadata.get("thread") == name), key=said_order)
    if len(members) < CONTEXT_TURNS and at is not None:  # its past reaches back further than the gap
        members = _said_before(engine, scope, name, at, members)
    if at is not None and not any(r.occurred_at is not None and r.occurred_at <= at for r in members):
        first = said_first(engine, scope, name, at)
        if first is not None:
            return _going_first(name, first, at)
    if later_notes(engine, scope, name, at, members, complete):
        dates = [r.occurred_at for r in members if r.occurred_at is not None]
        return _Thread(name=name, position=0, last_at=max([*dates, at]), inserting=True)
    last = members[-1]
    pos = last.metadata.get("position")
    return _Thread(name=name, position=(pos + 1 if isinstance(pos, int) else len(members)),
                   last_at=last.occurred_at, history=[(r.text, str(message_id(r))) for r in members[-CONTEXT_TURNS:]],
                   stored_tail=members[-CONTEXT_AFTER:])


def _said_before(engine: Any, scope: Scope, name: str, at: dt.datetime,
                 members: list[MemoryRecord]) -> list[MemoryRecord]:
    """``members`` with the notes of thread ``name`` said last up to ``at`` (two notes 40 minutes apart in a thread
    of notes 20 minutes apart are still each other's past)."""
    try:  # a lookup never fails the write (nor does a store that cannot order by date: none found)
        flt = engine.filter(scope, kind=THREAD_KIND, where={"thread": name, "occurred_at": {"$lte": at},
                                                            **own_records(scope)})
        more = [from_payload(f.id, f.payload) for f in _said_last(engine, flt, CONTEXT_TURNS) or []]
    except (RememError, ValueError, OverflowError) as exc:
        log.debug("thread past lookup failed: %s", exc)
        return members
    have = {r.id for r in members}
    extra = [r for r in more if r.id not in have and r.scope == scope and message_id(r)]
    return sorted([*members, *extra], key=said_order)


def _going_first(name: str, first: list[MemoryRecord], at: dt.datetime) -> _Thread:
    """A thread the call's notes go into before its ``first`` notes (no stored note moves)."""
    return _Thread(name=name, position=0, last_at=at, inserting=True, first=first)


def _go_first(engine: Any, sc: Scope, thread: _Thread, placement: Placement,
              seen: dict[tuple[Scope, str], _Thread], gap: dt.timedelta) -> None:
    """A thread the call started goes first in the stored thread said next (:func:`said_next`), if there is one
    and the call's notes are all said before it: they take its name and are placed again, with the call's
    other notes of that thread if it has some (then from the whole thread)."""
    joined = said_next(engine, sc, thread.last_at, gap)
    if joined is None:
        return
    name, first = joined
    other = seen.pop((sc, name), None)
    del seen[(sc, thread.name)]
    if other is not None:  # the call continues that thread too: all of its notes there are placed together
        for rec in other.stored_tail:
            placement.after_stored.pop(rec.id, None)
        rank = {i: n for n, i in enumerate(_said_order(placement.items))}
        thread.placed = sorted({*thread.placed, *other.placed}, key=rank.__getitem__)
        first = None
    thread.name, thread.inserting, thread.first = name, True, first
    seen[(sc, name)] = thread
    for i in thread.placed:  # placed again: what the call's own order gave them is dropped
        item = placement.items[i]
        item.pop("context", None)
        item["metadata"] = {k: v for k, v in item["metadata"].items() if k not in {"position", *LINK_KEYS}}
        item["metadata"]["thread"] = name


def _said_order(items: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indexes of ``items`` with the dated ones in the order of their dates (a history fetched newest first is
    still placed oldest first); the undated keep their places."""
    dated = [i for i, it in enumerate(items) if _when(it) is not None]
    order = list(range(len(items)))
    for slot, i in zip(dated, sorted(dated, key=lambda j: (_when(items[j]), j))):
        order[slot] = i
    return order


Repeats = dict[tuple[Scope, str, float], list[MemoryRecord]]


def _stored_repeats(engine: Any, items: Sequence[Mapping[str, Any]], keys: Mapping[int, tuple[Scope, str]],
                    dedupe: bool) -> Repeats:
    """The current stored notes that ``items`` repeat word for word at the same date, by (scope, content hash,
    date): a log synced again is the same notes, not new ones said again (one query per scope of the call)."""
    wanted: dict[Scope, set[str]] = {}
    for i, (sc, digest) in keys.items():  # (scope, content hash) of each placed item
        if _when(items[i]) is not None and items[i].get("dedupe", dedupe):
            wanted.setdefault(sc, set()).add(digest)
    found: Repeats = {}
    for sc, hashes in wanted.items():
        try:
            flt = valid_within(engine.filter(sc, kind=THREAD_KIND), time.time())  # a superseded copy is no twin
            flt.must.append(Cond("content_hash", any_of=tuple(sorted(hashes))))
            for f in engine.scan(flt):
                rec = from_payload(f.id, f.payload)
                if rec.scope == sc and rec.occurred_at is not None:
                    found.setdefault((sc, rec.content_hash, rec.occurred_at.timestamp()), []).append(rec)
        except (RememError, ValueError) as exc:  # a failed lookup places the note as said again
            log.debug("repeat lookup failed: %s", exc)
    return found


def _same_note(stored: MemoryRecord, meta: Mapping[str, Any], named: str | None) -> bool:
    """Whether de-duplication would take the new note as ``stored``: the same named thread (if it names one), no
    metadata that says otherwise ("sounds good" from another speaker is another message)."""
    return (named is None or stored.metadata.get("thread") == named) and not conflicting(
        stored.metadata, {k: v for k, v in meta.items() if k != "thread"}, PROVENANCE_KEYS | THREAD_KEYS)


def prepare(engine: Any, items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``items`` (``add_many`` items) for :func:`place`, refused before anything is embedded or
    stored when one is no mapping, or when a note it would place sets a key that says where a note sits."""
    items = list(items)  # a generator is read once: checking it first would leave nothing to store
    if not all(isinstance(it, Mapping) for it in items):
        raise TypeError("every item must be a mapping of add() fields")
    gap = _gap(engine)
    out = [dict(it) for it in items]
    for it in out:
        if not _placeable(it, gap):
            continue
        sources = it.get("sources")
        if sources is not None and not isinstance(sources, (str, list, tuple)):
            it["sources"] = list(sources)  # a generator read once to build it would leave none for its message id
        taken = (it.get("metadata") or {}).keys() & _PLACE_KEYS
        if taken:
            raise ValueError(f"metadata keys {sorted(taken)} say where a note sits in its thread and are set by "
                             "remem: name yours otherwise (to copy a store, export and import it)")
    return out


def place(engine: Any, items: Sequence[Mapping[str, Any]], scope: Any, dedupe: bool = True) -> Placement:
    """``items`` (``add_many`` items from :func:`prepare`, in the order said) with the threadable ones placed in
    their threads: context before and after, ``thread``, ``position``, ``message_id``, ``follows`` and
    ``followed_by``. What it reads of the store is where the threads end: the caller holds the write lock from
    here until the notes are stored, or two calls would continue a thread from the same note."""
    gap = _gap(engine)
    out = [dict(it) for it in items]
    ids: list[str | None] = [None] * len(out)
    open_: dict[tuple[Scope, str | None], _Thread] = {}  # (scope, named thread or None for inferred)
    seen: dict[tuple[Scope, str], _Thread] = {}  # by (scope, thread name): a thread found again is the same
    placement = Placement(items=out, record_ids=ids)
    said: dict[int, str] = {}  # each placed item's text, redacted
    scopes: dict[int, Scope] = {}
    for i, it in enumerate(out):
        if not _placeable(it, gap):
            continue
        try:
            scopes[i] = coerce_scope(it.get("scope", scope))
        except (TypeError, ValueError):
            continue  # the write reports it
        # what neighbours get as context is redacted before it is clipped: a clip through a key would leave a
        # tail no rule knows ("…6sT8uV0wX2" without its "sk-proj-" prefix)
        said[i] = engine.check.redact(it["text"]) or "" if isinstance(it.get("text"), str) else ""
    keys = {i: (sc, content_hash(said[i], sc)) for i, sc in scopes.items()}
    repeats = _stored_repeats(engine, out, keys, dedupe)
    for i in _said_order(out):
        it = out[i]
        if i not in scopes:
            continue
        sc, text, at = scopes[i], said[i], _when(it)
        meta = dict(it.get("metadata") or {})
        # the name as stored (metadata is redacted): a key pasted as a name still finds its thread
        named = engine.check.redact(meta["thread"]) if isinstance(meta.get("thread"), str) else None
        twins = repeats.get((*keys[i], at.timestamp()), []) if at is not None else []
        if any(_same_note(rec, meta, named) for rec in twins):
            continue  # stored already: de-duplication takes it as the same note
        thread = open_.get((sc, named))
        if thread is not None and named is None and (at is None or thread.last_at is None
                                                     or abs(at - thread.last_at) > gap):
            thread = None
        if thread is None:
            thread = (_stored_thread(engine, sc, named, at, gap) if named or at is not None else None) or _Thread(
                name=named or f"t-{uuid.uuid4().hex[:16]}", position=0, last_at=at, started=named is None)
            thread = seen.setdefault((sc, thread.name), thread)  # found again (a later note of the call): the same
            open_[(sc, named)] = thread
            for rec in thread.stored_tail if not thread.placed else ():
                if len(links(rec, "followed_by")) < CONTEXT_AFTER:
                    placement.after_stored.setdefault(rec.id, (rec, []))
        rid = str(uuid.uuid4())
        sources = it.get("sources")  # read once already (prepare)
        given = meta.get("message_id")  # the caller's own id for the message (a chat sync), else its first source
        mid = engine.check.source_id(given.strip() if isinstance(given, str) and given.strip() else (
            str(sources[0]) if sources and not isinstance(sources, str) else rid))  # as its sources are stored
        ids[i] = rid
        thread.placed.append(i)
        if thread.inserting:  # placed among the stored notes once all of the call's are known
            if thread.first and (at is None or at >= min(r.occurred_at or at for r in thread.first)):
                thread.first = None  # not said before all of them: placed from the whole thread
            meta.update({"thread": thread.name, "message_id": mid})
            it["metadata"] = meta
            thread.last_at = max(thread.last_at, at) if thread.last_at and at else thread.last_at or at
            continue
        past = thread.history[-CONTEXT_TURNS:]
        meta.update({"thread": thread.name, "position": thread.position, "message_id": mid})
        if past:
            meta["follows"] = [m for _, m in past]
            it["context"] = " ".join(clipped(t, CONTEXT_TURN_TOKENS) for t, _ in past)
        it["metadata"] = meta
        for rec in thread.stored_tail:
            waiting = placement.after_stored.get(rec.id)
            if waiting is not None and len(links(rec, "followed_by")) + len(waiting[1]) < CONTEXT_AFTER:
                waiting[1].append((text, mid))
        thread.history.append((text, mid))
        thread.position += 1
        thread.last_at = at or thread.last_at
    for (sc, name), thread in list(seen.items()):
        if thread.started and thread.last_at is not None:
            _go_first(engine, sc, thread, placement, seen, gap)
    for (sc, name), thread in seen.items():
        if thread.inserting:
            placement.inserted.append(arrange(engine, sc, name, [(i, _when(out[i])) for i in thread.placed], out,
                                              said, thread.first))
            continue
        for k, i in enumerate(thread.placed):  # what is said after each, in this call
            following = thread.placed[k + 1:k + 1 + CONTEXT_AFTER]
            if following:
                it = out[i]
                after = [clipped(said.get(j, ""), CONTEXT_TURN_TOKENS) for j in following]
                it["context"] = " ".join([*([it["context"]] if it.get("context") else []), *after])
                it["metadata"]["followed_by"] = [out[j]["metadata"]["message_id"] for j in following]
    return placement


def placed_records(engine: Any, placement: Placement, built: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``built`` (the records of the call's items, built before they were placed) with each placed note's id,
    context and thread metadata, checked and redacted like any: all are built before any is stored."""
    out = list(built)
    for i, rid in enumerate(placement.record_ids):
        if rid is not None:
            it = placement.items[i]
            out[i] = replace(built[i], id=rid, context=engine.check.context(it.get("context")),
                             metadata=engine.check.metadata(it.get("metadata")))
    return out


def placeable(engine: Any, items: Sequence[Mapping[str, Any]]) -> set[int]:
    """Indexes of the ``items`` that :func:`place` places (their records wait for the write lock)."""
    gap = _gap(engine)
    return {k for k, it in enumerate(items) if _placeable(it, gap)}


def store_placed(engine: Any, items: Sequence[Mapping[str, Any]], built: Sequence[MemoryRecord],
                 vectors: Mapping[int, Any], placeable: set[int], *, scope: Any, dedupe: bool) -> list[MemoryRecord]:
    """Store a call whose dated notes are placed: place them and store them in one step under the write lock, so
    two calls never take the same position or continue the same note, and give the stored notes they continue
    what followed; then the call's other items, each under the lock only while it is written. No embedding
    happens here (``vectors``, by item index, were embedded before)."""
    out: list[Any] = [None] * len(built)

    def commit(rec: MemoryRecord, k: int) -> None:
        vec = None if vectors[k] is None else list(vectors[k])
        out[k] = engine.commit_new(replace(rec, embedded=vec is not None or not engine.dense), vec,
                                   dedupe_=items[k].get("dedupe", dedupe))

    with engine.write_lock:
        engine.check_usable()
        placed = place(engine, items, scope, dedupe)
        recs = placed_records(engine, placed, built)  # checked before any of the call's records is stored
        make_room(engine, placed.inserted)  # the later notes of a thread moved down for notes said before them
        for k in sorted(placeable):
            commit(recs[k], k)
        extend_stored(engine, placed)
        relink(engine, placed.inserted)
    for k in range(len(built)):
        if k not in placeable:
            commit(built[k], k)
    return out


__all__ = ["THREAD_KEYS", "Placement", "place", "placeable", "store_placed", "placed_records", "prepare"]
