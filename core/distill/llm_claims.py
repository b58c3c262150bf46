"""The entities and relations an LLM distiller returns with each memory: parsed defensively, then vetted.

The extraction call (one per capture, no extra request) asks, for every memory, which entities it names and
which relations it states. A model's answer is a claim, never trusted as it is:

- **parsed defensively** (:func:`parse_entities`, :func:`parse_relations`): an item of the wrong shape, an empty
  or over-long name, a type that is none of remem's entity kinds and near none of them, is dropped; the memory
  it came with is kept all the same;
- **vetted** (:func:`vet`) before anything is stored: every name, predicate and date is redacted like any text,
  and a name the redactor changes is dropped (a secret never becomes an entity); a name must occur in the
  memory's text *and* in the conversation it was distilled from, so the LLM cannot invent an entity (or a
  relation between names nobody said).

What survives goes with the memory as metadata (``llm_entities``, ``llm_relations``), where the entity index
reads it when the memory is written (:mod:`remem.core.entities.given`): it is redacted, it names only what the
memory's text says, and it goes wherever the memory goes (export, import, re-linking, forgetting).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Iterable, Mapping, Sequence

from .candidates import Candidate, EntityClaim
from ..entities import names
from ..entities.extract import KINDS
from ..entities.given import ENTITIES_FIELD, RELATIONS_FIELD  # the memory's metadata the entity index reads
from ..entities.types import RelationClaim
from ..recall.fencing import one_line

MAX_NAME_CHARS = 80  # a longer "name" is a sentence, not an entity
MAX_PREDICATE_CHARS = 40
MAX_ENTITIES = 12  # per memory
MAX_RELATIONS = 6  # per memory

# a model's type word -> remem's kind (the schema asks for the kinds; a server without structured output may
# answer in its own words). A word found nowhere here drops the entity: a wrong type merges wrong things.
_KIND_WORDS: dict[str, str] = {
    **{k: k for k in KINDS},
    **dict.fromkeys(("people", "human", "individual", "user", "employee", "customer", "contact", "colleague",
                     "teammate", "developer", "engineer", "author", "maintainer"), "person"),
    **dict.fromkeys(("organization", "organisation", "company", "team", "business", "vendor", "institution",
                     "group", "agency", "department", "employer", "corporation", "startup", "shop",
                     "store", "brand"), "org"),
    **dict.fromkeys(("location", "city", "country", "region", "address", "venue", "office", "building", "town",
                     "area"), "place"),
    **dict.fromkeys(("tool", "library", "software", "technology", "framework", "database", "language", "package",
                     "app", "application", "platform", "device", "model", "sdk", "dependency"), "product"),
    **dict.fromkeys(("system", "api", "component", "pipeline", "worker", "job", "queue", "endpoint", "microservice",
                     "daemon", "cluster", "module"), "service"),
    **dict.fromkeys(("repository", "codebase", "git_repo", "monorepo"), "repo"),
    **dict.fromkeys(("path", "filename", "file_path", "document", "script", "config"), "file"),
    **dict.fromkeys(("ticket", "bug", "pr", "pull_request", "incident", "case", "issue_id", "task", "story"), "issue"),
    **dict.fromkeys(("server", "machine", "domain", "hostname", "vm", "node", "instance", "url", "ip"), "host"),
}
_NOT_ENTITIES = frozenset({"user", "the user", "assistant", "the assistant", "i", "me", "we", "you", "ai",
                           "system", "redacted"})
_PLACEHOLDER = re.compile(r"\[(?:REDACTED|EMAIL|PHONE|PERSON|IP|CARD|IBAN|SSN)[:\]]", re.I)
_DATE = re.compile(r"^\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")


def kind_of(value: Any) -> str | None:
    """remem's entity kind for a model's type word ("Organization" -> org, "library" -> product), or None."""
    if not isinstance(value, str):
        return None
    word = re.sub(r"[\s-]+", "_", value.strip().casefold())
    if word in _KIND_WORDS:
        return _KIND_WORDS[word]
    last = word.rsplit("_", 1)[-1]  # "software_library", "github_repository", "cloud_service"
    return _KIND_WORDS.get(last) or _KIND_WORDS.get(last.rstrip("s"))


def clean_name(value: Any) -> str | None:
    """A name as it may be kept: one line, trimmed, at most :data:`MAX_NAME_CHARS`; None for anything else (not
    a string, empty, only punctuation, a placeholder, the user or the assistant)."""
    if not isinstance(value, str):
        return None
    name = one_line(value).strip(" \t.,;:!?\"'`()[]{}")
    if not name or len(name) > MAX_NAME_CHARS or _PLACEHOLDER.search(name):
        return None
    k = names.key(name)
    if not k or not any(c.isalnum() for c in k) or k in _NOT_ENTITIES or name.casefold() in _NOT_ENTITIES:
        return None
    return name


def parse_entities(items: Any) -> tuple[EntityClaim, ...]:
    """The well-formed entity items of one memory (``{"name", "type"}``; ``kind`` is read too), each name once."""
    out: dict[str, EntityClaim] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        name = clean_name(item.get("name"))
        kind = kind_of(item.get("type", item.get("kind")))
        if name is None or kind is None:
            continue
        out.setdefault(names.key(name), EntityClaim(name, kind))
        if len(out) >= MAX_ENTITIES:
            break
    return tuple(out.values())


def parse_since(value: Any) -> _dt.datetime | None:
    """An ISO date (``2025-05``, ``2025-05-14``, a full timestamp) as a UTC datetime; None when there is none."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        got = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        return got if got.tzinfo else got.replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        pass
    m = _DATE.match(value)
    if not m:
        return None
    try:
        return _dt.datetime(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1), tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def parse_predicate(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    pred = " ".join(one_line(value).casefold().replace("_", " ").split()).strip(" .,;:")
    return pred if pred and len(pred) <= MAX_PREDICATE_CHARS and any(c.isalpha() for c in pred) else None


def parse_relations(items: Any, entities: Sequence[EntityClaim] = ()) -> tuple[RelationClaim, ...]:
    """The well-formed relation items of one memory (``{"subject", "predicate", "object", "since"}``), typed by
    the memory's entities where they name the same thing."""
    kinds = {names.key(e.name): e.kind for e in entities}
    out: dict[tuple[str, str, str], RelationClaim] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        subject, obj = clean_name(item.get("subject")), clean_name(item.get("object"))
        predicate = parse_predicate(item.get("predicate"))
        if subject is None or obj is None or predicate is None or names.key(subject) == names.key(obj):
            continue
        slot = (names.key(subject), predicate, names.key(obj))
        out.setdefault(slot, RelationClaim(subject, predicate, obj, kinds.get(slot[0]), kinds.get(slot[2]),
                                           parse_since(item.get("since"))))
        if len(out) >= MAX_RELATIONS:
            break
    return tuple(out.values())


def said(name: str, text_key: str) -> bool:
    """Whether ``name`` occurs, as whole words, in the text whose :func:`~remem.core.entities.names.key` is
    ``text_key`` (case, accents, punctuation and a leading article aside)."""
    k = names.key(name)
    return bool(k) and f" {k} " in f" {text_key} "


def text_key(texts: Iterable[str]) -> str:
    return " \x1f ".join(names.key(t) for t in texts if t)


def vet(candidate: Candidate, redactor: Any, conversation_key: str) -> dict[str, int]:
    """Keep only what may be stored of ``candidate``'s entities and relations, and put it in its metadata.

    ``redactor``: the capture's (every name, predicate and date is redacted like the memory's text; one the
    redactor changes is dropped: a secret never becomes an entity). ``conversation_key``: :func:`text_key` of
    the (redacted) messages it was distilled from. A name is kept only where it occurs in the memory's text and
    in that conversation: the LLM cannot invent an entity. Returns the redaction counts (kinds only)."""
    counts: dict[str, int] = {}

    def clean(value: str) -> str | None:
        red = redactor.redact(value)
        for k, n in red.counts.items():
            counts[k] = counts.get(k, 0) + n
        return value if red.text == value else None

    own = names.key(candidate.text)

    def ok(name: str) -> bool:
        return clean(name) is not None and said(name, own) and said(name, conversation_key)

    entities = tuple(e for e in candidate.entities if ok(e.name))
    relations = tuple(r for r in candidate.relations
                      if ok(r.subject) and ok(r.object) and clean(r.predicate) is not None)
    candidate.entities, candidate.relations = entities, relations
    meta = {k: v for k, v in candidate.metadata.items() if k not in (ENTITIES_FIELD, RELATIONS_FIELD)}
    if entities:
        meta[ENTITIES_FIELD] = [{"name": e.name, "kind": e.kind} for e in entities]
    if relations:
        meta[RELATIONS_FIELD] = [{"subject": r.subject, "predicate": r.predicate, "object": r.object,
                                  **({"since": r.since.date().isoformat()} if r.since else {})} for r in relations]
    candidate.metadata = meta
    return counts


__all__ = ["ENTITIES_FIELD", "MAX_ENTITIES", "MAX_NAME_CHARS", "MAX_RELATIONS", "RELATIONS_FIELD", "clean_name",
           "kind_of", "parse_entities", "parse_predicate", "parse_relations", "parse_since", "said", "text_key",
           "vet"]
