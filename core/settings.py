"""One settings object for a memory: how it ranks, merges, decays, redacts and reacts to provider failures.

The facade, the engine, the service and its client all read these fields from here; a service client sends
only the fields that differ from the defaults, and the service applies them to its shared store per request.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from .recall.decay import DecayPolicy

_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")  # as a stored kind must look


@dataclass(frozen=True)
class Settings:
    """``rrf_k``: fusion constant; ``prefetch``: candidates per vector; ``dedupe_threshold``: cosine above which a
    new memory merges into an existing one; ``on_embed_error``: keep a write without its vector (fixed later by
    ``reembed(pending_only=True)``) or refuse it; ``redact``/``pii``: redaction on every write path;
    ``thread_gap_minutes``: dated notes of one scope this close in event time are read as one conversation
    (:mod:`remem.core.store.threads`); ``kinds``: kinds accepted beyond the built-in closed set."""

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
    kinds: tuple[str, ...] = ()  # kinds this store accepts beyond the built-in ones (remem.core.types.KINDS)
    entities: bool = True  # entities linked as memories are written, and used by recall (remem.core.entities)
    entity_recall: bool = True  # recall raises the memories linked to the entities a question names
    entity_unknown_empty: bool = True  # a question naming only entities never heard of recalls nothing
    entity_weight: float = 0.0  # fusion weight of the memories linked to the entities a question names: off, as
    # it moved nothing on LoCoMo (docs/benchmarks.md, "Entities"); 0.5 raises them, one hop included
    relation_weight: float = 0.5  # fusion weight of the memories linked to the entities a question reaches through
    # a relation it names ("the service Dana maintains": one hop; docs/benchmarks.md, "Relations"; 0: off)
    entity_hub_share: float = 0.2  # an entity linked to more than this share of a scope's memories is not used
    entity_aliases: bool = True  # a question naming an entity by an alias is searched with its other names too

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
        kinds = (self.kinds,) if isinstance(self.kinds, str) else tuple(self.kinds or ())
        bad = [k for k in kinds if not isinstance(k, str) or not _KIND_RE.match(k)]
        if bad:
            raise ValueError(f"kinds must be short lowercase identifiers (a letter, then letters, digits, - or _), "
                             f"got {bad!r}")
        object.__setattr__(self, "kinds", tuple(dict.fromkeys(kinds)))
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


def configured_kinds(kinds: Any = None, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The extra kinds a store accepts: ``kinds`` when given, else ``$REMEM_KINDS`` (comma-separated)."""
    import os

    if kinds is None:
        raw = (os.environ if env is None else env).get("REMEM_KINDS") or ""
        kinds = [k.strip() for k in raw.split(",") if k.strip()]
    return (kinds,) if isinstance(kinds, str) else tuple(kinds)


__all__ = ["Settings", "configured_kinds"]
