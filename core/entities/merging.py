"""Merging and splitting entities by hand, both recorded and both undone by the other.

``merge(keep, other)``: ``other`` stays stored, marked ``merged_into`` ``keep``, and ``keep`` lists it in
``merged``: its names now find ``keep``, and recall and profiles read the memories of both. Nothing else is
rewritten, so ``split(keep, other's name)`` undoes it exactly.

``split(entity, alias)``: an alias that resolution merged (a first name, a near spelling, a spacing) leaves
the entity, which refuses it from then on; the memories that name it are linked again, to a new entity of its
own. Entities of different types or of different scopes are never merged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..scope import coerce_scope
from ..store.backends.base import Cond
from ..store.records import from_payload
from ..types import NotFoundError, Scope
from . import hooks, names
from .extract import Mention
from .store import LINK_FIELD, _visible, entity_scope, to_entity
from .types import Entity

if TYPE_CHECKING:
    from ..store.engine import Engine


def _get(engine: "Engine", eid: Any, scope: Scope) -> dict[str, Any]:
    idx = hooks.index(engine)
    if not isinstance(eid, str) or idx is None:
        raise NotFoundError(f"no entity {eid!r} in this scope")
    got = idx.get([eid]) if _uuid(eid) else []
    if not got or got[0].payload.get("tenant") != scope.stored_tenant or not _visible(got[0].payload, scope, False):
        raise NotFoundError(f"no entity {eid!r} in this scope")
    return dict(got[0].payload)


def _uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


def _scope(scope: Any) -> Scope:
    wanted = coerce_scope(scope)  # one scope: merging never spans tenants
    assert isinstance(wanted, Scope)
    return wanted


def merge(engine: "Engine", keep: str, other: str, *, scope: Any = None) -> Entity:
    engine.check_usable()
    sc = _scope(scope)
    if keep == other:
        raise ValueError("an entity cannot be merged into itself")
    with engine.write_lock:
        k, o = _get(engine, keep, sc), _get(engine, other, sc)
        if k.get("merged_into") or o.get("merged_into"):
            raise ValueError("one of these entities is already merged into another; split it first")
        if k.get("kind") != o.get("kind"):
            raise ValueError(f"entities of different types are never merged ({k.get('kind')} and {o.get('kind')})")
        if (k.get("user"), k.get("agent")) != (o.get("user"), o.get("agent")):
            raise ValueError("these entities belong to different scopes")
        idx = hooks.index(engine)
        assert idx is not None
        idx.update(other, o, {"merged_into": keep})
        new = idx.update(keep, k, {"merged": [*(k.get("merged") or ()), other, *(o.get("merged") or ())]})
    return to_entity(_found(keep, new))


def split(engine: "Engine", entity_id: str, name: str, *, scope: Any = None) -> Entity:
    """Undo a merge (``name`` is the merged entity's name) or split off an alias; returns the entity that
    ``name`` now is."""
    engine.check_usable()
    sc = _scope(scope)
    if not isinstance(name, str) or not name.strip():
        raise ValueError("split needs the name to split off")
    idx = hooks.index(engine)
    with engine.write_lock:
        e = _get(engine, entity_id, sc)
        assert idx is not None
        for mid in e.get("merged") or ():
            got = idx.get([mid])
            if got and names.key(got[0].payload.get("name", "")) == names.key(name):
                m = dict(got[0].payload)
                idx.update(entity_id, e, {"merged": [i for i in e.get("merged") or () if i != mid]})
                new = idx.update(mid, m, {"merged_into": None})
                return to_entity(_found(mid, new))
        k = names.key(name)
        aliases = [a for a in e.get("aliases") or () if names.key(a) != k]
        if len(aliases) == len(e.get("aliases") or ()):
            raise ValueError(f"{name!r} is neither an alias of {e.get('name')!r} nor an entity merged into it")
        rules = [r for r in e.get("alias_rules") or () if names.key(r.split("\x1f")[0]) != k]
        idx.update(entity_id, e, {"aliases": aliases, "alias_rules": rules,
                                  "refused": sorted({*(e.get("refused") or ()), k})})
        own = Scope(tenant=sc.tenant, user=e.get("user"), agent=e.get("agent"))
        alias = next((a for a in e.get("aliases") or () if names.key(a) == k), name.strip())
        idx.link(own, [Mention(name=alias, kind=e.get("kind", ""), key=k)], float(e.get("last_ts") or 0))
        relinked = _relink(engine, own, entity_id, k)
    return relinked or to_entity(_found(entity_id, e))


def _relink(engine: "Engine", scope: Scope, entity_id: str, key: str) -> Entity | None:
    """Link again the memories of ``entity_id`` that name ``key``; the entity ``key`` resolves to now."""
    flt = engine.filter(entity_scope(scope))
    flt.must.append(Cond(LINK_FIELD, any_of=(entity_id,)))
    new_id = None
    for f in list(engine.scan(flt)):
        rec = from_payload(f.id, f.payload)
        if key not in names.key(rec.text):
            continue
        point = engine.point(rec, None)
        engine.backend.set_vectors([point])
        engine.backend.set_payload([f.id], {LINK_FIELD: point.payload.get(LINK_FIELD, [])})
        idx = hooks.index(engine)
        for eid in point.payload.get(LINK_FIELD, []):
            got = idx.get([eid]) if idx is not None else []
            if got and key in (got[0].payload.get("names") or ()):
                new_id = eid
    if new_id is None:
        return None
    idx = hooks.index(engine)
    got = idx.get([new_id]) if idx is not None else []
    return to_entity(got[0]) if got else None


def _found(eid: str, payload: dict[str, Any]) -> Any:
    from ..store.backends.base import Found

    return Found(id=eid, payload=payload)


__all__ = ["merge", "split"]
