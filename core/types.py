"""The data model every layer of remem shares: scopes, records, hits, errors."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping

KINDS: tuple[str, ...] = ("fact", "preference", "decision", "event", "lesson", "summary", "note", "document")
"""The kinds a memory may have: a closed set, so a typo (``"preferance"``) is an error instead of a new category
no filter finds. A store opened with ``Memory(kinds=[...])`` (or ``REMEM_KINDS=a,b``) accepts those too."""

INTERNAL_KINDS: tuple[str, ...] = ("episode",)
"""Kinds remem writes itself: ``episode`` is a message as it was said (``remember()`` keeps them)."""

GLOBAL_TENANT = "__global__"
"""Stored tenant value for ``Scope(tenant=None)``: the global space is a partition of its own."""

SparseVec = tuple[list[int], list[float]]
"""A sparse vector as (indices, values): BM25 and identifier vectors."""

MAX_LABEL_CHARS = 1024  # a tenant, user, agent or session label (a project path fits; a 100k-char label does not)

FOREVER = 32503680000.0  # 3000-01-01T00:00:00Z; stored as valid_until of an open validity window


class RememError(Exception):
    """Base class of every error remem raises on purpose."""


class ScopeError(RememError, ValueError):
    """A call that would touch memories outside any scope (for example an unscoped wipe)."""


class NotFoundError(RememError, KeyError):
    """No memory with that id in the scope asked for."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class EmbedderMismatchError(RememError):
    """The store was built by another embedder than the one configured now."""


class StoreLockedError(RememError):
    """Another process owns this embedded store folder."""


class DiskFullError(RememError):
    """A write, a delete or a compaction of the embedded store was refused, and nothing of it written, because its
    disk has less room than the store's mapped files could fill (a full disk would kill the process). Free some
    space and call it again; ``REMEM_MIN_FREE_MB`` sets the margin (0 turns the check off)."""


class ErasureIncompleteError(RememError):
    """A forget or an edit of a message was refused, and nothing of it written, because the messages said around
    it could not all be rewritten without its words (their hidden recall context holds them): a forget that
    said yes with the words still stored would be a lie. Calling it again retries."""


ProviderErrorKind = Literal["quota_exhausted", "invalid_credential", "rate_limited", "connection", "bad_response"]


class ProviderError(RememError):
    """An embedding or LLM provider failed; ``kind`` says how, so callers can react."""

    def __init__(self, kind: ProviderErrorKind, message: str) -> None:
        from .redact.redactor import redact  # a provider's error may echo the key or the input sent to it

        super().__init__(f"{kind}: {redact(str(message)).text}")  # (it goes to logs and the pending queue)
        self.kind: ProviderErrorKind = kind


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def to_datetime(value: _dt.datetime | _dt.date | str | float | int | None) -> _dt.datetime | None:
    """Accept the time formats users pass (aware/naive datetimes, dates, ISO text, epoch seconds); naive = UTC."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.timezone.utc)
    if isinstance(value, bool):
        raise TypeError("expected a datetime, date, ISO string or epoch seconds, got bool")
    if isinstance(value, (int, float)):
        try:
            return _dt.datetime.fromtimestamp(float(value), tz=_dt.timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(f"not a usable epoch time: {value!r} (seconds since 1970, before year 9999)") from exc
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            return to_datetime(_dt.datetime.fromisoformat(text))
        except ValueError as exc:
            raise ValueError(f"not an ISO date/time: {value!r}") from exc
    raise TypeError(f"expected a datetime, date, ISO string or epoch seconds, got {type(value).__name__}")


_EARLIEST = _dt.datetime(1, 1, 2, tzinfo=_dt.timezone.utc)
_LATEST = _dt.datetime(9999, 1, 1, tzinfo=_dt.timezone.utc)


def record_time(value: _dt.datetime | _dt.date | str | float | int | None) -> _dt.datetime | None:
    """:func:`to_datetime` for a time a record keeps: refused at the ends of the calendar (``datetime.max``),
    where a day's margin (a thread's window, a padded search) or reading it back would overflow."""
    when = to_datetime(value)
    if when is not None and not _EARLIEST <= when < _LATEST:
        raise ValueError(f"a memory's time must fall between the years 1 and 9998, got {when.isoformat()}")
    return when


def to_ts(value: _dt.datetime | _dt.date | str | float | int | None) -> float | None:
    dt = to_datetime(value)
    return None if dt is None else dt.timestamp()


def _check_label(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"Scope.{name} must be a string or None, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"Scope.{name} must not be empty (use None for 'not set')")
    # kept exactly as given, never trimmed: "alice\u00a0" trimmed was alice's scope (and a project folder
    # named "app " is another project than "app")
    if value == GLOBAL_TENANT:
        raise ValueError(f"Scope.{name} {GLOBAL_TENANT!r} is reserved")
    if len(value) > MAX_LABEL_CHARS:
        raise ValueError(f"Scope.{name} is {len(value)} characters; the limit is {MAX_LABEL_CHARS}")
    return value


@dataclass(frozen=True)
class Scope:
    """Who a memory belongs to. ``tenant`` is a hard partition; the others narrow within it when set."""

    tenant: str | None = None
    user: str | None = None
    agent: str | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        for name in ("tenant", "user", "agent", "session"):
            object.__setattr__(self, name, _check_label(name, getattr(self, name)))

    @property
    def stored_tenant(self) -> str:
        return self.tenant if self.tenant is not None else GLOBAL_TENANT

    def narrowed(self, **changes: str | None) -> "Scope":
        return replace(self, **changes)

    def as_dict(self) -> dict[str, str | None]:
        return {"tenant": self.tenant, "user": self.user, "agent": self.agent, "session": self.session}

    @classmethod
    def coerce(cls, value: "Scope | Mapping[str, Any] | None") -> "Scope":
        if value is None:
            return cls()
        if isinstance(value, Scope):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"tenant", "user", "agent", "session"}
            if unknown:
                raise ValueError(f"unknown scope fields: {sorted(unknown)}")
            return cls(**value)
        raise TypeError(f"scope must be a Scope or a mapping, got {type(value).__name__}")


def _whole(value: Any) -> Any:
    """A stored or exported importance as an int; a non-integral one (or a bool) is kept as it is, so that the
    import's validation refuses it rather than quietly cutting 7.5 to 7 (or reading true as 1)."""
    return value if isinstance(value, bool) or isinstance(value, float) and not value.is_integer() else int(value)


@dataclass(frozen=True)
class MemoryRecord:
    """One stored memory, as callers see it (never with vectors)."""

    id: str
    text: str
    kind: str
    scope: Scope
    tags: tuple[str, ...] = ()
    importance: int = 5
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None
    created_at: _dt.datetime = field(default_factory=utcnow)
    updated_at: _dt.datetime = field(default_factory=utcnow)
    valid_from: _dt.datetime | None = None
    valid_until: _dt.datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    access_count: int = 0
    last_accessed_at: _dt.datetime | None = None
    merged_count: int = 0
    content_hash: str = ""
    embedded: bool = True
    context: str | None = None  # text around the memory (e.g. the conversation), indexed for recall, not shown
    sources: tuple[str, ...] = ()  # provenance: ids of the messages (episodes) this memory came from
    occurred_at: _dt.datetime | None = None  # when the thing happened (event time), apart from when it was stored

    @property
    def event_time(self) -> _dt.datetime:
        """When the thing happened (or was said) if known, else when it became true or was recorded: the date
        recall shows."""
        return self.occurred_at or self.valid_from or self.created_at

    @property
    def is_current(self) -> bool:
        now = utcnow()
        start_ok = self.valid_from is None or self.valid_from <= now
        return start_ok and (self.valid_until is None or self.valid_until > now)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (ISO times) used by export, the CLI and the service."""
        def iso(d: _dt.datetime | None) -> str | None:
            return None if d is None else d.isoformat()

        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "scope": self.scope.as_dict(),
            "tags": list(self.tags),
            "importance": self.importance,
            "metadata": dict(self.metadata),
            "source": self.source,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "valid_from": iso(self.valid_from),
            "valid_until": iso(self.valid_until),
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "access_count": self.access_count,
            "last_accessed_at": iso(self.last_accessed_at),
            "merged_count": self.merged_count,
            "content_hash": self.content_hash,
            "embedded": self.embedded,
            "context": self.context,
            "sources": list(self.sources),
            "occurred_at": iso(self.occurred_at),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "MemoryRecord":
        return cls(
            id=str(data["id"]),
            text=str(data["text"]),
            kind=str(data.get("kind") or "note"),
            scope=Scope.coerce(data.get("scope")),
            tags=tuple(data.get("tags") or ()),
            importance=_whole(data.get("importance", 5)),
            metadata=dict(data.get("metadata") or {}),
            source=data.get("source"),
            created_at=to_datetime(data.get("created_at")) or utcnow(),
            updated_at=to_datetime(data.get("updated_at")) or utcnow(),
            valid_from=to_datetime(data.get("valid_from")),
            valid_until=to_datetime(data.get("valid_until")),
            supersedes=data.get("supersedes"),
            superseded_by=data.get("superseded_by"),
            access_count=int(data.get("access_count", 0)),
            last_accessed_at=to_datetime(data.get("last_accessed_at")),
            merged_count=int(data.get("merged_count", 0)),
            content_hash=str(data.get("content_hash", "")),
            embedded=bool(data.get("embedded", True)),
            context=data.get("context") or None,
            sources=tuple(str(s) for s in data.get("sources") or ()),
            occurred_at=to_datetime(data.get("occurred_at")),
        )


@dataclass(frozen=True)
class SearchHit:
    """A recalled memory with its final score (relevance after decay/importance weighting).

    ``passage``: when neighbouring messages of one conversation were recalled together, all of them in the
    order they were said (``record``, the best-ranked, among them); empty for a hit that stands alone. See
    :mod:`remem.core.recall.passages`."""

    record: MemoryRecord
    score: float
    relevance: float = 0.0
    passage: tuple[MemoryRecord, ...] = ()

    @property
    def records(self) -> tuple[MemoryRecord, ...]:
        """What this hit shows: its passage's messages in order, or its one record."""
        return self.passage or (self.record,)

    @property
    def sources(self) -> tuple[str, ...]:
        """The message ids this hit stands for (provenance), in order, each once."""
        return tuple(dict.fromkeys(s for rec in self.records for s in rec.sources))

    @property
    def text(self) -> str:
        """What this hit says: its record's text, or its passage's messages one per line."""
        return "\n".join(rec.text for rec in self.records)

    def as_dict(self) -> dict[str, Any]:
        out = {"score": self.score, "relevance": self.relevance, "record": self.record.as_dict(),
               "sources": list(self.sources)}
        if self.passage:
            out["passage"] = [rec.as_dict() for rec in self.passage]
        return out


@dataclass(frozen=True)
class ForgetResult:
    """What a bulk forget removed (or would remove, on a dry run)."""

    count: int
    ids: tuple[str, ...]
    dry_run: bool


@dataclass
class Stats:
    count: int
    by_kind: dict[str, int]
    pending_embeddings: int
    oldest: _dt.datetime | None
    newest: _dt.datetime | None
    backend: str
    location: str
    embedder: str
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "by_kind": self.by_kind,
            "pending_embeddings": self.pending_embeddings,
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "newest": self.newest.isoformat() if self.newest else None,
            "backend": self.backend,
            "location": self.location,
            "embedder": self.embedder,
            **self.extra,
        }
