"""The narrow storage interface remem's engine needs; Qdrant Edge and qdrant-client both implement it.

Filters are described with :class:`Cond`/:class:`FilterSpec` so the engine builds every scope and time
condition once, and each backend only translates them into its own Qdrant models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from ...types import SparseVec


@dataclass(frozen=True)
class Cond:
    """One payload condition: exactly one of eq / any_of / a range / empty (the key absent, null or [])."""

    key: str
    eq: Any = None
    any_of: tuple[Any, ...] | None = None
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None
    empty: bool = False

    @property
    def is_range(self) -> bool:
        return any(v is not None for v in (self.gt, self.gte, self.lt, self.lte))


@dataclass
class FilterSpec:
    must: list[Cond] = field(default_factory=list)
    must_not: list[Cond] = field(default_factory=list)
    should: list[Cond] = field(default_factory=list)


@dataclass(frozen=True)
class PointData:
    id: str
    payload: dict[str, Any]
    dense: list[float] | None = None
    sparse: dict[str, SparseVec] = field(default_factory=dict)


@dataclass(frozen=True)
class PrefetchSpec:
    """One candidate list for fusion: ``using`` names the vector (``dense``, ``bm25``, ``ident``)."""

    using: str
    vector: list[float] | SparseVec
    limit: int
    weight: float = 1.0  # weighted RRF: scales this list's ranks (Qdrant's 1/((rank+1)/w + k - 1))


@dataclass(frozen=True)
class Found:
    id: str
    payload: dict[str, Any]
    score: float = 0.0


KEYWORD_FIELDS = ("tenant", "user", "agent", "session", "kind", "tags", "content_hash", "source", "sources",
                  "meta.follows", "meta.followed_by",  # the messages around one: forget finds them (store.erasure)
                  "meta.session",  # and what was distilled in the same session (store.derived)
                  "entities", "names")  # a memory's entity links; an entity record's names (core.entities)
FLOAT_FIELDS = ("created_ts", "updated_ts", "valid_from_ts", "valid_until_ts", "occurred_ts")
SPARSE_VECTORS = ("bm25", "ident")
DENSE_VECTOR = "dense"


class Backend(Protocol):
    """A single Qdrant collection (or Edge shard) holding every tenant's memories."""

    kind: str
    location: str

    def read_meta(self) -> dict[str, Any] | None: ...

    def write_meta(self, meta: dict[str, Any]) -> None: ...

    def ensure(self, dense_dim: int) -> None: ...

    def recreate(self, dense_dim: int) -> None: ...

    def upsert(self, points: Sequence[PointData]) -> None: ...

    def set_payload(self, ids: Sequence[str], payload: dict[str, Any]) -> None: ...

    def set_vectors(self, points: Sequence[PointData]) -> None:
        """Replace the named vectors ``points`` carry (a dense one only when given) of points that exist, and
        nothing else: re-indexing what a memory is found by without embedding it again."""

    def delete(self, ids: Sequence[str]) -> None: ...

    def retrieve(self, ids: Sequence[str]) -> list[Found]: ...

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored dense vector of each of ``ids`` that has one (a compaction rewrites points without
        embedding them again)."""

    def query(self, prefetches: Sequence[PrefetchSpec], flt: FilterSpec, limit: int, rrf_k: int) -> list[Found]: ...

    def scroll(self, flt: FilterSpec, limit: int, offset: Any = None) -> tuple[list[Found], Any]: ...

    def newest(self, flt: FilterSpec, limit: int, by: str = "created_ts") -> list[Found]:
        """The ``limit`` points matching ``flt`` with the highest ``by`` (a float field): the newest stored, or
        with ``"occurred_ts"`` the last said (points without it left out)."""

    def earliest(self, flt: FilterSpec, limit: int, by: str = "occurred_ts") -> list[Found]:
        """The ``limit`` points matching ``flt`` with the lowest ``by``: with ``"occurred_ts"`` the first said
        (a thread's first notes, for one said before them)."""

    def count(self, flt: FilterSpec) -> int: ...

    def optimize(self) -> None: ...

    def close(self) -> None: ...
