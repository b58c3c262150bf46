"""``remem redact --store``: re-scan a store's memories with today's redaction rules and rewrite what they catch.

It lives with the store, not with redaction: the redactor it is given only says what to mask, and the store's
own rules decide how a record is rewritten (where a message was said, its neighbours' context, erasure).

A rule added after a secret was stored would otherwise never reach it. Rewrites go through ``update`` (so the
vectors are rebuilt from the redacted text); where a message was said (its id and links, which ``update`` keeps
from callers) is redacted the same way and stored with :func:`~remem.core.store.erasure.redact_place`. A record
that cannot be rewritten is counted in ``failed`` and the scan goes on; a dry run only counts.
"""

from __future__ import annotations

from typing import Any

from .erasure import neighbours_left_alone, place_keys, redact_place
from ..types import ErasureIncompleteError, RememError, Scope


def _add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for k, n in counts.items():
        into[k] = into.get(k, 0) + n


def redact_store(memory: Any, redactor: Any, *, scope: Scope | None = None, dry_run: bool = True) -> dict[str, Any]:
    """Returns ``{"scanned", "changed", "failed", "kinds": {kind: n}, "ids": [...], "dry_run"}``; values are
    never returned."""
    scanned = changed = failed = 0
    placed: list[tuple[Any, dict[str, Any], str | None]] = []
    kinds: dict[str, int] = {}
    ids: list[str] = []
    for rec in list(memory.iter_records(scope)):
        scanned += 1
        counts: dict[str, int] = {}
        text = redactor.redact(rec.text)
        _add_counts(counts, text.counts)
        meta, meta_counts = redactor.redact_data(dict(rec.metadata))
        _add_counts(counts, meta_counts)
        tags, tag_counts = redactor.redact_data(list(rec.tags))
        _add_counts(counts, tag_counts)
        sources, source_counts = redactor.redact_data(list(rec.sources))
        _add_counts(counts, source_counts)
        source = redactor.redact(rec.source) if rec.source else None
        if source is not None:
            _add_counts(counts, source.counts)
        context = redactor.redact(rec.context) if rec.context else None
        if context is not None:
            _add_counts(counts, context.counts)
        if not counts:
            continue
        changed += 1
        ids.append(rec.id)
        _add_counts(kinds, counts)
        if dry_run:
            continue
        moved = {k for k in place_keys(rec) if meta.get(k) != rec.metadata.get(k)}
        edit = dict(text=text.text if text.changed else None,
                    metadata={k: v for k, v in meta.items() if k not in moved}, replace_metadata=True,
                    tags=tags if tag_counts else None, sources=sources if source_counts else None,
                    context=context.text if context is not None and context.changed else None)
        try:
            try:
                memory.update(rec.id, scope=rec.scope, **edit)
            except ErasureIncompleteError:  # a neighbour cannot be rewritten: the record's own secret goes
                failed += 1                 # anyway (the scan redacts each neighbour's context itself)
                with neighbours_left_alone():
                    memory.update(rec.id, scope=rec.scope, **edit)
            if moved or (source is not None and source.changed):
                placed.append((rec, meta, source.text if source is not None and source.changed else None))
        except (RememError, ValueError, TypeError, OSError):
            failed += 1  # counted, never shown: the next records are still scanned
    # where messages were said is redacted last: until then an edited text still finds its neighbours by the
    # thread or session they were stored under, and their context is rewritten without the old words
    for rec, meta, source_text in placed:
        try:
            redact_place(memory, rec, meta, source=source_text)
        except (RememError, ValueError, TypeError, OSError):
            failed += 1
    return {"scanned": scanned, "changed": changed, "failed": failed, "kinds": kinds, "ids": ids,
            "dry_run": dry_run}
