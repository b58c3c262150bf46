"""Scale-out backend: a Qdrant server or cluster through ``qdrant-client`` (same data model as Edge).

One collection holds every tenant; ``tenant`` is an ``is_tenant`` keyword index, Qdrant's multitenancy
pattern, so a cluster can co-locate each tenant's points. ``":memory:"`` or a ``path`` use qdrant-client's
local mode (used by the tests, since no server runs on the build machines).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Sequence

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from . import ERASED_KEY
from .base import (DENSE_VECTOR, FLOAT_FIELDS, KEYWORD_FIELDS, SPARSE_VECTORS, Cond, FilterSpec, Found,
                   PointData, PrefetchSpec)

META_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "remem:meta"))


def _cond(c: Cond) -> Any:
    if c.empty:
        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=c.key))
    if c.is_range:
        return qm.FieldCondition(key=c.key, range=qm.Range(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))
    if c.any_of is not None:
        return qm.FieldCondition(key=c.key, match=qm.MatchAny(any=list(c.any_of)))
    return qm.FieldCondition(key=c.key, match=qm.MatchValue(value=c.eq))


def _rrf(k: int, prefetches: Sequence[PrefetchSpec]) -> qm.Rrf:
    weights = [p.weight for p in prefetches]
    return qm.Rrf(k=k, weights=weights) if any(w != 1.0 for w in weights) else qm.Rrf(k=k)


def to_client_filter(flt: FilterSpec | None) -> qm.Filter | None:
    if flt is None or not (flt.must or flt.must_not or flt.should):
        return None
    return qm.Filter(
        must=[_cond(c) for c in flt.must] or None,
        must_not=[_cond(c) for c in flt.must_not] or None,
        should=[_cond(c) for c in flt.should] or None,
    )


def _vectors(p: PointData) -> dict[str, Any]:
    vec: dict[str, Any] = {n: qm.SparseVector(indices=i, values=v) for n, (i, v) in p.sparse.items()}
    if p.dense:
        vec[DENSE_VECTOR] = p.dense
    return vec


def _found(p: Any) -> Found:
    return Found(id=str(p.id), payload=dict(p.payload or {}), score=float(getattr(p, "score", 0.0) or 0.0))


class QdrantClientBackend:
    kind = "qdrant"

    def __init__(self, url: str | None = None, *, api_key: str | None = None, path: str | None = None,
                 collection: str = "remem", timeout: float = 30.0) -> None:
        if url == ":memory:" or (url is None and path is None):
            self._client = QdrantClient(location=":memory:")
            self.location = ":memory:"
        elif path is not None:
            self._client = QdrantClient(path=path)
            self.location = path
        else:
            self._client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout))
            self.location = url or ""
        self.collection = collection
        self.meta_collection = f"{collection}_meta"
        self._lock = threading.RLock()
        from .qdrant_state import CollectionState

        self.state = CollectionState(self._client, self.meta_collection)  # queue and ledger: nothing on the app machine

    def read_meta(self) -> dict[str, Any] | None:
        if not self._client.collection_exists(self.meta_collection):
            return None
        got = self._client.retrieve(self.meta_collection, [META_ID], with_payload=True)
        return dict(got[0].payload or {}) if got else None

    def write_meta(self, meta: dict[str, Any]) -> None:
        if not self._client.collection_exists(self.meta_collection):
            self._client.create_collection(self.meta_collection, vectors_config={})
        self._client.upsert(self.meta_collection, points=[qm.PointStruct(id=META_ID, vector={}, payload=meta)],
                            wait=True)

    def note_erasure(self) -> None:
        """Words left the store (a delete, an edit that dropped some): backups taken before now hold them. Kept
        in the meta collection, so every app machine of the store knows it."""
        if not self._client.collection_exists(self.meta_collection):
            self.write_meta({})
        self._client.set_payload(self.meta_collection, payload={ERASED_KEY: time.time_ns()}, points=[META_ID],
                                 wait=True)

    def ensure(self, dense_dim: int) -> None:
        have: set[str] = set()
        if self._client.collection_exists(self.collection):
            have = set(self._client.get_collection(self.collection).payload_schema or {})
        else:
            vectors = {DENSE_VECTOR: qm.VectorParams(size=dense_dim, distance=qm.Distance.DOT)} if dense_dim else {}
            self._client.create_collection(
                self.collection,
                vectors_config=vectors,
                sparse_vectors_config={n: qm.SparseVectorParams(modifier=qm.Modifier.IDF) for n in SPARSE_VECTORS},
            )
        if self.location in (":memory:",) or not self.location.startswith(("http", "grpc")):
            return  # local mode ignores payload indexes (and warns); a server gets them below
        for key in KEYWORD_FIELDS:  # a collection a remem before this one made gets the indexes added since
            if key in have:
                continue
            schema: Any = (qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
                           if key == "tenant" else qm.PayloadSchemaType.KEYWORD)
            self._client.create_payload_index(self.collection, key, field_schema=schema)
        for key in FLOAT_FIELDS:
            if key not in have:
                self._client.create_payload_index(self.collection, key, field_schema=qm.PayloadSchemaType.FLOAT)

    def recreate(self, dense_dim: int) -> None:
        if self._client.collection_exists(self.collection):
            self._client.delete_collection(self.collection)
        self.ensure(dense_dim)

    def close(self) -> None:
        self._client.close()

    def optimize(self) -> None:
        """A server builds its indexes itself."""

    def upsert(self, points: Sequence[PointData]) -> None:
        if not points:
            return
        structs = [qm.PointStruct(id=p.id, vector=_vectors(p), payload=p.payload) for p in points]
        with self._lock:
            self._client.upsert(self.collection, points=structs, wait=True)

    def set_payload(self, ids: Sequence[str], payload: dict[str, Any]) -> None:
        if ids:
            with self._lock:
                self._client.set_payload(self.collection, payload=payload, points=list(ids), wait=True)

    def set_vectors(self, points: Sequence[PointData]) -> None:
        if points:
            pvs = [qm.PointVectors(id=p.id, vector=_vectors(p)) for p in points]
            with self._lock:
                self._client.update_vectors(self.collection, points=pvs, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self.note_erasure()  # first: a store that cannot note it refuses the delete, rather than forget it
            with self._lock:
                self._client.delete(self.collection, points_selector=qm.PointIdsList(points=list(ids)), wait=True)

    def retrieve(self, ids: Sequence[str]) -> list[Found]:
        if not ids:
            return []
        with self._lock:
            return [_found(r) for r in self._client.retrieve(self.collection, list(ids), with_payload=True)]

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        if not ids:
            return {}
        with self._lock:
            found = self._client.retrieve(self.collection, list(ids), with_payload=False, with_vectors=[DENSE_VECTOR])
        return {str(r.id): list(r.vector[DENSE_VECTOR]) for r in found
                if isinstance(r.vector, dict) and r.vector.get(DENSE_VECTOR) is not None}

    @staticmethod
    def _vector(v: Any) -> Any:
        return qm.SparseVector(indices=v[0], values=v[1]) if isinstance(v, tuple) else v

    def query(self, prefetches: Sequence[PrefetchSpec], flt: FilterSpec, limit: int, rrf_k: int) -> list[Found]:
        qf = to_client_filter(flt)
        with self._lock:
            if len(prefetches) == 1:
                p = prefetches[0]
                res = self._client.query_points(self.collection, query=self._vector(p.vector), using=p.using,
                                                query_filter=qf, limit=limit, with_payload=True)
            else:
                res = self._client.query_points(
                    self.collection,
                    prefetch=[qm.Prefetch(query=self._vector(p.vector), using=p.using, limit=p.limit, filter=qf)
                              for p in prefetches],
                    query=qm.RrfQuery(rrf=_rrf(rrf_k, prefetches)), query_filter=qf, limit=limit, with_payload=True)
        return [_found(p) for p in res.points]

    def scroll(self, flt: FilterSpec, limit: int, offset: Any = None) -> tuple[list[Found], Any]:
        with self._lock:
            records, nxt = self._client.scroll(self.collection, scroll_filter=to_client_filter(flt), limit=limit,
                                               offset=offset, with_payload=True)
        return [_found(r) for r in records], nxt

    def newest(self, flt: FilterSpec, limit: int, by: str = "created_ts") -> list[Found]:
        return self._ordered(flt, limit, by, qm.Direction.DESC)

    def earliest(self, flt: FilterSpec, limit: int, by: str = "occurred_ts") -> list[Found]:
        return self._ordered(flt, limit, by, qm.Direction.ASC)

    def _ordered(self, flt: FilterSpec, limit: int, by: str, direction: Any) -> list[Found]:
        with self._lock:
            records, _ = self._client.scroll(self.collection, scroll_filter=to_client_filter(flt), limit=limit,
                                             with_payload=True, order_by=qm.OrderBy(key=by, direction=direction))
        return [_found(r) for r in records]

    def count(self, flt: FilterSpec) -> int:
        with self._lock:
            return int(self._client.count(self.collection, count_filter=to_client_filter(flt), exact=True).count)
