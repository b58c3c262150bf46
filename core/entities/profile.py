"""``about()`` and ``entities()``: what a scope knows about one entity, and which entities it knows.

A profile reads the memories linked to the entity (and to the entities merged into it), splits them into what
is true at ``as_of`` (default now) and what stopped being true before it (superseded or expired, with dates),
counts the entities named beside it, and renders all that for a prompt within a token budget: the entity's
line first, then what is true now (distilled memories before raw messages, newest first), what changed, and
the related entities. Each line names its memory and the messages it came from.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from ..recall.fencing import fence, fence_overhead
from ..recall.tokens import count_tokens
from ..scope import coerce_scope
from ..store.backends.base import Cond
from ..store.records import from_payload
from ..store.validation import check_limit, finite
from ..types import MemoryRecord, Scope, to_ts
from . import hooks, names
from .extract import KINDS, Mention, extract
from .resolve import lookup_keys, resolve
from .store import LINK_FIELD, scope_filter, shown, to_entity
from .types import Entity, EntityProfile, ProfileLine, RelatedEntity, Relation

if TYPE_CHECKING:
    from ..store.engine import Engine

MAX_NAME_CHARS = 500  # a name asked for; a longer one names nothing (a 500,000-character one took minutes)
MAX_MEMORIES = 500  # read for one profile; a hub entity's oldest lines beyond it are left out
EPISODE_KINDS = frozenset({"message", "episode"})
HEADER = "What is known about {name} (from memory; each line names its memory id):"


def _scope(scope: Any) -> Scope | None:
    wanted = coerce_scope(scope, admin=True)
    return wanted if isinstance(wanted, Scope) else None


def find(engine: "Engine", name: str, scope: Any) -> Any | None:
    """The stored entity ``name`` names in ``scope`` (by any alias; a unique first name), or None."""
    idx = hooks.index(engine)
    sc = _scope(scope)
    if idx is None or not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        return None  # too long to be a name: not read (extracting from it costs time that grows with its square)
    k = names.key(name)
    asked = [m for m in extract(name) if m.key == k] or [Mention(name=name.strip(), kind="person", key=k,
                                                                  guessed=True)]
    for m in asked:
        keys = lookup_keys(m) + [k, names.squashed(k), name.strip().casefold()]
        cands = idx.known(sc, keys, own=False) if sc is not None else []
        match = resolve(m, cands)
        if match is None:  # a name asked for directly: any type with exactly that key
            exact = [c for c in cands if k in c.keys or name.strip().casefold() in c.keys]
            match_id = exact[0].id if len(exact) == 1 else None
        else:
            match_id = match.id
        if match_id:
            got = idx.get([match_id])
            return got[0] if got else None
    return None


def _linked(engine: "Engine", scope: Any, group: Sequence[str]) -> list[Any]:
    flt = engine.filter(scope, notes=False)
    flt.must.append(Cond(LINK_FIELD, any_of=tuple(group)))
    return engine.backend.newest(flt, MAX_MEMORIES)


def _when(rec: MemoryRecord) -> _dt.datetime:
    return rec.occurred_at or rec.valid_from or rec.created_at


def about(engine: "Engine", name: str, *, scope: Any = None, as_of: Any = None,
          token_budget: int = 600) -> EntityProfile:
    engine.check_usable()
    if not isinstance(name, str) or not name.strip():
        raise ValueError("about() needs the name of an entity")
    check_limit("token_budget", token_budget, low=0, high=1_000_000)
    ts = finite("as_of", to_ts(as_of)) if as_of is not None else time.time()
    found = find(engine, name, scope)
    if found is None:
        return EntityProfile(query=name, entity=None, text="")
    group = [found.id, *(found.payload.get("merged") or ())]
    points = _linked(engine, scope, group)
    current: list[tuple[MemoryRecord, Any]] = []
    changed: list[tuple[MemoryRecord, Any]] = []
    related: Counter[str] = Counter()
    for f in points:
        rec = from_payload(f.id, f.payload)
        start = (rec.valid_from or rec.created_at).timestamp()
        if start > ts:
            continue  # not yet true at as_of
        until = rec.valid_until.timestamp() if rec.valid_until else None
        (changed if until is not None and until <= ts else current).append((rec, f))
        related.update(i for i in (f.payload.get(LINK_FIELD) or ()) if i not in group)
    current.sort(key=lambda rf: (rf[0].kind in EPISODE_KINDS, -_when(rf[0]).timestamp()))
    changed.sort(key=lambda rf: -(rf[0].valid_until or rf[0].created_at).timestamp())
    idx = hooks.index(engine)
    rel = []
    if idx is not None and related:
        top = [i for i, _ in related.most_common(12)]
        by_id = {g.id: g for g in idx.get(top)}
        rel = [RelatedEntity(name=shown(by_id[i].payload.get("name", "")),
                             kind=shown(by_id[i].payload.get("kind", "")), shared=related[i])
               for i in top if i in by_id][:8]
    entity = to_entity(found, mentions=len(points))
    if entity.merged and idx is not None:  # their names, so a merge can be shown and split off again
        merged = {g.id: shown(g.payload.get("name", "")) for g in idx.get(list(entity.merged))}
        entity = dataclasses.replace(entity, merged_names=tuple(merged.get(i, "") for i in entity.merged))
    cur = tuple(_line(r) for r, _ in current)
    chg = tuple(_line(r) for r, _ in changed)
    rels = _relations(engine, scope, group, ts)
    rel = _with_relations(rel, rels, entity.name, ts)
    profile = EntityProfile(query=name, entity=entity, current=cur, changed=chg, related=tuple(rel),
                            relations=tuple(rels), extra={"as_of": ts})
    return EntityProfile(query=name, entity=entity, current=cur, changed=chg, related=tuple(rel),
                         relations=tuple(rels), text=render(profile, token_budget), extra={"as_of": ts})


def _relations(engine: "Engine", scope: Any, group: Sequence[str], ts: float) -> list[Relation]:
    """The entity's relations true at ``ts``, then those that ended by then (:mod:`.relations`)."""
    from .relations import lifecycle
    from .relations.records import for_profile

    ridx, eidx = lifecycle.index(engine, create=False), hooks.index(engine)
    if ridx is None or eidx is None:
        return []
    now, ended = for_profile(ridx, eidx, _scope(scope), group, ts)
    return now + ended


def _with_relations(related: list[RelatedEntity], rels: Sequence[Relation], name: str,
                    ts: float) -> list[RelatedEntity]:
    """The related entities with the relations that link them (an entity linked only by a relation added)."""
    via: dict[str, list[str]] = {}
    for r in rels:
        other = r.object if r.subject == name else r.subject
        if other and other != name and (r.until is None or r.until.timestamp() > ts):
            via.setdefault(other, []).append(r.predicate)
    out = [RelatedEntity(name=x.name, kind=x.kind, shared=x.shared, via=tuple(dict.fromkeys(via.pop(x.name, ()))))
           for x in related]
    for other, preds in via.items():
        out.append(RelatedEntity(name=other, kind="", shared=0, via=tuple(dict.fromkeys(preds))))
    return out


def _line(rec: MemoryRecord) -> ProfileLine:
    from ..recall.fencing import one_line  # a memory shown to a model: one line, no tag-like "<" (issue 44)

    return ProfileLine(text=one_line(rec.text), memory_id=rec.id, since=_when(rec), until=rec.valid_until,
                       sources=tuple(one_line(s) for s in rec.sources), superseded_by=rec.superseded_by)


def _day(when: _dt.datetime | None) -> str:
    return when.date().isoformat() if when else "?"


def _src(line: ProfileLine) -> str:
    more = f"; from {', '.join(line.sources[:3])}" if line.sources else ""
    return f" (memory {line.memory_id[:8]}{more})"


def _fact(r: Relation) -> str:
    return f"{r.subject} {r.predicate.replace('_', ' ')} {r.object}"


def _rel_src(r: Relation) -> str:
    return f" (memory {', '.join(s[:8] for s in r.sources[:3])})" if r.sources else ""


def _how(r: RelatedEntity) -> str:
    said = [", ".join(p.replace("_", " ") for p in r.via)] if r.via else []
    return "; ".join(said + ([str(r.shared)] if r.shared or not said else []))


def as_of_of(profile: EntityProfile) -> _dt.datetime:
    """The time a profile was asked at (``extra["as_of"]``), else now."""
    ts = profile.extra.get("as_of") if profile.extra else None
    return _dt.datetime.fromtimestamp(float(ts) if ts is not None else time.time(), tz=_dt.timezone.utc)


def render(profile: EntityProfile, token_budget: int) -> str:
    """The profile as prompt text, within ``token_budget`` tokens: whole lines, the most useful first, fenced
    as recalled data like every memory shown to a model (:func:`~remem.core.recall.fencing.fence`)."""
    e = profile.entity
    token_budget -= count_tokens(fence_overhead()) + 1
    if e is None or token_budget <= 0:
        return ""
    also = f"; also called {', '.join(e.aliases)}" if e.aliases else ""
    versions = f"; versions {', '.join(e.versions)}" if e.versions else ""
    head = [HEADER.format(name=e.name),
            f"{e.name} ({e.kind}{also}{versions}); first mentioned {_day(e.first_seen)}, last {_day(e.last_seen)}, "
            f"in {e.mentions} {'memory' if e.mentions == 1 else 'memories'}."]
    sections: list[tuple[str, list[str]]] = [
        ("True now:", [f"- [{_day(x.since)}] {x.text}{_src(x)}" for x in profile.current]),
        ("What changed:", [f"- [{_day(x.since)} until {_day(x.until)}] {x.text}{_src(x)}"
                           + (" (replaced)" if x.superseded_by else "") for x in profile.changed]),
        ("Relations now:", [f"- [{_day(r.since)}] {_fact(r)}{_rel_src(r)}"
                            for r in profile.relations if r.until is None or r.until > as_of_of(profile)]),
        ("Relations that changed:", [f"- [{_day(r.since)} until {_day(r.until)}] {_fact(r)}{_rel_src(r)}"
                                     + (" (replaced)" if r.superseded_by else "")
                                     for r in profile.relations if r.until is not None
                                     and r.until <= as_of_of(profile)]),
    ]
    related = ", ".join(f"{r.name} ({r.kind + ', ' if r.kind else ''}{_how(r)})" for r in profile.related)
    out = list(head)
    used = count_tokens("\n".join(out))
    if used > token_budget:
        return ""
    tail = f"Related: {related}" if related else ""
    reserve = count_tokens(tail) + 1 if tail else 0
    # the first line of each section before the rest of any, then the rest in order
    order: list[tuple[int, str]] = []
    for s, (_, lines) in enumerate(sections):
        order += [(s, ln) for ln in lines[:1]]
    for s, (_, lines) in enumerate(sections):
        order += [(s, ln) for ln in lines[1:]]
    kept: dict[int, list[str]] = {s: [] for s in range(len(sections))}
    for s, ln in order:
        title_cost = 0 if kept[s] else count_tokens(sections[s][0]) + 1
        cost = count_tokens(ln) + 1 + title_cost
        if used + cost + reserve > token_budget:
            continue
        kept[s].append(ln)
        used += cost
    for s, (title, _) in enumerate(sections):
        if kept[s]:
            out += [title, *kept[s]]
    if tail and used + reserve <= token_budget:
        out.append(tail)
    text = "\n".join(out)
    while count_tokens(text) > token_budget and len(out) > 2:  # token counts of joined lines can differ
        out.pop()
        text = "\n".join(out)
    return fence(out)


def list_entities(engine: "Engine", *, scope: Any = None, query: str | None = None, kind: str | None = None,
                  limit: int = 50) -> list[Entity]:
    engine.check_usable()
    check_limit("limit", limit, high=10_000)
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if query is not None and not isinstance(query, str):
        raise TypeError("query must be a string")
    idx = hooks.index(engine)
    sc = _scope(scope)
    if idx is None:
        return []
    flt = scope_filter(sc)
    if kind is not None:
        flt.must.append(Cond("kind", eq=kind))
    qk = names.key(query) if query else ""
    out: list[tuple[int, float, Entity]] = []
    for f in idx.scan(flt):
        p = f.payload
        if p.get("merged_into"):
            continue
        if qk and not any(qk in k for k in p.get("names") or () if not k.startswith(("~", "first:"))):
            continue
        group = [f.id, *(p.get("merged") or ())]
        n = hooks.links(engine, group) if sc is None else _count(engine, scope, group)
        if n == 0:
            continue
        out.append((n, float(p.get("last_ts") or 0), to_entity(f, mentions=n)))
    out.sort(key=lambda t: (-t[0], -t[1]))
    return [e for _, _, e in out[:limit]]


def _count(engine: "Engine", scope: Any, group: Sequence[str]) -> int:
    flt = engine.filter(scope, notes=False)
    flt.must.append(Cond(LINK_FIELD, any_of=tuple(group)))
    return engine.backend.count(flt)


__all__ = ["about", "find", "list_entities", "render"]
