"""The fields ``add()`` takes, and what a superseding memory is made of (given fields, else the old one's)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..types import MemoryRecord, to_datetime, utcnow

ADD_FIELDS = {"text", "scope", "kind", "tags", "importance", "metadata", "source", "valid_from", "valid_until",
              "created_at", "context", "dedupe", "sources", "occurred_at"}


def check_add_items(items: Sequence[Mapping[str, Any]]) -> None:
    """Every item of an ``add_many`` checked before anything is embedded or stored: a bad one stores nothing."""
    for i, it in enumerate(items):
        if not isinstance(it.get("text"), str):
            raise TypeError(f"text must be a string, got {type(it.get('text')).__name__} (item {i})")
        if set(it) - ADD_FIELDS:
            raise TypeError(f"unknown add() fields in an item: {sorted(set(it) - ADD_FIELDS)}")


def superseding_spec(new: Any, old: MemoryRecord, valid_from: Any, fields_: Mapping[str, Any]) -> dict[str, Any]:
    """The superseding memory's fields: what was given, else the old memory's kind, tags, importance, metadata."""
    if isinstance(new, MemoryRecord):
        base: dict[str, Any] = {"text": new.text, "kind": new.kind, "tags": list(new.tags),
                                "importance": new.importance, "metadata": dict(new.metadata), "source": new.source}
    elif isinstance(new, Mapping):
        base = dict(new)
    elif isinstance(new, str):
        base = {"text": new}
    else:
        raise TypeError("new must be the new text, a MemoryRecord or a mapping of add() fields")
    unknown = set(base) - ADD_FIELDS
    if unknown:
        raise TypeError(f"unknown fields for the superseding memory: {sorted(unknown)}")
    base.update(fields_)
    if "text" not in base:
        raise ValueError("the superseding memory needs a text")
    base.setdefault("kind", old.kind)
    base.setdefault("tags", list(old.tags))
    base.setdefault("importance", old.importance)
    base.setdefault("metadata", dict(old.metadata))
    base["valid_from"] = to_datetime(valid_from or base.get("valid_from")) or utcnow()
    return base


__all__ = ["ADD_FIELDS", "superseding_spec"]
