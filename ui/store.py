"""What the inspector asks the store, through the public :class:`remem.Memory` API only.

Pages stay fast at any size because each asks Qdrant for one page: the memory list pages by a keyset cursor
(the stored time of the last row shown) instead of an offset, so the 2,000th page costs what the first does.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from remem import ALL_TENANTS, MemoryRecord, NotFoundError, Scope

GLOBAL_KEY = "__global__"  # the global (tenant-less) space, as the tenant picker names it
PAGE_SIZE = 50
TEXT_FILTER_LIMIT = 100
HISTORY_LIMIT = 25


def all_records(mem: Any) -> Iterator[MemoryRecord]:
    """Every memory of every tenant (tenant counts, the chart): the inspector is the store's admin page, so it
    crosses tenants, and only through the explicit admin switch."""
    return iter(mem.iter_records(scope=ALL_TENANTS))


def lookup(mem: Any, memory_id: str) -> MemoryRecord:
    """A memory by id in any tenant (links from every page point at ids). A change to it then runs inside the
    record's own scope (``scope=rec.scope``), never across tenants."""
    return mem.get(memory_id, scope=ALL_TENANTS)


def scope_of(tenant_key: str) -> Scope:
    return Scope() if tenant_key in ("", GLOBAL_KEY) else Scope(tenant=tenant_key)


def tenant_key(rec: MemoryRecord) -> str:
    return GLOBAL_KEY if rec.scope.tenant is None else rec.scope.tenant


def parse_day(value: str | None, *, end: bool = False) -> _dt.datetime | None:
    """A date field (YYYY-MM-DD) as UTC midnight; ``end`` gives the next midnight so the day is included."""
    if not value or not value.strip():
        return None
    try:
        day = _dt.date.fromisoformat(value.strip()[:10])
    except ValueError as exc:
        raise ValueError(f"not a date (YYYY-MM-DD): {value!r}") from exc
    start = _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc)
    return start + _dt.timedelta(days=1) if end else start


@dataclass
class ListQuery:
    """The memory list's filters and cursor, as they travel in the page URL."""

    tenant: str = GLOBAL_KEY
    kind: str = ""
    tag: str = ""
    session: str = ""
    since: str = ""
    until: str = ""
    text: str = ""
    current_only: bool = False
    before: str = ""           # keyset cursor: ISO stored time of the last row of the previous page
    skip: tuple[str, ...] = ()  # ids at exactly that time already shown
    page: int = 1

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> "ListQuery":
        def get(name: str) -> str:
            return (params.get(name) or "").strip()

        try:
            page = max(1, int(get("page") or 1))
        except ValueError:
            page = 1
        return cls(tenant=get("t") or GLOBAL_KEY, kind=get("kind"), tag=get("tag"), session=get("session"),
                   since=get("since"), until=get("until"), text=get("q"), current_only=get("current") == "1",
                   before=get("before"), skip=tuple(s for s in get("skip").split(",") if s)[:PAGE_SIZE * 4],
                   page=page)

    def filters(self) -> dict[str, str]:
        """The filter part of the URL (no cursor): what "first page" and the next-page link keep."""
        out = {"t": self.tenant, "kind": self.kind, "tag": self.tag, "session": self.session, "since": self.since,
               "until": self.until, "q": self.text, "current": "1" if self.current_only else ""}
        return {k: v for k, v in out.items() if v}


@dataclass
class Page:
    records: list[MemoryRecord]
    total: int | None            # None when Qdrant cannot count the filter cheaply (time range, text)
    next_params: dict[str, str] | None
    note: str = ""
    scores: dict[str, float] = field(default_factory=dict)


def list_page(mem: Any, q: ListQuery, size: int = PAGE_SIZE) -> Page:
    """One page of the memory list, newest first; a text filter ranks by recall and then sorts by date."""
    scope = scope_of(q.tenant)
    kind = q.kind or None
    tags = [q.tag] if q.tag else None
    where = {"session": q.session} if q.session else None
    since, until = parse_day(q.since), parse_day(q.until, end=True)
    if q.text:
        hits = mem.search(q.text, scope=scope, limit=TEXT_FILTER_LIMIT, kind=kind, tags=tags, where=where,
                          since=since, until=until, reinforce=False)
        note = (f"Text filter: the {TEXT_FILTER_LIMIT} best recall matches at most, each message of a passage "
                f"listed, newest first (superseded memories are not recalled).")
        scores = {rec.id: h.score for h in hits for rec in h.records}  # a passage lists each of its messages
        records = sorted((rec for h in hits for rec in h.records), key=lambda r: r.created_at, reverse=True)
        return Page(records, len(records), None, note, scores)
    cursor = None
    if q.before:
        try:
            cursor = _dt.datetime.fromisoformat(q.before)
        except ValueError:
            cursor = None
    bound = until
    if cursor is not None:  # include rows at exactly the cursor time, then drop the ones already shown
        at_cursor = cursor + _dt.timedelta(microseconds=1)
        bound = at_cursor if bound is None else min(bound, at_cursor)
    skip = set(q.skip) if cursor is not None else set()
    rows = mem.list(scope=scope, limit=size + len(skip) + 1, kind=kind, tags=tags, where=where, since=since,
                    until=bound, include_superseded=not q.current_only)
    rows = [r for r in rows if r.id not in skip]
    more = len(rows) > size
    rows = rows[:size]
    next_params = None
    if more and rows:
        last = rows[-1].created_at
        ties = [r.id for r in rows if r.created_at == last]
        if cursor is not None and last == cursor:
            ties = [*q.skip, *ties]
        next_params = {**q.filters(), "before": last.isoformat(), "skip": ",".join(ties), "page": str(q.page + 1)}
    total = None
    if since is None and until is None and not q.current_only:
        total = mem.count(scope=scope, kind=kind, tags=tags, where=where)
    return Page(rows, total, next_params)


@dataclass
class Detail:
    record: MemoryRecord
    effective_importance: float | None
    history: list[MemoryRecord]  # oldest first, this record included


def detail(mem: Any, memory_id: str) -> Detail:
    rec = lookup(mem, memory_id)
    decay = getattr(mem, "decay", None)
    eff = decay.effective_importance(rec, time.time()) if decay is not None else None
    return Detail(rec, eff, supersede_chain(mem, rec))


def supersede_chain(mem: Any, rec: MemoryRecord) -> list[MemoryRecord]:
    """The versions of a memory linked by supersede, oldest first (bounded: a chain is walked, not trusted)."""
    older: list[MemoryRecord] = []
    seen = {rec.id}
    cur = rec
    while cur.supersedes and cur.supersedes not in seen and len(older) < HISTORY_LIMIT:
        try:
            cur = lookup(mem, cur.supersedes)
        except NotFoundError:
            break
        seen.add(cur.id)
        older.append(cur)
    newer: list[MemoryRecord] = []
    cur = rec
    while cur.superseded_by and cur.superseded_by not in seen and len(newer) < HISTORY_LIMIT:
        try:
            cur = lookup(mem, cur.superseded_by)
        except NotFoundError:
            break
        seen.add(cur.id)
        newer.append(cur)
    return [*reversed(older), rec, *newer]


def merge_group(mem: Any, ids: Sequence[str]) -> tuple[MemoryRecord, list[str]]:
    """Keep the most used (then most important, then oldest) memory of a duplicate group, give it the union of
    the group's tags and the highest importance, and forget the others."""
    recs: list[MemoryRecord] = []
    for memory_id in dict.fromkeys(ids):
        try:
            recs.append(lookup(mem, memory_id))
        except NotFoundError:
            continue
    if len(recs) < 2:
        raise ValueError("nothing to merge: fewer than two of these memories still exist")
    keep = max(recs, key=lambda r: (r.access_count, r.importance, -r.created_at.timestamp()))
    tags = list(dict.fromkeys(t for r in [keep, *recs] for t in r.tags))
    importance = max(r.importance for r in recs)
    kept = mem.update(keep.id, tags=tags, importance=importance, scope=keep.scope) if (
        tuple(tags) != keep.tags or importance != keep.importance) else keep
    gone = [r.id for r in recs if r.id != keep.id and mem.forget(r.id, scope=r.scope)]
    return kept, gone


def parse_tags(text: str) -> list[str]:
    return [t.strip().lstrip("#") for t in text.replace("\n", ",").split(",") if t.strip().lstrip("#")]


__all__ = ["GLOBAL_KEY", "Detail", "ListQuery", "Page", "all_records", "detail", "list_page", "lookup", "merge_group",
           "parse_day", "parse_tags", "scope_of", "supersede_chain", "tenant_key"]
