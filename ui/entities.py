"""What the entity pages ask the store, through the public :class:`remem.Memory` API only (``entities()``,
``about()``, ``merge_entities()``, ``split_entity()``): one tenant's entities, found by name or alias and kind,
a page at a time; one entity's profile; and the merges and splits the pages confirm before doing.

An entity page is addressed by name and kind (``/entity?t=acme&name=Dana&kind=person``), the way ``about()``
and the related entities of a profile name it; an entity of another kind with the same name is reached through
its own aliases, never confused with it.
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from remem import NotFoundError
from remem.core.entities import KINDS, Entity, EntityProfile

from .store import GLOBAL_KEY, scope_of

PAGE_SIZE = 50
MAX_LISTED = 5000  # entities a list query reads at most (page 100 of 50)
MERGE_CHOICES = 200  # same-kind entities a merge's name is looked for among
PROFILE_TOKENS = 600  # the about() text the page shows, as a prompt would get it


@dataclass
class EntityQuery:
    """The entity list's filters and page, as they travel in the URL."""

    tenant: str = GLOBAL_KEY
    kind: str = ""
    text: str = ""
    page: int = 1

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> "EntityQuery":
        def get(name: str) -> str:
            return (params.get(name) or "").strip()

        try:
            page = max(1, min(int(get("page") or 1), MAX_LISTED // PAGE_SIZE))
        except ValueError:
            page = 1
        kind = get("kind")
        if kind and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        return cls(tenant=get("t") or GLOBAL_KEY, kind=kind, text=get("q")[:200], page=page)

    def filters(self) -> dict[str, str]:
        return {k: v for k, v in {"t": self.tenant, "kind": self.kind, "q": self.text}.items() if v}


@dataclass
class EntityPage:
    entities: list[Entity]
    more: bool  # a next page exists
    first: int  # 1-based position of the first row


class ListCache:
    """The last entity lists asked for, kept :data:`LIST_TTL` seconds so paging through one costs nothing more:
    ``entities()`` counts the memories of every entity it reads whatever the page, so asking for 5,000 costs
    what asking for 51 does. A merge or split made here clears it; writes from elsewhere show within the TTL."""

    def __init__(self, ttl: float = 15.0) -> None:
        self.ttl = ttl
        self._lists: dict[tuple[str, str, str], tuple[float, list[Entity]]] = {}
        self._lock = threading.Lock()

    def get(self, mem: Any, q: EntityQuery) -> list[Entity]:
        key = (q.tenant, q.text.casefold(), q.kind)
        now = time.monotonic()
        with self._lock:
            got = self._lists.get(key)
            if got is not None and now - got[0] < self.ttl:
                return got[1]
        found = mem.entities(scope=scope_of(q.tenant), query=q.text or None, kind=q.kind or None, limit=MAX_LISTED)
        with self._lock:
            self._lists = {k: v for k, v in self._lists.items() if now - v[0] < self.ttl}
            self._lists[key] = (now, found)
        return found

    def clear(self) -> None:
        with self._lock:
            self._lists.clear()


def entity_page(mem: Any, q: EntityQuery, size: int = PAGE_SIZE, cache: ListCache | None = None) -> EntityPage:
    """One page of the tenant's entities, most mentioned first; ``q.text`` finds any name or alias containing it."""
    found = (cache or ListCache(ttl=0)).get(mem, q)
    start = (q.page - 1) * size
    return EntityPage(found[start:start + size], len(found) > start + size, start + 1)


def _names(e: Entity) -> list[str]:
    return [e.name, *e.aliases]


def profile_of(mem: Any, tenant: str, name: str, kind: str = "", budget: int = PROFILE_TOKENS) -> EntityProfile:
    """The profile of the entity ``name`` (and ``kind``, when given) names in the tenant; NotFoundError if none.

    ``about(name)`` first; when it resolves the name to an entity of another kind (two entities share a name),
    the entity of that kind is looked up by name and its profile asked for under each of its own names."""
    name = (name or "").strip()
    if not name:
        raise NotFoundError("no entity named: pick one on the entities page")
    scope = scope_of(tenant)
    profile = mem.about(name, scope=scope, token_budget=budget)
    if profile.entity is not None and (not kind or profile.entity.kind == kind):
        return profile
    wanted = name.casefold()
    for e in mem.entities(scope=scope, query=name, kind=kind or None, limit=50):
        if wanted not in {n.casefold() for n in _names(e)}:
            continue
        for other in _names(e):
            got = mem.about(other, scope=scope, token_budget=budget)
            if got.entity is not None and got.entity.id == e.id:
                return got
    where = "the global space" if tenant == GLOBAL_KEY else f"tenant {tenant!r}"
    raise NotFoundError(f"no {kind or 'entity'} named {name!r} in {where}")


def other_named(mem: Any, tenant: str, text: str, entity: Entity) -> Entity:
    """The entity of ``entity``'s kind, in the tenant, that ``text`` names (a name or an alias, whole or in part
    when only one matches), to merge into ``entity``. Found by name, not from a list of every entity of the kind:
    listing them counts each one's memories (~0.3 s for 300 people at 100k memories, measured)."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"name the {entity.kind} to merge into {entity.name!r}")
    found = [e for e in mem.entities(scope=scope_of(tenant), query=text, kind=entity.kind, limit=MERGE_CHOICES)
             if e.id != entity.id]
    exact = [e for e in found if text.casefold() in {n.casefold() for n in _names(e)}]
    if len(exact) == 1 or len(found) == 1:
        return (exact or found)[0]
    if not found:
        raise NotFoundError(f"no other {entity.kind} called anything like {text!r} in this tenant")
    some = ", ".join(repr(e.name) for e in (exact or found)[:6])
    raise ValueError(f"{text!r} names {len(exact or found)} {entity.kind} entities ({some}): give the whole name")


def timeline_days(profile: EntityProfile) -> Counter[tuple[_dt.date, str]]:
    """Per day, how many of the profile's lines became true then ("true now" or "changed since"), and how many of
    its relations began."""
    days: Counter[tuple[_dt.date, str]] = Counter()
    dated = [("true now", x.since) for x in profile.current] + [("changed since", x.since) for x in profile.changed]
    dated += [("relation began", r.since) for r in getattr(profile, "relations", ())]
    for label, since in dated:
        if since is not None:
            days[(since.astimezone(_dt.timezone.utc).date(), label)] += 1
    return days


def describe(e: Entity) -> str:
    """One line for a confirmation page: name, kind, other names, mentions."""
    also = f"; also {', '.join(e.aliases)}" if e.aliases else ""
    return f"{e.name} ({e.kind}{also}) · {e.mentions} memor{'y' if e.mentions == 1 else 'ies'}"


__all__ = ["EntityPage", "EntityQuery", "ListCache", "PAGE_SIZE", "describe", "entity_page", "other_named",
           "profile_of", "timeline_days"]
