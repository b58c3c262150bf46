"""Entities and relations a memory comes with: what the LLM distiller said it names and states.

The LLM distiller's vetted claims travel in the memory's metadata (``llm_entities``, ``llm_relations``; see
:mod:`remem.core.distill.llm_claims`). When the memory is written, :func:`merged` adds them to what the keyless
extractor found in its text, and the one resolver links both: a name the extractor typed by no cue (a bare
capitalised word, a tentative sentence-initial one) takes the LLM's type; a name the extractor typed by a cue
keeps its type; a name it missed is linked with the LLM's. :func:`relation_claims` turns the relations into
:class:`~remem.core.entities.types.RelationClaim` for the relation store (:mod:`.handover`).

Checked again here, against the text being written (a merge or an edit may have changed it since): a name must
occur in the memory's text, and nothing with a redaction placeholder is linked. The LLM cannot invent an
entity, and metadata a caller writes by hand can name only what the text says.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from . import names
from .extract import KINDS, MAX_MENTIONS, Mention
from .types import RelationClaim

if TYPE_CHECKING:
    from ..types import MemoryRecord

ENTITIES_FIELD = "llm_entities"
RELATIONS_FIELD = "llm_relations"
_RAW_KEYS = frozenset({"issue", "file", "repo", "host"})  # identifiers: keyed as written, case aside (extract)
_MAX_NAME = 80


def _said(name: str, text_key: str) -> bool:
    k = names.key(name)
    return bool(k) and f" {k} " in f" {text_key} "


def _name(value: Any, text_key: str) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_NAME or "[" in value \
            or not value.isprintable():
        return None
    return value.strip() if _said(value, text_key) else None


def _key(name: str, kind: str) -> str:
    return name.casefold() if kind in _RAW_KEYS else names.key(name)


def given_entities(rec: "MemoryRecord") -> list[tuple[str, str]]:
    """The ``(name, kind)`` pairs ``rec``'s metadata gives that its text says (others are ignored)."""
    items = (rec.metadata or {}).get(ENTITIES_FIELD)
    if not isinstance(items, list):
        return []
    own = names.key(rec.text)
    out: list[tuple[str, str]] = []
    for item in items[:MAX_MENTIONS]:
        if not isinstance(item, Mapping) or item.get("kind") not in KINDS:
            continue
        name = _name(item.get("name"), own)
        if name is not None:
            out.append((name, str(item["kind"])))
    return out


def merged(mentions: Sequence[Mention], rec: "MemoryRecord") -> list[Mention]:
    """``mentions`` (the keyless extractor's, of ``rec.text``) with the entities ``rec``'s metadata gives: a
    guessed or tentative mention of the same name takes the given type; a new name is added, typed."""
    given = given_entities(rec)
    if not given:
        return list(mentions)
    out = list(mentions)
    by_key = {names.key(m.name): i for i, m in enumerate(out)}
    for name, kind in given:
        i = by_key.get(names.key(name))
        if i is not None:
            m = out[i]
            if (m.guessed or m.tentative) and m.kind not in _RAW_KEYS:
                out[i] = Mention(name=m.name, kind=kind, key=_key(m.name, kind), version=m.version,
                                 aliases=m.aliases)
            continue
        if len(out) >= MAX_MENTIONS:
            break
        out.append(Mention(name=name, kind=kind, key=_key(name, kind)))
        by_key[names.key(name)] = len(out) - 1
    return out


def _since(value: Any) -> _dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        got = _dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return got if got.tzinfo else got.replace(tzinfo=_dt.timezone.utc)


def relation_claims(rec: "MemoryRecord") -> list[RelationClaim]:
    """The relations ``rec``'s metadata gives between names its text says, as claims for the relation store."""
    items = (rec.metadata or {}).get(RELATIONS_FIELD)
    if not isinstance(items, list):
        return []
    own = names.key(rec.text)
    kinds = {names.key(n): k for n, k in given_entities(rec)}
    out: list[RelationClaim] = []
    for item in items[:MAX_MENTIONS]:
        if not isinstance(item, Mapping):
            continue
        subject, obj = _name(item.get("subject"), own), _name(item.get("object"), own)
        predicate = item.get("predicate")
        if subject is None or obj is None or not isinstance(predicate, str) or not predicate.strip() \
                or len(predicate) > _MAX_NAME or not predicate.isprintable():
            continue
        out.append(RelationClaim(subject, predicate.strip(), obj, kinds.get(names.key(subject)),
                                 kinds.get(names.key(obj)), _since(item.get("since"))))
    return out


__all__ = ["ENTITIES_FIELD", "RELATIONS_FIELD", "given_entities", "merged", "relation_claims"]
