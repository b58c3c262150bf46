"""What the entity operations return (plain dataclasses: they cross the service's socket as they are)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entity:
    """One thing a scope's memories name: ``name`` (canonical), ``kind`` (person, org, place, product, service,
    repo, file, issue, host), the other names it goes by, when it was first and last mentioned, and in how many
    memories (``mentions``)."""

    id: str
    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    first_seen: _dt.datetime | None = None
    last_seen: _dt.datetime | None = None
    mentions: int = 0
    versions: tuple[str, ...] = ()
    merged: tuple[str, ...] = ()  # ids of entities merged into this one (each can be split off again)
    merged_names: tuple[str, ...] = ()  # their names, in the order of ``merged`` (filled by ``about()``)


@dataclass(frozen=True)
class ProfileLine:
    """One thing known about an entity: the memory's text, when it became (and stopped being) true, and where
    it came from (the memory's id and the message ids it was distilled from)."""

    text: str
    memory_id: str
    since: _dt.datetime | None = None
    until: _dt.datetime | None = None
    sources: tuple[str, ...] = ()
    superseded_by: str | None = None


@dataclass(frozen=True)
class RelatedEntity:
    name: str
    kind: str
    shared: int  # memories naming both
    via: tuple[str, ...] = ()  # the relations that link them ("maintains", "moved_to"), beside co-mentions


@dataclass(frozen=True)
class EntityProfile:
    """What a scope knows about one entity (see ``Memory.about``). ``entity`` is None when the scope has never
    heard of the name; ``text`` is the profile rendered for a prompt, within the token budget asked."""

    query: str
    entity: Entity | None
    current: tuple[ProfileLine, ...] = ()
    changed: tuple[ProfileLine, ...] = ()
    related: tuple[RelatedEntity, ...] = ()
    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    relations: tuple["Relation", ...] = ()  # true at as_of, then those that ended before it (newest first)

    @property
    def found(self) -> bool:
        return self.entity is not None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class RelationClaim:
    """A relation a text states, before resolution: ``subject`` ``predicate`` ``object`` as written (names, e.g.
    "Dana" "maintains" "the ingest worker"), their kinds when the extractor knows them, and when it became true
    (``since``; None: when the text was said). Extractors (keyless patterns, the LLM distiller) produce these;
    the entity index resolves the names and stores a :class:`Relation`."""

    subject: str
    predicate: str
    object: str
    subject_kind: str | None = None
    object_kind: str | None = None
    since: _dt.datetime | None = None


@dataclass(frozen=True)
class Relation:
    """A stored relation between two entities of one scope, true from ``since`` until ``until`` (None: true now).
    A relation that changes is superseded (``superseded_by`` names its successor), never deleted; ``sources``
    are the ids of the memories that said it."""

    id: str
    subject: str
    predicate: str
    object: str
    subject_id: str = ""
    object_id: str = ""
    since: _dt.datetime | None = None
    until: _dt.datetime | None = None
    superseded_by: str | None = None
    sources: tuple[str, ...] = ()


__all__ = ["Entity", "EntityProfile", "ProfileLine", "RelatedEntity", "Relation", "RelationClaim"]
