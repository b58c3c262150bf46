"""``remem redact --store``: re-scan stored memories with today's rules and rewrite what they now catch.

A rule added after a secret was stored would otherwise never reach it. Rewrites go through ``update`` (so the
vectors are rebuilt from the redacted text); a dry run only counts.
"""

from __future__ import annotations

from typing import Any

from .types import Scope


def redact_store(memory: Any, redactor: Any, *, scope: Scope | None = None, dry_run: bool = True) -> dict[str, Any]:
    """Returns ``{"scanned", "changed", "kinds": {kind: n}, "ids": [...], "dry_run"}``; values are never returned."""
    scanned = changed = 0
    kinds: dict[str, int] = {}
    ids: list[str] = []
    for rec in list(memory.iter_records(scope)):
        scanned += 1
        text_res = redactor.redact(rec.text)
        meta, meta_counts = _redact_value(dict(rec.metadata), redactor)
        counts = dict(text_res.counts)
        for k, v in meta_counts.items():
            counts[k] = counts.get(k, 0) + v
        if not counts:
            continue
        changed += 1
        ids.append(rec.id)
        for k, v in counts.items():
            kinds[k] = kinds.get(k, 0) + v
        if not dry_run:
            memory.update(rec.id, text=text_res.text if text_res.changed else None, metadata=meta)
    return {"scanned": scanned, "changed": changed, "kinds": kinds, "ids": ids, "dry_run": dry_run}


def _redact_value(value: Any, redactor: Any) -> tuple[Any, dict[str, int]]:
    counts: dict[str, int] = {}
    if isinstance(value, str):
        res = redactor.redact(value)
        return res.text, dict(res.counts)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[k], c = _redact_value(v, redactor)
            for kk, n in c.items():
                counts[kk] = counts.get(kk, 0) + n
        return out, counts
    if isinstance(value, list):
        items = []
        for v in value:
            nv, c = _redact_value(v, redactor)
            items.append(nv)
            for kk, n in c.items():
                counts[kk] = counts.get(kk, 0) + n
        return items, counts
    return value, counts
