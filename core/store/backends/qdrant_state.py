"""State that must survive the app machine, kept in the ``<collection>_meta`` collection of a Qdrant server.

With ``Memory(url=...)`` the app servers are stateless: the queue of captures waiting for a failing LLM and the
LLM usage ledger live here, next to the embedder fingerprint, so several app servers share them and a container
that dies loses nothing. Each entry is one point keyed by (kind, key), with its data in the payload.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterator

from qdrant_client.http import models as qm


class CollectionState:
    """Small keyed records of one ``kind`` ("pending", "usage") in the meta collection."""

    def __init__(self, client: Any, collection: str) -> None:
        self._client = client
        self.collection = collection

    def _ensure(self) -> None:
        if not self._client.collection_exists(self.collection):
            self._client.create_collection(self.collection, vectors_config={})

    @staticmethod
    def point_id(kind: str, key: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"remem:state:{kind}:{key}"))

    def put(self, kind: str, key: str, data: dict[str, Any]) -> None:
        self._ensure()
        payload = {"state_kind": kind, "state_key": key, "data": data, "ts": time.time()}
        self._client.upsert(self.collection, points=[qm.PointStruct(id=self.point_id(kind, key), vector={},
                                                                     payload=payload)], wait=True)

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        if not self._client.collection_exists(self.collection):
            return None
        got = self._client.retrieve(self.collection, [self.point_id(kind, key)], with_payload=True)
        return dict(got[0].payload or {}) if got else None

    def update(self, kind: str, key: str, fields: dict[str, Any]) -> None:
        self._client.set_payload(self.collection, payload=fields, points=[self.point_id(kind, key)], wait=True)

    def delete(self, kind: str, key: str) -> None:
        if self._client.collection_exists(self.collection):
            self._client.delete(self.collection, points_selector=qm.PointIdsList(points=[self.point_id(kind, key)]),
                                wait=True)

    def scan(self, kind: str) -> Iterator[dict[str, Any]]:
        """Every entry of ``kind`` (its whole payload: state_key, data, ts and any claim fields)."""
        if not self._client.collection_exists(self.collection):
            return
        flt = qm.Filter(must=[qm.FieldCondition(key="state_kind", match=qm.MatchValue(value=kind))])
        offset = None
        while True:
            points, offset = self._client.scroll(self.collection, scroll_filter=flt, limit=256, offset=offset,
                                                 with_payload=True)
            for p in points:
                yield dict(p.payload or {})
            if offset is None or not points:
                return


__all__ = ["CollectionState"]
