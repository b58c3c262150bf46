"""Where relations meet the store: recorded as memories are written (keyless patterns, or claims an LLM
distiller hands over), closed when the memory saying them is superseded, emptied of forgotten memories,
compacted, closed. Nothing here may fail the write, the forget or the search it rides on."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ...types import MemoryRecord, Scope
from .. import hooks, names
from ..extract import KINDS, Mention, extract
from ..store import open_backend, rewrite_shard
from ..types import RelationClaim
from .patterns import SLOT, claims as find_claims, might_relate, normalise_predicate
from .records import INDEXED, RELATION_DIR, RelationIndex, _ts

if TYPE_CHECKING:
    from ...store.engine import Engine

log = logging.getLogger("remem.entities")
_OPENING = threading.Lock()
MAX_CLAIMS = 32  # handed over at once for one memory (an LLM's list is cut there)


def index(engine: "Engine", *, create: bool = True) -> RelationIndex | None:
    """The store's relation index, opened on first use; ``create=False``: None while the store has none (a
    read does not make the shard)."""
    shared = engine._shared
    got = getattr(shared, "relation_index", None)
    if got is not None or shared.closed:
        return got
    if not create and getattr(engine.backend, "kind", None) == "edge" \
            and not (Path(getattr(engine.backend, "folder", "")) / RELATION_DIR).exists():
        return None
    with _OPENING:
        got = getattr(shared, "relation_index", None)
        if got is None:
            try:
                backend = open_backend(engine.backend, RELATION_DIR, INDEXED)
            except Exception as exc:  # noqa: BLE001 - relations are an addition: the store works without them
                log.warning("relation index unavailable: %s: %s", type(exc).__name__, exc)
                return None
            if backend is None:
                return None
            got = RelationIndex(backend)
            shared.relation_index = got  # type: ignore[attr-defined]
    return got


def record_claims(engine: "Engine", scope: Any, claims: Iterable[RelationClaim], source_id: str | None,
                  when: Any = None, *, until: Any = None) -> list[str]:
    """Store ``claims`` (from the keyless patterns or an LLM distiller) as relations of ``scope``, said by the
    memory ``source_id``, true from each claim's ``since`` (else ``when``: a datetime or epoch seconds, else
    now). Names are resolved to the scope's entities as mentions are (a name not known yet becomes an entity);
    a claim whose names or predicate are empty is skipped. ``until``: the memory stopped being true then (its
    relations are recorded closed). Returns the ids of the relations written or confirmed. Takes the store's
    write lock; a failure is logged and returns what was stored, never raises into the write."""
    if not hooks.enabled(engine):
        return []
    import time

    from ...scope import coerce_scope

    try:
        sc = coerce_scope(scope)
        if not isinstance(sc, Scope):
            return []
        eidx = hooks.index(engine)
        ridx = index(engine)
        if eidx is None or ridx is None:
            return []
        base = _ts(when) or time.time()
        end = _ts(until)
        out: list[str] = []
        with engine.write_lock:
            for c in list(claims)[:MAX_CLAIMS]:
                if not isinstance(c, RelationClaim) or not str(c.subject).strip() or not str(c.object).strip():
                    continue
                predicate, flipped = normalise_predicate(c.predicate)
                since = _ts(c.since) or base
                subj = _entity(eidx, sc, c.subject, c.subject_kind, since)
                obj = _entity(eidx, sc, c.object, c.object_kind, since)
                if flipped:
                    subj, obj = obj, subj
                if subj is None or obj is None or subj == obj:
                    continue
                out.append(ridx.record(sc, subj, predicate, obj, since, source_id,
                                       until=end if end is not None and end > since else None))
        return list(dict.fromkeys(out))
    except Exception as exc:  # noqa: BLE001 - the memory is stored; its relations come back with link_entities
        log.warning("could not record relations of memory %s: %s: %s", source_id, type(exc).__name__, exc)
        return []


def _entity(eidx: Any, scope: Scope, name: str, kind: str | None, when: float) -> str | None:
    """The id of the entity ``name`` names in ``scope`` (linked as a mention is: created when new)."""
    name = str(name).strip()
    k = names.key(name)
    if not k:
        return None
    typed = [m for m in extract(name) if m.key == k and not m.tentative]
    if typed and (kind is None or typed[0].kind == kind):
        m = typed[0]
    else:
        m = Mention(name=name, kind=kind if kind in KINDS else "person", key=k, guessed=kind not in KINDS)
    ids = eidx.link(scope, [m], when)
    return ids[0] if ids else None


def on_write(engine: "Engine", rec: MemoryRecord) -> None:
    """A memory being written: the relations its text states recorded (it is their source); if it supersedes
    another, the relations only that one said are closed when this one starts."""
    edited = rec.updated_at > rec.created_at  # update(): what its old text said may not be said any more
    if not hooks.enabled(engine) or (not rec.supersedes and not edited and not might_relate(rec.text)):
        return
    try:
        when = rec.event_time.timestamp()  # when it was said or happened (as about() dates its line)
        found = find_claims(rec.text, extract(rec.text)) if might_relate(rec.text) else []
        new = record_claims(engine, rec.scope, found, rec.id, when, until=rec.valid_until) if found else []
        if rec.supersedes:
            _supersede(engine, rec.supersedes, when, new)
        if edited:
            _unsay(engine, rec.id, new)
    except Exception as exc:  # noqa: BLE001 - the memory is stored without its relations, never refused for them
        log.warning("could not record the relations of memory %s: %s: %s", rec.id, type(exc).__name__, exc)


def _supersede(engine: "Engine", old_id: str, when: float, new: Sequence[str]) -> None:
    """The open relations only memory ``old_id`` said end at ``when``; each names as its successor the new
    memory's relation of the same subject and predicate (or slot), when there is one."""
    ridx = index(engine, create=False)
    if ridx is None:
        return
    fresh = ridx.backend.retrieve(list(new)) if new else []
    with engine.write_lock:
        for f in ridx.with_sources([old_id]):
            p = f.payload
            if p.get("until_ts") is not None or list(p.get("sources") or ()) != [old_id] or f.id in new:
                continue
            slot = SLOT.get(p.get("predicate", ""), p.get("predicate"))
            succ = next((g.id for g in fresh if g.payload.get("subject_id") == p.get("subject_id")
                         and SLOT.get(g.payload.get("predicate", ""), g.payload.get("predicate")) == slot), None) \
                or next((g.id for g in fresh if g.payload.get("subject_id") == p.get("subject_id")), None)
            ridx.close(f.id, max(when, float(p.get("since_ts") or when)), succ)


def _unsay(engine: "Engine", memory_id: str, kept: Sequence[str]) -> None:
    """Memory ``memory_id`` no longer says the relations it said but ``kept``: it leaves their sources."""
    ridx = index(engine, create=False)
    if ridx is None:
        return
    with engine.write_lock:
        stale = [f.id for f in ridx.with_sources([memory_id]) if f.id not in kept]
        if stale:
            ridx.drop_sources([memory_id], only=stale)


def after_forget(engine: "Engine", gone: Sequence[MemoryRecord]) -> None:
    """Forgotten memories leave every relation's sources; a relation no memory says any more is deleted."""
    ridx = index(engine, create=False)
    if ridx is None or not gone:
        return
    try:
        with engine.write_lock:
            ridx.drop_sources([r.id for r in gone])
    except Exception as exc:  # noqa: BLE001 - the forget happened; compact() collects what is left
        log.warning("could not take forgotten memories out of relations: %s: %s", type(exc).__name__, exc)


def compact(engine: "Engine") -> None:
    """Relations whose memories are all gone deleted (a forget that failed half way), then the relation
    shard's files rewritten without the deleted ones (Edge only)."""
    ridx = index(engine, create=False)
    if ridx is None:
        return
    from ...store.backends.base import FilterSpec

    with engine.write_lock:
        sources = {s for f in ridx.scan(FilterSpec()) for s in f.payload.get("sources") or ()}
        alive: set[str] = set()
        ids = sorted(sources)
        for i in range(0, len(ids), 256):
            alive |= {f.id for f in engine.backend.retrieve(ids[i:i + 256])}
        dead = sources - alive
        if dead:
            ridx.drop_sources(sorted(dead))
        orphans = [f.id for f in ridx.scan(FilterSpec()) if not f.payload.get("sources")]
        if orphans:
            ridx.backend.delete(orphans)
    rewrite_shard(engine, ridx.backend)


def close(engine: "Engine") -> None:
    with _OPENING:
        ridx = getattr(engine._shared, "relation_index", None)
        if ridx is not None:
            try:
                ridx.backend.close()
            except Exception:  # noqa: BLE001 - closing: what cannot be closed is repaired at the next open
                pass
            engine._shared.relation_index = None  # type: ignore[attr-defined]


__all__ = ["after_forget", "close", "compact", "index", "on_write", "record_claims"]
