"""``remem audit``: duplicates, junk (memories the admission gate would refuse) and stale memories in a store."""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from .admission import check_admission
from ..store.records import normalize_text
from ..store.dedupe import same_meaning
from ..types import MemoryRecord


@dataclass
class AuditReport:
    """``remem audit``: duplicate groups (exact or near-identical), junk (fails the gate, with the reason) and
    stale memories (old, never recalled, faded importance). Superseded history is not audited."""

    total: int = 0
    duplicates: list[list[str]] = field(default_factory=list)
    junk: list[tuple[str, str]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def duplicate_count(self) -> int:
        """Memories that could go (each group keeps one)."""
        return sum(len(g) - 1 for g in self.duplicates)

    @property
    def counts(self) -> dict[str, int]:
        return {"total": self.total, "duplicates": self.duplicate_count, "duplicate_groups": len(self.duplicates),
                "junk": len(self.junk), "stale": len(self.stale)}

    def as_dict(self, examples: int = 5) -> dict[str, Any]:
        reasons = Counter(r for _, r in self.junk)
        return {**self.counts, "junk_reasons": dict(reasons),
                "examples": {"duplicates": self.duplicates[:examples],
                             "junk": [list(j) for j in self.junk[:examples]], "stale": self.stale[:examples]}}


def audit(engine: Any, scope: Any = None, *, stale_days: float = 90.0, stale_importance: float = 3.0,
          now: float | None = None) -> AuditReport:
    """Scan the memories of ``scope`` (None: the global space; ALL_TENANTS: the whole store) and report what a
    cleanup could remove."""
    from .episodes import EPISODE_KIND

    now = time.time() if now is None else now
    report = AuditReport()
    recs = [r for r in engine.iter_records(scope) if r.superseded_by is None and r.kind != EPISODE_KIND  # said, as said
            and (r.valid_until is None or r.valid_until.timestamp() > now)]
    report.total = len(recs)
    settings = getattr(engine, "settings", None)
    decay = getattr(settings, "decay", None)
    for r in recs:
        verdict = check_admission(r.text)
        if not verdict.ok:
            report.junk.append((r.id, verdict.reason))
        if (r.access_count == 0 and now - r.created_at.timestamp() > stale_days * 86400
                and "pinned" not in r.tags and decay is not None
                and decay.effective_importance(r, now) < stale_importance):
            report.stale.append(r.id)
    # duplicates: exact normalised text per (scope, kind), then near-identical via prefix-filtered Jaccard
    groups: dict[tuple[Any, ...], list[MemoryRecord]] = {}
    for r in recs:
        groups.setdefault((r.scope, r.kind), []).append(r)
    for members in groups.values():
        report.duplicates.extend(_duplicate_groups(members, same_meaning))
    return report


def _duplicate_groups(recs: Sequence[MemoryRecord], same_meaning: Any, threshold: float = 0.8) -> list[list[str]]:
    parent = list(range(len(recs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    exact: dict[str, int] = {}
    tokens: list[list[str]] = []
    for i, r in enumerate(recs):
        key = normalize_text(r.text)
        if key in exact:
            union(exact[key], i)
        else:
            exact[key] = i
        tokens.append(sorted(set(re.findall(r"[a-z0-9]+", key))))
    # prefix filtering: sets with Jaccard >= t share a token among their rarest |x| - ceil(t|x|) + 1
    df = Counter(tok for toks in tokens for tok in toks)
    index: dict[str, list[int]] = {}
    for i, toks in enumerate(tokens):
        if not toks:
            continue
        ordered = sorted(toks, key=lambda tok: (df[tok], tok))
        prefix = len(ordered) - math.ceil(threshold * len(ordered)) + 1
        partners: set[int] = set()
        for tok in ordered[:prefix]:
            partners.update(index.get(tok, ()))
            index.setdefault(tok, []).append(i)
        for j in partners:
            if find(i) != find(j) and same_meaning(recs[i].text, recs[j].text, None, None):
                union(i, j)
    clusters: dict[int, list[str]] = {}
    for i, r in enumerate(recs):
        clusters.setdefault(find(i), []).append(r.id)
    return [ids for ids in clusters.values() if len(ids) > 1]


__all__ = ["AuditReport", "audit"]
