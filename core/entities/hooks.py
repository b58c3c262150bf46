"""Where entities meet the store: linking a memory as it is written, forgetting, compacting, closing.

Everything here is called by :class:`~remem.core.local.LocalMemory` and never lets an entity failure fail the
write, the forget or the search it rides on: the memory is stored (unlinked, logged) and recall goes on without
entities.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..recall import lexical
from ..store.backends.base import Cond, FilterSpec, PointData
from ..store.records import from_payload
from ..types import MemoryRecord, SparseVec
from . import given, linking, names
from .extract import extract
from .resolve import lookup_keys, resolve
from .store import LINK_FIELD, EntityIndex, entity_scope, open_backend, rewrite_shard

if TYPE_CHECKING:
    from ..store.engine import Engine

log = logging.getLogger("remem.entities")
_OPENING = threading.Lock()


def enabled(engine: "Engine") -> bool:
    return bool(getattr(engine.settings, "entities", True))


def index(engine: "Engine") -> EntityIndex | None:
    """The store's entity index, opened on first use (None where the backend has none)."""
    shared = engine._shared
    got = getattr(shared, "entity_index", False)
    if got is not False:
        return got
    recover = False
    with _OPENING:
        got = getattr(shared, "entity_index", False)
        if got is False and shared.closed:
            return None
        if got is False:
            try:
                backend = open_backend(engine.backend)
                got = EntityIndex(backend) if backend is not None else None
            except Exception as exc:  # noqa: BLE001 - entities are an addition: the store works without them
                log.warning("entity index unavailable: %s: %s", type(exc).__name__, exc)
                got = None
            shared.entity_index = got  # type: ignore[attr-defined]
            recover = got is not None and got._cached and linking.BACKGROUND
    if recover:  # not under _OPENING: the linker takes the store's lock, which a writer opening the index holds
        _recover(engine)
    return got


def _recover(engine: "Engine") -> None:
    """Queue the memories a process that died before linking them left pending (they are linked in the
    background, or by the first read of entities)."""
    try:
        got = linking.linker(engine, link_pending)
        if got is not None:
            got.recover()
    except Exception as exc:  # noqa: BLE001 - they stay marked: the next open tries again
        log.warning("could not look for memories left unlinked: %s: %s", type(exc).__name__, exc)


def entity_token(entity_id: str) -> int:
    """The ``ident`` sparse index a memory linked to ``entity_id`` carries (recall finds it by that)."""
    return lexical.entity_token(entity_id)


def with_tokens(vec: SparseVec, tokens: Iterable[int], weight: float = 1.0) -> SparseVec:
    acc = dict(zip(vec[0], vec[1]))
    for t in tokens:
        acc[t] = max(acc.get(t, 0.0), weight)
    idx = sorted(acc)
    return idx, [acc[i] for i in idx]


def linked(engine: "Engine", point: PointData, rec: MemoryRecord) -> PointData:
    """``point`` with the entities ``rec`` names: their ids in its payload, their tokens in its ``ident``."""
    if not enabled(engine):
        return point
    idx = index(engine)
    if idx is None:
        return point
    ids = entity_ids(idx, rec)
    if not ids:
        return point
    sparse = dict(point.sparse)
    sparse["ident"] = with_tokens(sparse.get("ident", ([], [])), (entity_token(i) for i in ids))
    return replace(point, payload={**point.payload, LINK_FIELD: ids}, sparse=sparse)


def entity_ids(idx: EntityIndex, rec: MemoryRecord) -> list[str]:
    """The ids of the entities ``rec`` names, created or updated in ``idx`` (none when that fails: the memory is
    stored without its links, never refused for them)."""
    try:
        mentions = given.merged(extract(rec.text), rec)  # with those an LLM distiller named (given.py)
        if not mentions:
            return []
        when = (rec.occurred_at or rec.valid_from or rec.created_at).timestamp()
        return idx.link(rec.scope, mentions, when)
    except Exception as exc:  # noqa: BLE001 - the memory is stored without its links, never refused for them
        log.warning("could not link the entities of memory %s: %s: %s", rec.id, type(exc).__name__, exc)
        return []


def write_new(engine: "Engine", point: PointData, rec: MemoryRecord) -> None:
    """Store a new memory's ``point`` (under the write lock). Where this process is the store's one writer, its
    entities are linked after the write returns (:mod:`.linking`): the point carries the pending marker until
    then. Elsewhere (a Qdrant server) they are linked now, in the same write."""
    idx = index(engine) if enabled(engine) else None
    if idx is None or not idx._cached or not linking.BACKGROUND:
        engine.backend.upsert([linked(engine, point, rec)])
        return
    engine.backend.upsert([replace(point, payload={**point.payload, LINK_FIELD: [linking.PENDING]})])
    got = linking.linker(engine, link_pending)
    assert got is not None
    got.add(rec.id, rec.scope.stored_tenant, point.sparse.get("ident"))


def link_pending(engine: "Engine", batch: dict[str, tuple[str, SparseVec | None]]) -> None:
    """Link the memories of ``batch`` that are still stored and still pending (under the write lock). The
    entity records are flushed first, then the ``ident`` tokens, then the links, which replace the marker: a
    crash part way leaves the marker, and linking again is idempotent (an entity's id is derived from its name)."""
    idx = index(engine)
    field = LINK_FIELD
    found = [f for f in engine.backend.retrieve(list(batch)) if linking.PENDING in (f.payload.get(field) or ())]
    if not found:
        return
    links: dict[str, list[str]] = {}
    vectors: list[PointData] = []
    for f in found:
        rec = from_payload(f.id, f.payload)
        ids = entity_ids(idx, rec) if idx is not None else []
        links[f.id] = ids
        if ids:
            ident = batch[f.id][1] or lexical.ident_vector(rec.text)
            vectors.append(PointData(id=f.id, payload={},
                                     sparse={"ident": with_tokens(ident, map(entity_token, ids))}))
    if idx is not None:
        idx.flush()
    engine.backend.set_vectors(vectors)
    same: dict[tuple[str, ...], list[str]] = {}  # one write for the memories naming the same entities (or none)
    for i, ids in links.items():
        same.setdefault(tuple(ids), []).append(i)
    for ids, members in same.items():
        engine.backend.set_payload(members, {field: list(ids)})


def settle(engine: "Engine", scope: Any = None) -> None:
    """Link what is pending for ``scope`` before entities are read there (read-your-writes; opening the index
    first queues what a process that died left pending)."""
    if enabled(engine) and index(engine) is not None:
        linking.settle(engine, scope)


def links(engine: "Engine", entity_ids: Sequence[str]) -> int:
    """How many memories link to any of ``entity_ids``."""
    return engine.backend.count(FilterSpec(must=[Cond(LINK_FIELD, any_of=tuple(entity_ids))])) if entity_ids else 0


def collect_unlinked(engine: "Engine", candidates: Iterable[str] | None = None) -> int:
    """Delete the entity records nothing links any more (of ``candidates``, or all); returns how many. Their
    names and aliases leave the files at the next ``compact()``."""
    idx = index(engine)
    if idx is None:
        return 0
    if candidates is None:
        found = list(idx.scan(FilterSpec()))
    else:
        found = idx.get(sorted(set(candidates)))
    dead = []
    for f in found:
        if f.payload.get("merged_into"):
            continue  # counted with the entity it was merged into
        group = [f.id, *(f.payload.get("merged") or ())]
        if links(engine, group) == 0:
            dead += group
        elif candidates is not None:
            _prune_names(engine, idx, f.id, dict(f.payload))
    idx.delete(dead)
    return len(dead)


PRUNE_READ = 2000  # linked memories read to check an entity's names after a forget


def _prune_names(engine: "Engine", idx: EntityIndex, eid: str, payload: dict[str, Any]) -> None:
    """An entity that is still linked keeps only the names its remaining memories say: an alias (or the full
    name it was renamed to) that only a forgotten memory said goes with it."""
    flt = FilterSpec(must=[Cond(LINK_FIELD, any_of=(eid, *(payload.get("merged") or ())))])
    said = " \x1f ".join(names.key(f.payload.get("text", "")) for f in engine.backend.scroll(flt, limit=PRUNE_READ)[0])
    kept = [a for a in payload.get("aliases") or () if names.key(a) in said]
    name = payload.get("name", "")
    if names.key(name) not in said and kept:  # renamed by a full name no memory says now: back to what is said
        name, kept = kept[0], kept[1:]
    if kept != list(payload.get("aliases") or ()) or name != payload.get("name"):
        rules = [r for r in payload.get("alias_rules") or () if r.split("\x1f")[0] in kept]
        idx.update(eid, payload, {"name": name, "aliases": kept, "alias_rules": rules})


def after_forget(engine: "Engine", gone: Sequence[MemoryRecord]) -> None:
    """The entities the forgotten memories named that nothing else names are deleted."""
    idx = index(engine)
    if idx is None or not gone:
        return
    try:
        candidates: set[str] = set()
        for rec in gone:
            keys = [k for m in given.merged(extract(rec.text), rec) for k in lookup_keys(m)]
            candidates |= {k.id for k in idx.known(entity_scope(rec.scope), keys)}
        collect_unlinked(engine, candidates)
    except Exception as exc:  # noqa: BLE001 - the forget happened; compact() collects what is left
        log.warning("could not collect the entities of forgotten memories: %s: %s", type(exc).__name__, exc)


def compact(engine: "Engine") -> None:
    """Unlinked entities deleted, then the entity shard's files rewritten without them (Edge only)."""
    idx = index(engine)
    if idx is None:
        return
    collect_unlinked(engine)
    idx.flush()
    rewrite_shard(engine, idx.backend)


def close(engine: "Engine") -> None:
    with _OPENING:  # not while another thread opens it
        _close(engine)


def _close(engine: "Engine") -> None:
    got = linking.linker(engine)
    if got is not None:
        try:
            got.stop()  # what is pending is linked before the index closes (the next open would otherwise)
        except Exception as exc:  # noqa: BLE001 - closing: the markers stay, the next open links them
            log.warning("could not link the pending memories on close: %s: %s", type(exc).__name__, exc)
        engine._shared.entity_linker = None  # type: ignore[attr-defined]
    idx = getattr(engine._shared, "entity_index", None)
    if idx is not None:
        try:
            idx.flush()
            idx.backend.close()
        except Exception:  # noqa: BLE001 - closing: what cannot be closed is repaired at the next open
            pass
        engine._shared.entity_index = None  # type: ignore[attr-defined]


def known_in_question(engine: "Engine", question: str, scope: Any) -> tuple[list[Any], list[Any]]:
    """The entities a question names that the scope knows (with their records), and the named things it does
    not know (mentions that are not tentative)."""
    from ..scope import coerce_scope
    from ..types import Scope

    idx = index(engine)
    if idx is None:
        return [], []
    wanted = coerce_scope(scope, admin=True)
    sc = wanted if isinstance(wanted, Scope) else None
    known, unknown = [], []
    for m in extract(question):
        cands = idx.known(sc, lookup_keys(m), own=False) if sc is not None else []
        match = resolve(m, cands)
        if match is None and not m.tentative:
            # a name the question writes with a capital, but said lowercase in the memories: not unknown
            unknown.append(m)
        elif match is not None:
            known.append(match.id)
    return list(dict.fromkeys(known)), unknown


ALIAS_NAMES = 6  # other names of one entity added to a question, at most


def alias_terms(engine: "Engine", question: str, scope: Any) -> SparseVec | None:
    """The BM25 terms of the other names of the known, non-hub entities ``question`` names by an alias ("the
    events store" for ClickHouse, also called CHouse): the memories that use another of its names are found by
    them (:mod:`remem.core.recall.aliases`). None when the question names no entity, or names each by all its
    names already ("Dana Whitfield", known as Dana too, adds nothing). An exact alias is taken across types
    (a question's "the events store" is a service to the extractor, a name of the product ClickHouse here).
    Independent of ``entity_weight``: this changes which words the question is searched with, not a ranking
    boost; ``entities=False``, ``entity_recall=False`` or ``entity_aliases=False`` turn it off."""
    settings = engine.settings
    if not enabled(engine) or not getattr(settings, "entity_recall", True) \
            or not getattr(settings, "entity_aliases", True):
        return None
    try:
        from ..recall.aliases import names_vector
        from ..scope import coerce_scope
        from ..types import Scope

        idx = index(engine)
        wanted = coerce_scope(scope, admin=True)
        if idx is None or not isinstance(wanted, Scope):
            return None
        asked = set(lexical.bm25_query(question)[0])
        hub = float(getattr(settings, "entity_hub_share", 1.0))
        total: int | None = None
        other: list[str] = []
        for m in extract(question):
            cands = idx.known(wanted, lookup_keys(m), own=False)
            match = resolve(m, cands)
            eid = match.id if match is not None else _said_alias(m, cands)
            got = idx.get([eid]) if eid else []
            if not got:
                continue
            p = got[0].payload
            left_out = [n for n in [p.get("name", ""), *(p.get("aliases") or ())]
                        if n and not set(lexical.bm25_query(n)[0]) <= asked]
            if not left_out:
                continue  # the question says every name of it
            if hub < 1.0:
                if total is None:
                    total = engine.backend.count(engine.filter(scope))
                group = [got[0].id, *(p.get("merged") or ())]
                if total >= HUB_MIN_MEMORIES and _linked_count(engine, scope, group) > hub * total:
                    continue  # a hub: its other names are in a random share of the scope
            other += left_out[:ALIAS_NAMES]
        return names_vector(list(dict.fromkeys(other))) if other else None
    except Exception as exc:  # noqa: BLE001 - recall goes on with the question's own words
        log.warning("entity aliases skipped: %s: %s", type(exc).__name__, exc)
        return None


def _said_alias(mention: Any, cands: Sequence[Any]) -> str | None:
    """The one candidate that has ``mention``'s key as a stated name, whatever its type, or None."""
    exact = {c.id for c in cands if mention.key in c.keys}
    return next(iter(exact)) if len(exact) == 1 else None


HOP_WEIGHT = 0.3  # an entity one hop away (named beside the one asked about) counts this much of it
HOP_READ = 20  # memories of an asked entity read for its neighbours
HOPS = 3  # neighbours followed, at most
HUB_MIN_MEMORIES = 200  # scopes smaller than this have no hubs (a team's 20 notes all name its service)


def recall_terms(engine: "Engine", question: str, scope: Any) -> tuple[SparseVec | None, bool]:
    """The ``ident`` terms recall adds for the entities ``question`` names (and, with less weight, the entities
    named most often beside them: one bounded hop), and whether the question names only unknown entities.
    Hubs are damped twice: an entity linked to more than ``entity_hub_share`` of the scope's memories is left
    out (a conversation's speakers are in every message), and Qdrant's IDF on ``ident`` weighs the rest."""
    settings = engine.settings
    if not enabled(engine) or not getattr(settings, "entity_recall", True):
        return None, False
    try:
        known, unknown = known_in_question(engine, question, scope)
        if not known or float(getattr(settings, "entity_weight", 0.0)) <= 0:
            return None, not known and bool(unknown) and getattr(settings, "entity_unknown_empty", True) \
                and _asks_only_the_unknown(engine, question, unknown, scope)
        idx = index(engine)
        hub = float(getattr(settings, "entity_hub_share", 1.0))
        total = engine.backend.count(engine.filter(scope)) if hub < 1.0 else 0
        total = total if total >= HUB_MIN_MEMORIES else 0  # in a small scope every entity is "frequent"
        group: dict[str, float] = {}
        for f in (idx.get(known) if idx is not None else []):
            ids = [f.id, *(f.payload.get("merged") or ())]
            if hub < 1.0 and total and _linked_count(engine, scope, ids) > hub * total:
                continue  # a hub: it would rank a random share of the scope first
            group.update((i, 1.0) for i in ids)
        if not group:
            return None, False
        if HOP_WEIGHT > 0:
            flt = engine.filter(scope)
            flt.must.append(Cond(LINK_FIELD, any_of=tuple(group)))
            near: dict[str, int] = {}
            for f in engine.backend.scroll(flt, limit=HOP_READ)[0]:  # any of them (newest first cost 7 ms)
                for i in f.payload.get(LINK_FIELD) or ():
                    if i not in group:
                        near[i] = near.get(i, 0) + 1
            for i, _ in sorted(near.items(), key=lambda kv: -kv[1])[:HOPS]:
                if not (hub < 1.0 and total and _linked_count(engine, scope, [i]) > hub * total):
                    group[i] = HOP_WEIGHT
        idx_vals = sorted((entity_token(i), w) for i, w in group.items())
        return ([t for t, _ in idx_vals], [w for _, w in idx_vals]), False
    except Exception as exc:  # noqa: BLE001 - recall goes on without entities
        log.warning("entity recall skipped: %s: %s", type(exc).__name__, exc)
        return None, False


def _linked_count(engine: "Engine", scope: Any, ids: Sequence[str]) -> int:
    flt = engine.filter(scope)
    flt.must.append(Cond(LINK_FIELD, any_of=tuple(ids)))
    return engine.backend.count(flt)


def _asks_only_the_unknown(engine: "Engine", question: str, unknown: Sequence[Any], scope: Any) -> bool:
    """Whether the question asks about a name no memory of ``scope`` has a word of (a name the memories wrote
    lowercase, or the extractor did not link, is not unknown). A full name ("Priscilla Vandermeer", "the
    Zanzibar gateway") or an identifier is what such a question is about; a single word may only qualify what is
    asked, so the question is blank then only when nothing else it says is in a memory either ("which tool
    manages our Python dependencies, uv or poetry?" asks about uv and poetry, though no memory says Python;
    "who is Bob?" has nothing else to find)."""
    from ..store.backends.base import PrefetchSpec

    from .resolve import IDENTIFIER_KINDS

    flt = engine.filter(scope)

    def found(text: str) -> bool | None:
        """Whether some memory has a word of ``text``; None when ``text`` has no word BM25 indexes."""
        vec = lexical.bm25_query(text)
        if not vec[0]:
            return None
        return bool(engine.backend.query([PrefetchSpec("bm25", vec, 1)], flt, 1, engine.settings.rrf_k))

    nowhere = [m for m in unknown if not (m.kind == "service" and m.name.islower())  # "the deploy pipeline"
               and found(m.name) is False]
    if any(m.kind in IDENTIFIER_KINDS or len(names.words(m.key)) >= 2 and not m.name.islower() for m in nowhere):
        return True
    if not nowhere:
        return False
    rest = question
    for m in unknown:
        rest = rest.replace(m.name, " ")
    return not found(rest)


__all__ = ["recall_terms", "after_forget", "close", "collect_unlinked", "compact", "enabled", "entity_ids",
           "entity_token", "index", "known_in_question", "link_pending", "linked", "links", "settle", "write_new"]
