"""Relation records in Qdrant: one more Edge shard beside the entities' (``relations/``), or one more
collection (``<collection>_relations``) on a Qdrant server; the same scope rule as entity records (tenant, user,
agent; never across tenants).

A record: ``subject_id`` ``predicate`` ``object_id`` (entity ids, keyword-indexed), ``since_ts``, ``until_ts``
(absent: true now), ``superseded_by`` (the relation that replaced it), ``sources`` (the ids of the memories that
say it, keyword-indexed). Names are not copied here: they are read from the entity records, so erasing an
entity's name erases it everywhere. A relation that changes is closed (``until_ts``), never deleted; a relation
is deleted only when no memory says it any more (forget), and its bytes leave the disk at ``compact()``.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from typing import Any, Iterable, Iterator, Sequence

from ...store.backends.base import Cond, FilterSpec, Found, PointData
from ...types import Scope
from ..store import PAGE, entity_scope, scope_filter
from ..types import Relation
from .patterns import SLOT

NAMESPACE = uuid.UUID("2b0f6a4e-51c9-4d7e-8f3a-6c1d9e2a7b40")
RELATION_DIR = "relations"
INDEXED = ("tenant", "user", "agent", "subject_id", "object_id", "predicate", "sources")
MAX_SOURCES = 1000  # memory ids kept on one relation (a fact said a thousand times needs no more proof)


def _ts(when: Any) -> float | None:
    """Epoch seconds of a datetime, an ISO string or a number (None stays None)."""
    from ...types import to_ts

    return None if when is None else to_ts(when)


def _dt_of(ts: Any) -> _dt.datetime | None:
    return None if ts is None else _dt.datetime.fromtimestamp(float(ts), tz=_dt.timezone.utc)


def holds_at(payload: dict[str, Any], ts: float) -> bool:
    """Whether a relation was true at ``ts`` (started by then, not closed by then)."""
    since, until = payload.get("since_ts"), payload.get("until_ts")
    return (since is None or float(since) <= ts) and (until is None or float(until) > ts)


class RelationIndex:
    """The relation records of one store. Writes happen under the store's write lock (the caller's)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    # ------------------------------------------------------------------ reading
    def scan(self, flt: FilterSpec) -> Iterator[Found]:
        from ...store.engine import Engine

        yield from Engine.scan(self, flt, PAGE)  # type: ignore[arg-type]  # the engine's paging reads .backend only

    def touching(self, scope: Scope | None, entity_ids: Iterable[str], *, own: bool = False) -> list[Found]:
        """The relations whose subject or object is one of ``entity_ids``, visible from ``scope``."""
        ids = tuple(dict.fromkeys(entity_ids))
        if not ids:
            return []
        out: dict[str, Found] = {}
        for end in ("subject_id", "object_id"):
            flt = scope_filter(scope, own=own)
            flt.must.append(Cond(end, any_of=ids))
            out.update((f.id, f) for f in self.scan(flt))
        return list(out.values())

    def with_sources(self, memory_ids: Sequence[str]) -> list[Found]:
        if not memory_ids:
            return []
        return list(self.scan(FilterSpec(must=[Cond("sources", any_of=tuple(memory_ids))])))

    # ------------------------------------------------------------------ writing
    @staticmethod
    def _of_subject(scope: Scope, subject_id: str, predicates: Sequence[str], *more: Cond) -> FilterSpec:
        """The subject's relations with one of ``predicates`` that meet ``more``: what a write reads, by filter, so
        it costs the same however long an entity's history is (reading all of it slowed writes as a store grew)."""
        flt = scope_filter(scope, own=True)
        flt.must += [Cond("subject_id", eq=subject_id), Cond("predicate", any_of=tuple(predicates)), *more]
        return flt

    def _mine(self, scope: Scope, subject_id: str, predicates: Sequence[str], *more: Cond) -> list[Found]:
        return list(self.scan(self._of_subject(scope, subject_id, predicates, *more)))

    def _next(self, scope: Scope, subject_id: str, predicates: Sequence[str], object_id: str,
              since: float) -> list[Found]:
        """The first relation of the subject's slot, with another object, that started after ``since`` (one read,
        ordered by Qdrant on the ``since_ts`` index)."""
        flt = self._of_subject(scope, subject_id, predicates, Cond("since_ts", gt=since))
        flt.must_not.append(Cond("object_id", eq=object_id))
        return self.backend.earliest(flt, 1, by="since_ts")

    def record(self, scope: Scope, subject_id: str, predicate: str, object_id: str, since: float,
               source: str | None, until: float | None = None) -> str:
        """Store that ``subject_id`` ``predicate`` ``object_id`` from ``since`` (said by memory ``source``):
        the same relation already open gets the source added; a single-valued predicate (:data:`SLOT`) closes
        the subject's other open relation of its slot that started before it, or is itself closed by one that
        started after it (a memory written out of order, an import). ``until``: the memory saying it stopped
        being true then (superseded or expired). Returns the relation's id."""
        scope = entity_scope(scope)
        same = self._mine(scope, subject_id, [predicate], Cond("object_id", eq=object_id), Cond("until_ts", empty=True))
        if same and until is None:
            f = same[0]
            change: dict[str, Any] = {}
            if source and source not in (f.payload.get("sources") or ()):
                change["sources"] = (list(f.payload.get("sources") or ()) + [source])[-MAX_SOURCES:]
            if since < float(f.payload.get("since_ts", since)):
                change["since_ts"] = since
            if change:
                self.backend.set_payload([f.id], change)
            return f.id
        rid = self._id(scope, subject_id, predicate, object_id, since)
        got = self.backend.retrieve([rid])
        if got:  # said again (the same memory linked again, an import): one record, one more source
            srcs = list(got[0].payload.get("sources") or ())
            if source and source not in srcs:
                self.backend.set_payload([rid], {"sources": (srcs + [source])[-MAX_SOURCES:]})
            return rid
        payload: dict[str, Any] = {"tenant": scope.stored_tenant, "subject_id": subject_id, "predicate": predicate,
                                   "object_id": object_id, "since_ts": since, "sources": [source] if source else [],
                                   "relation": True}
        for key in ("user", "agent"):
            if getattr(scope, key) is not None:
                payload[key] = getattr(scope, key)
        if until is not None:
            payload["until_ts"] = until
        slot = SLOT.get(predicate)
        if slot is not None:  # the slot's open relations, and those that started after this one
            preds = [p for p, s in SLOT.items() if s == slot]
            rivals = [f for f in self._mine(scope, subject_id, preds, Cond("until_ts", empty=True))
                      if f.payload.get("object_id") != object_id and f.id != rid]
            later = [f for f in rivals + self._next(scope, subject_id, preds, object_id, since)
                     if f.id != rid and float(f.payload.get("since_ts") or 0) > since]
            if later and until is None:  # a newer claim already holds the slot: this one ended when it began
                first = min(later, key=lambda f: float(f.payload.get("since_ts") or 0))
                payload["until_ts"], payload["superseded_by"] = float(first.payload["since_ts"]), first.id
            for f in rivals:
                if f.payload.get("until_ts") is None and float(f.payload.get("since_ts") or 0) < since:
                    self.backend.set_payload([f.id], {"until_ts": since, "superseded_by": rid})
        self.backend.upsert([PointData(id=rid, payload=payload)])
        return rid

    def close(self, rid: str, until: float, superseded_by: str | None) -> None:
        change: dict[str, Any] = {"until_ts": until}
        if superseded_by:
            change["superseded_by"] = superseded_by
        self.backend.set_payload([rid], change)

    def drop_sources(self, memory_ids: Sequence[str], only: Sequence[str] | None = None) -> list[str]:
        """Take ``memory_ids`` out of every relation's sources (of the relations ``only``, when given); delete
        the relations left with none. Returns the ids deleted."""
        gone = set(memory_ids)
        dead: list[str] = []
        for f in self.with_sources(list(gone)):
            if only is not None and f.id not in only:
                continue
            left = [s for s in f.payload.get("sources") or () if s not in gone]
            if left:
                self.backend.set_payload([f.id], {"sources": left})
            else:
                dead.append(f.id)
        if dead:
            self.backend.delete(dead)
        return dead

    def _id(self, scope: Scope, subject_id: str, predicate: str, object_id: str, since: float) -> str:
        raw = "\x1f".join([scope.stored_tenant, scope.user or "", scope.agent or "", subject_id, predicate,
                           object_id, f"{since:.3f}"])
        return str(uuid.uuid5(NAMESPACE, raw))


def to_relation(f: Found, names: dict[str, str]) -> Relation:
    """A stored record as a :class:`Relation`, its ends named by ``names`` (entity id -> shown name)."""
    p = f.payload
    return Relation(id=f.id, subject=names.get(p.get("subject_id", ""), ""), predicate=p.get("predicate", ""),
                    object=names.get(p.get("object_id", ""), ""), subject_id=p.get("subject_id", ""),
                    object_id=p.get("object_id", ""), since=_dt_of(p.get("since_ts")), until=_dt_of(p.get("until_ts")),
                    superseded_by=p.get("superseded_by"), sources=tuple(p.get("sources") or ()))



def for_profile(ridx: RelationIndex, eidx: Any, scope: Scope | None, group: Sequence[str], ts: float,
                limit: int = 40) -> tuple[list[Relation], list[Relation]]:
    """The relations of the entity ``group`` (an entity and those merged into it) true at ``ts``, and those that
    ended by then (newest first), their ends named; relations to entities since erased are left out."""
    from ..store import shown

    found = [f for f in ridx.touching(scope, group) if float(f.payload.get("since_ts") or 0) <= ts]
    ends = {f.payload.get(k) for f in found for k in ("subject_id", "object_id")}
    names = {e.id: shown(e.payload.get("name", "")) for e in eidx.get(sorted(i for i in ends if i))}
    merged_into = {e.id: e.payload.get("merged_into") for e in eidx.get(sorted(i for i in ends if i))}
    for i, target in merged_into.items():  # a merged entity is shown under the name it was merged into
        if target:
            got = eidx.get([target])
            if got:
                names[i] = shown(got[0].payload.get("name", ""))
    found = [f for f in found if f.payload.get("subject_id") in names and f.payload.get("object_id") in names]
    found.sort(key=lambda f: -float(f.payload.get("since_ts") or 0))
    now = [to_relation(f, names) for f in found if holds_at(f.payload, ts)][:limit]
    ended = [to_relation(f, names) for f in found if not holds_at(f.payload, ts)][:limit]
    return now, ended


__all__ = ["INDEXED", "RELATION_DIR", "RelationIndex", "for_profile", "holds_at", "to_relation"]
