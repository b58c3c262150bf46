"""MemoryRecord <-> Qdrant payload, and the filters every query is built from (scope first, always)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import hashlib
import re
import unicodedata
from typing import Any, Iterable, Mapping

from .backends.base import Cond, FilterSpec, Found
from ..recall.fencing import clean_tag
from ..types import FOREVER, GLOBAL_TENANT, MemoryRecord, Scope, Stats, to_datetime, to_ts

TOP_LEVEL_WHERE = {"kind", "source", "tags", "user", "agent", "session", "sources"}
PAYLOAD_ALIASES = {"occurred_at": "occurred_ts", "created_at": "created_ts"}  # record field -> payload field
RANGE_OPS = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
SESSION_FORGOTTEN = "session_forgotten"  # a summary's metadata: its session was forgotten whole, it is a note


def normalize_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(" .!?;,")


def content_hash(text: str, scope: Scope) -> str:
    """Same text in the same scope = same hash: the key of idempotent adds."""
    key = "\x1f".join([scope.stored_tenant, scope.user or "", scope.agent or "", scope.session or "",
                       normalize_text(text)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _dt_from_ts(value: Any) -> _dt.datetime | None:
    if value is None:
        return None
    return _dt.datetime.fromtimestamp(float(value), tz=_dt.timezone.utc)


def _in_offset(when: _dt.datetime | None, minutes: Any) -> _dt.datetime | None:
    """``when`` in the UTC offset it was given with (stores written before kept none: UTC)."""
    if when is None or isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 < abs(minutes) < 1440:
        return when
    return when.astimezone(_dt.timezone(_dt.timedelta(minutes=minutes)))


def to_payload(rec: MemoryRecord) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "text": rec.text,
        "kind": rec.kind,
        "tags": list(rec.tags),
        "importance": rec.importance,
        "meta": dict(rec.metadata),
        "tenant": rec.scope.stored_tenant,
        "created_ts": rec.created_at.timestamp(),
        "updated_ts": rec.updated_at.timestamp(),
        "valid_from_ts": (rec.valid_from or rec.created_at).timestamp(),
        "valid_until_ts": rec.valid_until.timestamp() if rec.valid_until else FOREVER,
        "access_count": rec.access_count,
        "merged_count": rec.merged_count,
        "content_hash": rec.content_hash,
        "embedded": rec.embedded,
    }
    for key in ("user", "agent", "session"):
        value = getattr(rec.scope, key)
        if value is not None:
            payload[key] = value
    if rec.source is not None:
        payload["source"] = rec.source
    if rec.supersedes:
        payload["supersedes"] = rec.supersedes
    if rec.superseded_by:
        payload["superseded_by"] = rec.superseded_by
    if rec.last_accessed_at:
        payload["last_accessed_ts"] = rec.last_accessed_at.timestamp()
    # always written, empty too: an update merges payloads, so a context or sources cleared must overwrite
    payload["context"] = rec.context or ""
    payload["sources"] = list(rec.sources)
    if rec.occurred_at is not None:
        payload["occurred_ts"] = rec.occurred_at.timestamp()
        offset = rec.occurred_at.utcoffset()  # where it was said: "yesterday" at 21:30 in Denver is that day there
        payload["occurred_utc_offset_min"] = int(offset.total_seconds() // 60) if offset else 0
    return payload


@functools.lru_cache(maxsize=4096)
def _stored_scope(tenant: Any, user: Any, agent: Any, session: Any) -> Scope:
    """A stored point's scope, one object per distinct scope: the hits of a search share a few."""
    return Scope(tenant=None if tenant in (None, GLOBAL_TENANT) else tenant, user=user, agent=agent, session=session)


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryRecord))


def _stored_record(fields: dict[str, Any]) -> MemoryRecord:
    """A frozen record from every one of its fields, read back from the store: set at once, not field by field
    through the frozen ``__setattr__`` (a search reads ~50 records; this halves what each costs)."""
    if fields.keys() != _RECORD_FIELDS:
        raise TypeError(f"a stored record needs every field: {sorted(_RECORD_FIELDS.symmetric_difference(fields))}")
    rec = object.__new__(MemoryRecord)
    rec.__dict__.update(fields)
    return rec


def from_payload(point_id: str, p: Mapping[str, Any]) -> MemoryRecord:
    until = p.get("valid_until_ts")
    return _stored_record(dict(
        id=point_id,
        text=p.get("text", ""),
        kind=p.get("kind", "note"),
        scope=_stored_scope(p.get("tenant"), p.get("user"), p.get("agent"), p.get("session")),
        tags=tuple(clean_tag(t) for t in p.get("tags") or ()),  # one written before tags were checked: one line
        importance=int(p.get("importance", 5)),
        metadata=dict(p.get("meta") or {}),
        source=p.get("source"),
        created_at=_dt_from_ts(p.get("created_ts")) or _dt.datetime.now(_dt.timezone.utc),
        updated_at=_dt_from_ts(p.get("updated_ts")) or _dt.datetime.now(_dt.timezone.utc),
        valid_from=_dt_from_ts(p.get("valid_from_ts")),
        valid_until=None if until is None or float(until) >= FOREVER else _dt_from_ts(until),
        supersedes=p.get("supersedes"),
        superseded_by=p.get("superseded_by"),
        access_count=int(p.get("access_count", 0)),
        last_accessed_at=_dt_from_ts(p.get("last_accessed_ts")),
        merged_count=int(p.get("merged_count", 0)),
        content_hash=p.get("content_hash", ""),
        embedded=bool(p.get("embedded", True)),
        context=p.get("context") or None,
        sources=tuple(p.get("sources") or ()),
        occurred_at=_in_offset(_dt_from_ts(p.get("occurred_ts")), p.get("occurred_utc_offset_min")),
    ))


def scope_conditions(scope: Scope) -> list[Cond]:
    """Tenant always (a hard partition, global included); user/agent/session when the scope sets them."""
    conds = [Cond("tenant", eq=scope.stored_tenant)]
    for key in ("user", "agent", "session"):
        value = getattr(scope, key)
        if value is not None:
            conds.append(Cond(key, eq=value))
    return conds


def valid_at(ts: float) -> list[Cond]:
    return [Cond("valid_from_ts", lte=ts), Cond("valid_until_ts", gt=ts)]


def valid_within(flt: FilterSpec, ts: float) -> FilterSpec:
    """``flt`` narrowed to what is valid at ``ts`` (for a filter built without ``valid_ts``)."""
    return FilterSpec(must=[*flt.must, *valid_at(ts)], must_not=flt.must_not, should=flt.should)


def valid_payload(payload: Mapping[str, Any], ts: float) -> bool:
    """What :func:`valid_at` asks of a point, checked on its payload (a missing bound fails, as in Qdrant)."""
    start, end = payload.get("valid_from_ts"), payload.get("valid_until_ts")
    return (isinstance(start, (int, float)) and isinstance(end, (int, float)) and start <= ts < end)


def where_conditions(where: Mapping[str, Any] | None) -> tuple[list[Cond], list[Cond]]:
    """``where`` keys: kind/source/tags/user/agent/session, anything else is a metadata field.

    Values: a scalar (equal), a list (any of), or an operator dict: ``$eq``, ``$ne``, ``$in``, ``$nin``,
    ``$exists`` (true: set and not empty; false: unset, null or empty) and numeric or datetime ranges
    ``$gt/$gte/$lt/$lte``. Returns (must, must_not) conditions.
    """
    must: list[Cond] = []
    must_not: list[Cond] = []
    if not where:
        return must, must_not
    if not isinstance(where, Mapping):
        raise TypeError(f"where must be a mapping such as {{'team': 'core'}}, got {type(where).__name__}")
    for key, value in where.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"where keys must be non-empty strings, got {key!r}")
        if key.startswith("$"):
            raise ValueError(f"where has no {key!r}: its keys are fields, ANDed (operators go inside a field's "
                             f"mapping, e.g. {{'team': {{'$in': ['core', 'infra']}}}})")
        field = (PAYLOAD_ALIASES.get(key) or key if key in TOP_LEVEL_WHERE or key in PAYLOAD_ALIASES
                 else "meta." + key.removeprefix("metadata.").removeprefix("meta."))
        if key in PAYLOAD_ALIASES:  # a time, stored as epoch seconds: equality is a one-point range
            _time_conditions(key, field, value, must, must_not)
            continue
        if isinstance(value, Mapping):
            if not value:  # it would match everything: a filter built up empty must not forget a whole scope
                raise ValueError(f"where[{key!r}] is an empty mapping; give an operator such as {{'$eq': ...}} "
                                 f"or omit the key")
            unknown = set(value) - set(RANGE_OPS) - {"$eq", "$ne", "$in", "$nin", "$exists"}
            if unknown:
                raise ValueError(f"unsupported operators for {key!r}: {sorted(unknown)}")
            if "$eq" in value:
                must.append(Cond(field, eq=_match_value(key, value["$eq"])))
            if "$ne" in value:
                must_not.append(Cond(field, eq=_match_value(key, value["$ne"])))
            if "$in" in value:
                must.append(Cond(field, any_of=_match_values(key, value["$in"])))
            if "$nin" in value:
                must_not.append(Cond(field, any_of=_match_values(key, value["$nin"])))
            if "$exists" in value:
                if not isinstance(value["$exists"], bool):
                    raise ValueError(f"where[{key!r}]['$exists'] must be true or false, got {value['$exists']!r}")
                (must_not if value["$exists"] else must).append(Cond(field, empty=True))
            bounds = {RANGE_OPS[op]: _as_number(v) for op, v in value.items() if op in RANGE_OPS}
            if bounds:
                must.append(Cond(field, **bounds))
        elif isinstance(value, (list, tuple, set)):
            must.append(Cond(field, any_of=_match_values(key, value)))
        elif value is None:
            raise ValueError(f"where[{key!r}] is None; omit the key instead")
        else:
            must.append(Cond(field, eq=_match_value(key, value)))
    return must, must_not


def _match_value(key: str, value: Any) -> Any:
    """A value a field is matched against: a string, a whole number Qdrant can hold, or a boolean."""
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int) and -2**63 <= value < 2**63:
        return value
    raise ValueError(f"where[{key!r}] matches strings, booleans and whole numbers of 64 bits; got {value!r} "
                     f"(a range such as {{'$gte': ...}} compares other numbers)")


def _match_values(key: str, values: Any) -> tuple[Any, ...]:
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise ValueError(f"where[{key!r}] '$in' and '$nin' take a list, got {values!r}")
    if any(isinstance(v, bool) for v in values):  # Qdrant matches a list of strings or of numbers only
        raise ValueError(f"where[{key!r}] '$in' and '$nin' take strings or whole numbers; for a boolean match "
                         f"it alone: {{{key!r}: True}} or {{{key!r}: {{'$ne': True}}}}")
    return tuple(_match_value(key, v) for v in values)


def _time_conditions(key: str, field: str, value: Any, must: list[Cond], must_not: list[Cond]) -> None:
    """``where`` on ``occurred_at``/``created_at``: ranges, ``$exists``, and equality (``$eq``/``$ne`` or a
    plain value) as the one-point range; a set of times (``$in``, a list) is refused with what to use."""
    if value is None:
        raise ValueError(f"where[{key!r}] is None; omit the key instead")
    ops = value if isinstance(value, Mapping) else {"$eq": value}
    if any(v is None for v in ops.values()):
        raise ValueError(f"where[{key!r}] compares with None; omit the key, or use $exists")
    if isinstance(value, (list, tuple, set)) or {"$in", "$nin"} & set(ops):
        raise ValueError(f"where[{key!r}] cannot list times; use a range ($gte/$lt) or one value")
    unknown = set(ops) - set(RANGE_OPS) - {"$eq", "$ne", "$exists"}
    if unknown:
        raise ValueError(f"unsupported operators for {key!r}: {sorted(unknown)}")
    if "$exists" in ops:
        if not isinstance(ops["$exists"], bool):
            raise ValueError(f"where[{key!r}]['$exists'] must be true or false, got {ops['$exists']!r}")
        (must_not if ops["$exists"] else must).append(Cond(field, empty=True))
    for op, into in (("$eq", must), ("$ne", must_not)):
        if op in ops:
            ts = _as_number(ops[op])
            into.append(Cond(field, gte=ts, lte=ts))
    bounds = {RANGE_OPS[op]: _as_number(v) for op, v in ops.items() if op in RANGE_OPS}
    if bounds:
        must.append(Cond(field, **bounds))


def _as_number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("range bounds must be numbers or datetimes")
    if isinstance(value, (int, float)):
        return float(value)
    ts = to_ts(value)
    assert ts is not None
    return ts


def build_filter(
    scope: Scope | None,
    *,
    notes: bool = True,  # False: not the notes of sessions forgotten whole (derived.hollow) unless where names them
    kind: str | Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
    since: Any = None,
    until: Any = None,
    valid_ts: float | None = None,
) -> FilterSpec:
    must = scope_conditions(scope) if scope is not None else []  # None: every tenant (the engine's admin switch)
    if kind is not None:
        kinds = (kind,) if isinstance(kind, str) else kind
        if not isinstance(kinds, (list, tuple, set)) or not all(isinstance(k, str) for k in kinds):
            raise ValueError(f"kind must be a kind or a list of kinds, got {kind!r}")
        kinds = tuple(kinds)
        must.append(Cond("kind", eq=kinds[0]) if len(kinds) == 1 else Cond("kind", any_of=kinds))
    if tags is not None and not isinstance(tags, (str, list, tuple, set, frozenset)):
        raise ValueError(f"tags must be a tag or a list of tags, got {tags!r}")
    wanted = (tags,) if isinstance(tags, str) else tuple(tags) if tags is not None else ()  # one tag as a string
    if not all(isinstance(t, str) for t in wanted):
        raise ValueError(f"tags must be strings, got {tags!r}")
    if tags is not None and not wanted:  # no tag required would match everything: refused, as an empty where
        raise ValueError("tags is empty; pass None for no tag filter")
    for tag in wanted:
        must.append(Cond("tags", eq=tag))
    where_must, where_not = where_conditions(where)
    must.extend(where_must)
    if since is not None:
        must.append(Cond("created_ts", gte=to_ts(since)))
    if until is not None:
        must.append(Cond("created_ts", lt=to_ts(until)))
    if valid_ts is not None:
        must.extend(valid_at(valid_ts))
    if not notes and not any(str(k).split(".")[-1] == SESSION_FORGOTTEN for k in where or {}):
        must.append(Cond("meta." + SESSION_FORGOTTEN, empty=True))  # unless asked for by their key
    return FilterSpec(must=must, must_not=where_not)


def tally(found: Iterable[Found], *, backend: str, location: str, embedder: str) -> Stats:
    """A store's :class:`Stats` from its points: counts by kind, pending embeddings, oldest and newest."""
    by_kind: dict[str, int] = {}
    pending = total = 0
    oldest = newest = None
    for f in found:
        total += 1
        kind = f.payload.get("kind", "note")
        by_kind[kind] = by_kind.get(kind, 0) + 1
        pending += 0 if f.payload.get("embedded", True) else 1
        ts = f.payload.get("created_ts")
        if ts is not None:
            oldest = ts if oldest is None else min(oldest, ts)
            newest = ts if newest is None else max(newest, ts)
    conv = lambda ts: None if ts is None else _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc)  # noqa: E731
    return Stats(count=total, by_kind=dict(sorted(by_kind.items())), pending_embeddings=pending,
                 oldest=conv(oldest), newest=conv(newest), backend=backend, location=location, embedder=embedder)


__all__ = ["SESSION_FORGOTTEN", "build_filter", "content_hash", "from_payload", "normalize_text", "scope_conditions",
           "tally", "to_datetime", "to_payload", "valid_at", "valid_payload", "valid_within",
           "where_conditions"]
