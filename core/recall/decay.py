"""Lazy decay and reinforcement: importance fades with idle time, recall refreshes it; only ranking changes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..types import MemoryRecord

DAY = 86400.0


@dataclass(frozen=True)
class DecayPolicy:
    """Half-life in days per kind (``default`` for others), a floor, and tags that never fade."""

    half_life_days: dict[str, float] = field(default_factory=lambda: {
        "preference": 365.0, "lesson": 365.0, "decision": 180.0, "fact": 180.0,
        "note": 90.0, "summary": 60.0, "event": 30.0, "default": 90.0,
    })
    floor: float = 2.0
    protected_tags: frozenset[str] = frozenset({"pinned"})
    weight: float = 0.3  # share of the final score importance can move; relevance keeps the rest
    enabled: bool = True

    def effective_importance(self, rec: MemoryRecord, now_ts: float) -> float:
        imp = float(rec.importance)
        if not self.enabled or self.protected_tags.intersection(rec.tags) or imp <= self.floor:
            return imp
        last = max(t.timestamp() for t in (rec.created_at, rec.updated_at, rec.last_accessed_at) if t is not None)
        idle_days = max(0.0, now_ts - last) / DAY
        half = self.half_life_days.get(rec.kind, self.half_life_days.get("default", 90.0))
        # reinforcement: every recall stretches the half-life a little (spaced repetition, capped at 4x)
        half *= min(4.0, 1.0 + math.log1p(rec.access_count) / 2)
        return self.floor + (imp - self.floor) * 0.5 ** (idle_days / half)

    def score(self, relevance: float, rec: MemoryRecord, now_ts: float) -> float:
        eff = self.effective_importance(rec, now_ts)
        return relevance * ((1.0 - self.weight) + self.weight * eff / 10.0)
