"""One settings object for a memory: how it ranks, merges, decays, redacts and reacts to provider failures.

The facade, the engine, the service and its client all read these fields from here; a service client sends
only the fields that differ from the defaults, and the service applies them to its shared store per request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from .recall.decay import DecayPolicy


@dataclass(frozen=True)
class Settings:
    """``rrf_k``: fusion constant; ``prefetch``: candidates per vector; ``dedupe_threshold``: cosine above which a
    new memory merges into an existing one; ``on_embed_error``: keep a write without its vector (fixed later by
    ``reembed(pending_only=True)``) or refuse it; ``redact``/``pii``: redaction on every write path;
    ``thread_gap_minutes``: dated notes of one scope this close in event time are read as one conversation
    (:mod:`remem.core.store.threads`)."""

    rrf_k: int = 5
    prefetch: int = 50
    dedupe_threshold: float = 0.95
    decay: DecayPolicy = field(default_factory=DecayPolicy)
    on_embed_error: Literal["keep", "refuse"] = "keep"
    on_embedder_mismatch: Literal["error", "allow"] = "error"
    reinforce: bool = True
    redact: bool = True
    pii: bool = False
    tenant_quota: int | None = None  # most memories a tenant may hold; checked atomically on every write path
    thread_gap_minutes: float = 30.0  # dated notes of one scope this close in event time are one thread (0: off)
    entities: bool = True  # entities linked as memories are written, and used by recall (remem.core.entities)
    entity_recall: bool = True  # recall raises the memories linked to the entities a question names
    entity_unknown_empty: bool = True  # a question naming only entities never heard of recalls nothing
    entity_weight: float = 0.0  # fusion weight of the memories linked to the entities a question names: off, as
    # it moved nothing on LoCoMo (docs/benchmarks.md, "Entities"); 0.5 raises them, one hop included
    entity_hub_share: float = 0.2  # an entity linked to more than this share of a scope's memories is not used

    def __post_init__(self) -> None:
        if self.decay is None:
            object.__setattr__(self, "decay", DecayPolicy())
        if self.on_embed_error not in ("keep", "refuse"):
            raise ValueError(f"on_embed_error must be 'keep' or 'refuse', got {self.on_embed_error!r}")
        if self.on_embedder_mismatch not in ("error", "allow"):
            raise ValueError(f"on_embedder_mismatch must be 'error' or 'allow', got {self.on_embedder_mismatch!r}")
        if not isinstance(self.rrf_k, int) or self.rrf_k < 1 or not isinstance(self.prefetch, int) or self.prefetch < 1:
            raise ValueError("rrf_k and prefetch must be positive integers")
        if self.tenant_quota is not None and (not isinstance(self.tenant_quota, int) or self.tenant_quota < 1):
            raise ValueError(f"tenant_quota must be a positive integer or None, got {self.tenant_quota!r}")
        if isinstance(self.thread_gap_minutes, bool) or not isinstance(self.thread_gap_minutes, (int, float)) \
                or not 0 <= self.thread_gap_minutes <= 60 * 24 * 7:
            raise ValueError(f"thread_gap_minutes must be a number of minutes from 0 to a week, "
                             f"got {self.thread_gap_minutes!r}")
        if not 0.0 < float(self.dedupe_threshold) <= 1.0:
            raise ValueError(f"dedupe_threshold must be in (0, 1], got {self.dedupe_threshold!r}")

    def changed(self) -> dict[str, Any]:
        """The fields that differ from the defaults (what a service client sends)."""
        default = Settings()
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)}

    def with_changes(self, changes: Mapping[str, Any]) -> "Settings":
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise ValueError(f"unknown settings: {sorted(unknown)}")
        return replace(self, **dict(changes))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


__all__ = ["Settings"]
