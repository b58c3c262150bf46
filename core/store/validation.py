"""What a write must look like before it reaches the store: types, sizes, and redaction of every field.

Limits keep one caller from hurting the others sharing a service (a 1 MB tag, 10k tags, a 5 MB metadata
blob); each failure is a clear ``ValueError``/``TypeError`` that names the field and the limit.
The redactor is looked up per write (a cached, mtime-checked object), so edits to ``redact.json`` apply to a
long-lived service's ``add()`` as they do to ``remember()``.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import enum
import hashlib
import json
import math
import numbers
import pathlib
import re
import uuid
from typing import Any, Iterable, Mapping

from ..recall.fencing import unsafe_char
from ..redact.redactor import Redactor, configured
from ..types import INTERNAL_KINDS, KINDS

MAX_TEXT_CHARS = 32_000
MAX_CONTEXT_CHARS = 4 * MAX_TEXT_CHARS
MAX_TAGS = 64
MAX_TAG_CHARS = 200
MAX_METADATA_BYTES = 64 * 1024
MAX_SOURCE_CHARS = 1_000
MAX_SOURCES = 64
MAX_SOURCE_ID_CHARS = 200
_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def unicode_text(name: str, value: str) -> str:
    """``value`` if it can be written as UTF-8; a clear ValueError if not (a lone surrogate: bytes read with
    ``errors="surrogateescape"``, a Latin-1 file read as UTF-8), instead of a codec error from deep inside."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} is not valid Unicode (a lone surrogate at character {exc.start}): decode the "
                         "input as UTF-8, or with errors='replace'") from None
    return value


_AS_TEXT = (_dt.datetime, _dt.date, _dt.time, uuid.UUID, decimal.Decimal, pathlib.PurePath, enum.Enum)


def _json_value(value: Any) -> Any:
    """``json.dumps`` default for metadata: values whose text is what they are (a datetime, a UUID, a Decimal,
    a path, an enum member) as their ``str()``, as before; bytes, sets and other objects are refused rather
    than stored as a repr ("<object at 0x...>") nobody can match on."""
    if isinstance(value, _AS_TEXT):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value (use strings, numbers, booleans, lists, mappings, "
                    f"datetimes, UUIDs or paths)")


def _check_keys(node: Any, path: str) -> None:
    """Mapping keys become JSON's strings: a key of another type is refused, and so are two that become the same
    string ({1: "a", "1": "b"} would keep one of them)."""
    if isinstance(node, Mapping):
        seen: set[str] = set()
        for key, value in node.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ValueError(f"{path} keys must be strings, got {key!r}")
            as_json = key if isinstance(key, str) else json.dumps(key)
            if as_json in seen:
                raise ValueError(f"{path} has two keys that are both {as_json!r} as JSON")
            seen.add(as_json)
            _check_keys(value, f"{path}[{key!r}]")
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            _check_keys(value, f"{path}[{i}]")


def check_query(query: Any) -> str:
    """A search question: a string of at most ``MAX_TEXT_CHARS`` (a question, not a document to match)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    if len(query) > MAX_TEXT_CHARS:
        raise ValueError(f"query is {len(query)} characters; the limit is {MAX_TEXT_CHARS} (search with the "
                         "question, not the whole document)")
    return unicode_text("query", query)


class Validator:
    """Checks and redacts the fields of a write; ``redact=False`` turns redaction off (never the checks)."""

    def __init__(self, *, redact: bool = True, pii: bool = False, kinds: Iterable[str] = ()) -> None:
        self.redact_enabled = redact
        self.pii = pii
        self.extra_kinds = tuple(k for k in kinds if k not in KINDS)
        self.known_kinds = frozenset((*KINDS, *INTERNAL_KINDS, *self.extra_kinds))

    @property
    def redactor(self) -> Redactor | None:
        return configured(self.pii) if self.redact_enabled else None

    def redact(self, text: str | None) -> str | None:
        red = self.redactor
        return red.redact(text).text if red is not None and text else text

    def text(self, text: Any) -> str:
        """Validated and redacted: no secret (or PII, when enabled) reaches the store or an embedding API."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        stripped = text.strip()
        if not stripped:
            raise ValueError("text is empty")
        if len(stripped) > MAX_TEXT_CHARS:
            raise ValueError(f"text is {len(stripped)} characters; the limit is {MAX_TEXT_CHARS} "
                             f"(distil long content with remember(), or split it)")
        return self.redact(unicode_text("text", stripped)) or stripped

    def context(self, context: Any) -> str | None:
        if context is None:
            return None
        if not isinstance(context, str):
            raise TypeError(f"context must be a string, got {type(context).__name__}")
        context = " ".join(context.split())[:MAX_CONTEXT_CHARS]
        return self.redact(unicode_text("context", context)) if context else None

    def scope(self, scope: Any) -> Any:
        """A write's scope, whose labels are stored as given (they are how records are found): one the redactor
        would rewrite (a key, or PII when enabled) is refused rather than written in clear."""
        red = self.redactor
        if red is None:
            return scope
        for key in ("tenant", "user", "agent", "session"):
            label = getattr(scope, key, None)
            if isinstance(label, str) and red.redact(label).text != label:
                raise ValueError(f"the scope's {key} label looks like a secret (or PII): scope labels are stored "
                                 f"as given, so pass an id or a hash of it instead")
        return scope

    def kind(self, kind: Any) -> str:
        """A kind of the store's closed set (:data:`~remem.core.types.KINDS` plus the store's extra kinds)."""
        if not isinstance(kind, str) or kind not in self.known_kinds:
            known = ", ".join((*KINDS, *self.extra_kinds))
            raise ValueError(f"unknown kind {kind!r}: the kinds are {known} (open the store with "
                             f"Memory(kinds=[...]) or REMEM_KINDS=a,b to add your own)")
        return kind

    def kind_filter(self, kind: Any) -> Any:
        """A read's ``kind=`` (one kind or several, None for any), checked like a write's: a misspelt kind
        would otherwise find nothing, silently."""
        listed = [kind] if isinstance(kind, str) else kind if isinstance(kind, (list, tuple, set, frozenset)) else []
        for one in listed:
            if isinstance(one, str):  # anything else is the filter's own type error
                self.kind(one)
        return kind

    @staticmethod
    def importance(importance: Any) -> int:
        """A whole number from 1 to 10. A float is taken only when it is whole (7.0, as a JSON tool call may send
        it): 7.5 is refused rather than rounded to a value nobody asked for; a bool is no number here."""
        if (isinstance(importance, bool) or not isinstance(importance, numbers.Real)
                or not 1 <= importance <= 10 or not float(importance).is_integer()):
            raise ValueError(f"importance must be a whole number from 1 to 10, got {importance!r}")
        return int(importance)

    def tags(self, tags: Iterable[str] | None) -> tuple[str, ...]:
        if tags is None:
            return ()
        if isinstance(tags, str):
            tags = [tags]
        out: list[str] = []
        for tag in tags:
            if not isinstance(tag, str) or not tag.strip():
                raise ValueError(f"tags must be non-empty strings, got {tag!r}")
            unicode_text("a tag", tag)
            if (bad := unsafe_char(tag)) is not None:  # a tag is shown on a memory's line: it may not break it
                raise ValueError(f"a tag may not hold control, line-break or invisible characters (found "
                                 f"U+{ord(bad):04X} in {tag[:40]!r})")
            if len(tag) > MAX_TAG_CHARS:
                raise ValueError(f"a tag is {len(tag)} characters; the limit is {MAX_TAG_CHARS}")
            tag = self.redact(tag.strip()) or tag.strip()
            if tag not in out:
                out.append(tag)
            if len(out) > MAX_TAGS:
                raise ValueError(f"more than {MAX_TAGS} tags")
        return tuple(out)

    def metadata(self, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        if metadata is None:
            return {}
        if not isinstance(metadata, Mapping):
            raise TypeError("metadata must be a mapping")
        _check_keys(metadata, "metadata")
        try:  # a datetime is written as ISO 8601; any other value JSON has no type for is an error, not its repr
            encoded = json.dumps(dict(metadata), default=_json_value, allow_nan=False, ensure_ascii=False)
        except ValueError as exc:
            raise ValueError(f"metadata must be JSON: {_nan_hint(exc)}") from exc
        except TypeError as exc:
            raise ValueError(f"metadata must be JSON-serialisable: {exc}") from exc
        unicode_text("metadata", encoded)  # json.dumps lets a lone surrogate through: UTF-8 cannot
        if len(encoded) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata is {len(encoded)} bytes as JSON; the limit is {MAX_METADATA_BYTES}")
        clean = json.loads(encoded)
        red = self.redactor
        return red.redact_data(clean)[0] if red is not None else clean

    def source(self, source: Any) -> str | None:
        if source is None:
            return None
        if not isinstance(source, str):
            raise TypeError(f"source must be a string, got {type(source).__name__}")
        unicode_text("source", source)
        if len(source) > MAX_SOURCE_CHARS:
            raise ValueError(f"source is {len(source)} characters; the limit is {MAX_SOURCE_CHARS}")
        return self.redact(source)

    def sources(self, sources: Iterable[str] | None) -> tuple[str, ...]:
        """Provenance ids: short strings, at most 64 (a memory comes from a few messages, not a whole log);
        redacted like every field (a key pasted as an id is no id), so they agree with the redacted
        ``message_id`` and links a thread keeps of them."""
        if sources is None:
            return ()
        if isinstance(sources, str):
            sources = [sources]
        raw = [unicode_text("a source id", str(s)) for s in sources]
        if len(raw) > MAX_SOURCES or any(not s or len(s) > MAX_SOURCE_ID_CHARS for s in raw):
            raise ValueError(f"sources must be at most {MAX_SOURCES} non-empty ids of at most "
                             f"{MAX_SOURCE_ID_CHARS} characters")
        return tuple(dict.fromkeys(self.source_id(s) for s in raw))

    def source_id(self, sid: str) -> str:
        """A message id as stored: one a rule changes (an address or key pasted as an id) is a hash of it, so two
        never share "<[REDACTED:email]>" and the caller's own id still finds it (as the capture stores it)."""
        red = str(self.redact(sid))
        return _fitted_id(red) if red == sid and sid.isprintable() else hashed_id(sid)

    def where_ids(self, where: Any) -> Any:
        """``where`` with the message ids it names (``sources``) as they are stored (:meth:`source_id`)."""
        if not isinstance(where, Mapping) or "sources" not in where:
            return where
        value = where["sources"]

        def ids(v: Any) -> Any:
            if isinstance(v, str):
                return self.source_id(v)
            return [self.source_id(x) if isinstance(x, str) else x for x in v] if isinstance(v, (list, tuple)) else v

        value = {k: ids(v) for k, v in value.items()} if isinstance(value, Mapping) else ids(value)
        return {**where, "sources": value}


def hashed_id(sid: str) -> str:
    """The id a message id that cannot be stored as it is (redacted, or holding a line break) is stored as."""
    return "msg-" + hashlib.sha256(sid.encode()).hexdigest()[:24]


def _fitted_id(sid: str) -> str:
    """An id as stored and shown: one that redaction made longer than the limit, or that holds a line break (it
    would start a line of its own where a tool lists it), keeps its head and a hash of the whole."""
    if len(sid) <= MAX_SOURCE_ID_CHARS and sid.isprintable():
        return sid
    head = "".join(c if c.isprintable() else " " for c in sid[:MAX_SOURCE_ID_CHARS - 26])
    return f"{head}#{hashlib.sha256(sid.encode()).hexdigest()[:24]}"


def check_limit(name: str, value: Any, *, low: int = 1, high: int = 10_000) -> int:
    """An integer argument within bounds (limit, offset, token_budget): clear errors instead of Qdrant's."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def _nan_hint(exc: ValueError) -> str:
    return "NaN and infinity are not allowed" if "Out of range float" in str(exc) else str(exc)


def finite(name: str, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite time")
    return value


__all__ = ["MAX_TEXT_CHARS", "Validator", "check_limit", "finite", "hashed_id"]
