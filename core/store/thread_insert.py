"""Notes dated between stored notes of a thread: put where they were said, the notes around them relinked.

A message that arrives late, or a history back-filled out of order, is dated between stored notes of its thread
(:mod:`remem.core.store.threads`). It goes after the last note of the thread (in the order said) dated no later
than it or undated, before the notes dated after it; notes of one call dated alike keep the call's order.
Positions stay whole numbers, as stores written before have them. Notes said before every note of a thread (a
history synced newest first, page after page) go first, below its first position: only its first notes are
read (:func:`said_first`), none moves, so a back-fill costs what a sync in date order does. Else the thread's
later notes move down to make room (a payload write each, nothing re-indexed; one that has room already keeps
its position), so a note costs a read of its thread and a write per note said after it, at most
:data:`MAX_MOVED` of them: a note that would move more goes after the last (without the bound, a named channel
of 2,000 messages synced in pages of 50 newest first wrote 39,078 payloads in 6.0 s; 600 added one by one
newest first, 180,897 in 21 s).
Notes no longer valid (superseded) are no members; undated notes of a named thread keep their places.

Each of the call's notes gets the two notes said before it as ``follows`` and recall context and the two after
it as ``followed_by``. A stored note with a new one among its two before or two after gets its links recomputed
from the thread as stored plus the call's notes, and its context rebuilt from their texts: it never keeps the
words of a message that is not its neighbour any more, and it names each message whose words it holds, so a
forget reaches them (:mod:`remem.core.store.erasure`; a neighbour forgotten before is stored nowhere, so it is
left out of both, and a passage across its place no longer shows the gap). The room is made before the call's
notes are stored (a failure then leaves a gap in the positions, which orders the same), the neighbours are
rewritten after (they never name a note that was not stored), all under the write lock that
:func:`~remem.core.store.threads.store_placed` holds: a call at the same time reads the thread as this one left it.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, MutableMapping, Sequence, Union

from ..recall.passages import (CONTEXT_AFTER, CONTEXT_TURN_TOKENS, CONTEXT_TURNS, LINK_KEYS, clipped, links, message_id,
                               said_order)
from ..scope import own_records
from ..types import MemoryRecord, NotFoundError, RememError, Scope, utcnow
from .erasure import one_write
from .records import from_payload, valid_payload, valid_within

log = logging.getLogger("remem.store.threads")

_KIND = "note"  # the kind threads hold (threads.THREAD_KIND)
MAX_MOVED = 64  # stored notes said after a new one that may move down to make room for it
FIRST_WINDOW = CONTEXT_TURNS + CONTEXT_AFTER  # a thread's first notes that a note said before them is placed from
Entry = Union[MemoryRecord, int]  # a stored note, or the index of one of the call's items


@dataclass
class Insertion:
    """What placing a call's notes among the stored notes of one thread decided for the stored ones: those moved
    down (their new position) and those around a new note (their new links and recall context)."""

    moved: list[tuple[MemoryRecord, int]] = field(default_factory=list)
    relinked: list[tuple[MemoryRecord, list[str], list[str], str]] = field(default_factory=list)


def later_notes(engine: Any, scope: Scope, name: str, at: dt.datetime | None, seen: Sequence[MemoryRecord],
                complete: bool) -> bool:
    """Whether the new note goes between stored notes of thread ``name``: at least one is dated after ``at``,
    and at most :data:`MAX_MOVED` (none when ``seen``, the notes a lookup read, holds all there are and none of
    them is; else asked of the store). A note said before more of them goes after the last, as before
    insertion existed: moving a long thread down for each note of a history back-filled newest first would cost
    a write per note of the thread for every note added (quadratic in time and, in the embedded store, on
    disk: 1,000 messages back-filled one by one wrote 500 MB)."""
    if at is None:
        return False  # an undated note of a named thread goes after its last
    if complete and not any(r.occurred_at is not None and r.occurred_at > at for r in seen):
        return False  # none said after it: it goes at the end
    try:  # how many (a lookup reads a few of a long thread): asked of the store
        flt = engine.filter(scope, kind=_KIND, where={"thread": name, "occurred_at": {"$gt": at}, **own_records(scope)})
        found = [f for f in engine.backend.newest(flt, MAX_MOVED + 1) if from_payload(f.id, f.payload).scope == scope]
        return 0 < len(found) <= MAX_MOVED
    except (RememError, ValueError, OverflowError) as exc:  # a failed lookup places the note after the last
        log.debug("later notes lookup failed: %s", exc)
        return False


def _stored(engine: Any, scope: Scope, name: str) -> list[MemoryRecord]:
    """Every stored note of the thread (this scope's own), in the order said."""
    flt = engine.filter(scope, kind=_KIND, where={"thread": name, **own_records(scope)})
    now = time.time()
    recs = (from_payload(f.id, f.payload) for f in engine.scan(flt) if valid_payload(f.payload, now))  # not superseded
    return sorted((r for r in recs if r.scope == scope and r.metadata.get("thread") == name and message_id(r)),
                  key=said_order)


def _whole(pos: Any) -> bool:
    return isinstance(pos, int) and not isinstance(pos, bool)


def said_first(engine: Any, scope: Scope, name: str, at: dt.datetime) -> list[MemoryRecord] | None:
    """The notes of thread ``name`` that come first, in the order said, when a note dated ``at`` is said before
    every dated one of them: all it needs to go first, below their positions, with nothing moved and the thread
    not read (a history back-filled newest first, page after page). They are the notes up to the highest
    position of its :data:`FIRST_WINDOW` first said (undated ones and ones placed out of date order included,
    so no position is taken twice and the links are its real neighbours). None when a current note of the
    thread is dated no later than ``at``, too many come first, or a lookup fails: the note is then placed from
    the whole thread, as any other."""
    own = {"thread": name, **own_records(scope)}
    now = time.time()

    def notes(where: Mapping[str, Any], limit: int, order: str = "earliest") -> list[MemoryRecord]:
        flt = valid_within(engine.filter(scope, kind=_KIND, where={**own, **where}), now)
        found = engine.backend.earliest(flt, limit) if order == "earliest" else engine.backend.scroll(flt, limit)[0]
        return [r for r in (from_payload(f.id, f.payload) for f in found) if r.scope == scope and message_id(r)]

    try:
        if notes({"occurred_at": {"$lte": at}}, 1):
            return None
        dated = sorted(notes({}, 4 * FIRST_WINDOW), key=said_order)[:FIRST_WINDOW]
        top = max((p for r in dated if _whole(p := r.metadata.get("position"))), default=None)
        if top is None:
            return None
        asked = 8 * FIRST_WINDOW
        first = notes({"position": {"$lte": top}}, asked + 1, order="any")
    except Exception as exc:  # noqa: BLE001 - a lookup never fails the write (a server collection
        # made before dates were indexed cannot order by them)
        log.debug("first notes lookup failed: %s", exc)
        return None
    return sorted(first, key=said_order) if 0 < len(first) <= asked else None


def said_next(engine: Any, scope: Scope, last_at: dt.datetime,
              gap: dt.timedelta) -> tuple[str, list[MemoryRecord]] | None:
    """The stored thread that a thread a call started goes first in: the thread of the note said next, within
    ``gap`` after ``last_at`` (its last note), when every note of it is said after (:func:`said_first`). A
    history paged newest first, with no thread name, is then one conversation, not a thread per page."""
    try:
        flt = engine.filter(scope, kind=_KIND, where={"occurred_at": {"$gt": last_at, "$lte": last_at + gap},
                                                      **own_records(scope)})
        found = [r for r in (from_payload(f.id, f.payload) for f in engine.backend.earliest(flt, 8))
                 if r.scope == scope and isinstance(r.metadata.get("thread"), str) and message_id(r)]
    except Exception as exc:  # noqa: BLE001 - a lookup never fails the write (a server collection
        # made before dates were indexed cannot order by them)
        log.debug("next note lookup failed: %s", exc)
        return None
    if not found:
        return None
    name = str(found[0].metadata["thread"])
    first = said_first(engine, scope, name, last_at)
    return None if first is None else (name, first)


def arrange(engine: Any, scope: Scope, name: str, new: Sequence[tuple[int, dt.datetime | None]],
            items: Sequence[MutableMapping[str, Any]], said: Mapping[int, str],
            first: Sequence[MemoryRecord] | None = None) -> Insertion:
    """Place the call's notes ``new`` ((item index, date), in date order; each item's metadata has its thread
    and message id) among the stored notes of thread ``name`` (only ``first``, its first notes, when all of
    the call's go before them: :func:`said_first`): each item's position, links and context are set in
    ``items``; what the stored notes need is returned (:func:`make_room`, :func:`relink`). Notes that would
    move more than :data:`MAX_MOVED` stored ones go after the last instead."""
    stored = list(first) if first is not None else _stored(engine, scope, name)
    seq = _in_order(stored, new, at_end=False)
    out = _positions(seq, items)
    if len(out.moved) > MAX_MOVED:
        seq = _in_order(stored, new, at_end=True)
        out = _positions(seq, items)
    _link(seq, items, said, out)
    return out


def _in_order(stored: Sequence[MemoryRecord], new: Sequence[tuple[int, dt.datetime | None]],
              at_end: bool) -> list[Entry]:
    """The thread's entries in the order said: each new note after the last entry dated no later than it
    (undated ones keep their places; ``at_end``: after the last stored note, in the call's order, but for the
    notes said before all of them, which go first and move nothing)."""
    seq: list[Entry] = list(stored)
    when = dict(new)
    first = min((r.occurred_at for r in stored if r.occurred_at is not None), default=None)

    def date(e: Entry) -> dt.datetime | None:
        return e.occurred_at if isinstance(e, MemoryRecord) else when[e]

    for i, at in new:
        k = len(seq)
        if at is not None and (not at_end or first is None or at < first):
            k = next((j + 1 for j in range(len(seq) - 1, -1, -1) if (d := date(seq[j])) is not None and d <= at), 0)
        seq.insert(k, i)
    return seq


def _positions(seq: Sequence[Entry], items: Sequence[MutableMapping[str, Any]]) -> Insertion:
    """Set each new note's position; the stored notes that must move down to make room are returned. Notes said
    before every stored one take the positions below the first (none moves)."""
    out = Insertion()
    lead = next((k for k, e in enumerate(seq) if isinstance(e, MemoryRecord)), len(seq))
    have = seq[lead].metadata.get("position") if 0 < lead < len(seq) else None
    pos = have - lead - 1 if _whole(have) else -1
    first = next(k for k, e in enumerate(seq) if not isinstance(e, MemoryRecord))
    for k, e in enumerate(seq):
        if not isinstance(e, MemoryRecord):
            pos += 1
            items[e]["metadata"]["position"] = pos
            continue
        have = e.metadata.get("position")
        if k < first or (_whole(have) and have > pos):
            pos = max(pos, have) if _whole(have) else pos
        else:
            pos += 1
            out.moved.append((e, pos))
    return out


def _link(seq: Sequence[Entry], items: Sequence[MutableMapping[str, Any]], said: Mapping[int, str],
          out: Insertion) -> None:
    """Links and recall context of the new notes (in ``items``) and of the stored notes next to one (in
    ``out.relinked``): the two entries said before each and the two after."""
    mids = [str(message_id(e)) if isinstance(e, MemoryRecord) else str(items[e]["metadata"]["message_id"])
            for e in seq]
    texts = [e.text if isinstance(e, MemoryRecord) else said.get(e, "") for e in seq]
    placed = {k for k, e in enumerate(seq) if not isinstance(e, MemoryRecord)}
    for k, e in enumerate(seq):
        before = list(range(max(0, k - CONTEXT_TURNS), k))
        after = list(range(k + 1, min(len(seq), k + 1 + CONTEXT_AFTER)))
        if isinstance(e, MemoryRecord) and not placed & {*before, *after}:
            continue  # no new note next to it: it stays as it is
        follows, followed_by = [mids[j] for j in before], [mids[j] for j in after]
        context = " ".join(c for c in (clipped(texts[j], CONTEXT_TURN_TOKENS) for j in (*before, *after)) if c)
        if isinstance(e, MemoryRecord):
            out.relinked.append((e, follows, followed_by, context))
            continue
        meta = items[e]["metadata"]
        meta.update(_links(follows, followed_by))
        if context:
            items[e]["context"] = context


def _links(follows: list[str], followed_by: list[str]) -> dict[str, list[str]]:
    """The link metadata of a note: the messages said before and after it, each key only when there are some."""
    return {key: ids for key, ids in zip(LINK_KEYS, (follows, followed_by)) if ids}


def make_room(engine: Any, insertions: Sequence[Insertion]) -> None:
    """Move the stored notes said after the new ones down (before those are stored). Raises on a failed write:
    a new note stored at a position still taken would read in the wrong place."""
    for ins in insertions:
        for rec, pos in reversed(ins.moved):
            engine.backend.set_payload([rec.id], {"meta": {**rec.metadata, "position": pos}})


def relink(engine: Any, insertions: Sequence[Insertion]) -> None:
    """Give the stored notes around the new ones their links and recall context (after those are stored): one
    write of each record's payload and BM25 vector, nothing embedded again. A failure is logged, never raised
    (the new notes are stored already); the note keeps its old links and the words they name, so a forget
    still reaches them."""
    for ins in insertions:
        for seen, follows, followed_by, context in ins.relinked:
            try:
                with one_write(engine):
                    rec = engine.get(seen.id, scope=seen.scope)  # as stored now (a new note may have merged into it)
                    meta = {k: v for k, v in rec.metadata.items() if k not in LINK_KEYS}
                    meta.update(_links(follows, followed_by))
                    _rewrite(engine, rec, context, meta)
            except NotFoundError:
                continue  # forgotten meanwhile: nothing of it to rewrite
            except Exception as exc:  # noqa: BLE001 - the new notes are stored: a backend's own error is logged too
                log.warning("could not relink note %s around a note said before it: %s", seen.id, exc)


def _rewrite(engine: Any, rec: MemoryRecord, context: str, meta: Mapping[str, Any]) -> None:
    """``rec`` with a new context and metadata (redacted and checked; its BM25 vector re-indexed, its dense
    vector, the text's alone, kept; a pending one stays pending for ``reembed``), in one write of the whole
    point: links and indexed words never disagree, so a forget that follows the links reaches every word."""
    new = replace(rec, context=engine.check.context(context or None), metadata=engine.check.metadata(meta),
                  updated_at=utcnow())
    dense = engine.backend.dense_vectors([rec.id]).get(rec.id) if rec.embedded and engine.dense else None
    engine.backend.upsert([engine.point(replace(new, embedded=dense is not None or not engine.dense), dense)])


def _unembedded(plan: Any) -> Any:
    """Run an ``update`` plan without embedding: called under the write lock, which no embedding may hold (a
    stored note whose vector is pending, its embedding failed, stays pending for ``reembed``)."""
    try:
        step = next(plan)
        while True:
            step = plan.send([None] * len(step.records))
    except StopIteration as done:
        return done.value


def extend_stored(engine: Any, placement: Any) -> None:
    """Give the stored notes a call continued what was said after them (context and ``followed_by``; ``placement``: a
    :class:`~remem.core.store.threads.Placement`), through
    ``update`` (validated and redacted like any context; BM25 re-indexed, nothing embedded again). A failure is
    logged, never raised: the new notes are stored already. Called under the write lock, with :func:`place`."""
    for seen, nexts in placement.after_stored.values():
        if not nexts:
            continue
        try:
            with one_write(engine):  # read and write as one: a neighbour forgotten meanwhile stays forgotten
                rec = engine.get(seen.id, scope=seen.scope)
                have = links(rec, "followed_by")
                nexts = [(t, m) for t, m in nexts if m not in have][:max(0, CONTEXT_AFTER - len(have))]
                if not nexts:
                    continue  # another call completed it meanwhile
                context = " ".join([*([rec.context] if rec.context else []),
                                    *(clipped(t, CONTEXT_TURN_TOKENS) for t, _ in nexts)])
                _unembedded(type(engine).update.plan(engine, rec.id, scope=rec.scope, context=context,
                                                     metadata={"followed_by": [*have, *(m for _, m in nexts)]}))
        except (RememError, ValueError) as exc:
            log.debug("could not add what followed note %s: %s", seen.id, exc)


__all__ = ["Insertion", "arrange", "extend_stored", "later_notes", "make_room", "relink", "said_first", "said_next"]
