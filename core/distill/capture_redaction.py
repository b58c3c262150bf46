"""A capture redacted once, before anything else sees it: the messages with their ids, and the metadata, source
and tags that go with them.

Whatever remember() does next reads only this copy: the LLM request, the episodes and the neighbours' recall
context clipped from them, and the pending queue a failed LLM call leaves on disk. The store redacts every
field again when it writes (:mod:`remem.core.store.validation`), which changes nothing that was redacted here;
the queue and the LLM are not the store, so this copy must already hold no secret.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..store.validation import hashed_id


@dataclass(frozen=True)
class RedactedCapture:
    messages: list[Any]
    metadata: dict[str, Any]
    source: str | None
    tags: tuple[str, ...]
    counts: dict[str, int]


def redact_capture(redactor: Any, messages: list[Any], metadata: Mapping[str, Any] | None, source: str | None,
                   tags: Iterable[str] | None) -> RedactedCapture:
    """``messages`` (plain chat dicts) and their extras through ``redactor``; a message's ``"id"`` too (the
    redactor leaves ids alone in messages, but a key pasted as an id is no id, and the store redacts it as a
    source anyway)."""
    redacted, counts = redactor.redact_messages(messages)
    counts = dict(counts)

    def text(value: str) -> str:
        res = redactor.redact(value)
        for k, n in res.counts.items():
            counts[k] = counts.get(k, 0) + n
        return res.text

    def message_id(value: str) -> str:
        """An id a rule changed (a key or an address pasted as one) or with a line break is its hash: two
        messages never share "<[REDACTED:email]>", and no id starts a line of its own where a tool lists it."""
        return value if text(value) == value and value.isprintable() else hashed_id(value)

    out = [{**m, "id": message_id(m["id"])} if isinstance(m, dict) and isinstance(m.get("id"), str) else m
           for m in redacted]
    meta, meta_counts = redactor.redact_data(dict(metadata or {}))
    for k, n in meta_counts.items():
        counts[k] = counts.get(k, 0) + n
    return RedactedCapture(messages=out, metadata=meta, source=text(source) if isinstance(source, str) else source,
                           tags=tuple(text(t) if isinstance(t, str) else t for t in tags or ()), counts=counts)


__all__ = ["RedactedCapture", "redact_capture"]
