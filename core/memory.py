"""``Memory``: the public, synchronous entry point (embedded Qdrant Edge by default, or a Qdrant server)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from .backends.base import Backend
from .config import default_store_path
from .decay import DecayPolicy
from .embedders import Embedder, resolve_embedder
from .engine import Engine


def open_backend(path: str | os.PathLike[str] | None = None, url: str | None = None, api_key: str | None = None,
                 collection: str | None = None) -> Backend:
    url = url or (os.environ.get("REMEM_URL") if path is None else None)
    if url:
        from .backends.client import QdrantClientBackend

        return QdrantClientBackend(url, api_key=api_key or os.environ.get("REMEM_API_KEY"),
                                   collection=collection or os.environ.get("REMEM_COLLECTION") or "remem")
    from .backends.edge import EdgeBackend

    return EdgeBackend(Path(path) if path is not None else default_store_path())


class Memory(Engine):
    """Long-term memory for agents.

    ``Memory()`` opens the embedded store under ``$REMEM_HOME`` (keyless); ``Memory(path=...)`` another folder;
    ``Memory(url=..., api_key=...)`` a Qdrant server or cluster (``url=":memory:"``: qdrant-client local mode).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        collection: str | None = None,
        embedder: str | Embedder | None = None,
        rrf_k: int = 2,
        dedupe_threshold: float = 0.93,
        decay: DecayPolicy | None = None,
        on_embed_error: Literal["keep", "refuse"] = "keep",
        on_embedder_mismatch: Literal["error", "allow"] = "error",
        reinforce: bool = True,
        backend: Backend | None = None,
    ) -> None:
        if path is not None and url is not None:
            raise ValueError("pass either path= (embedded) or url= (Qdrant server), not both")
        super().__init__(
            backend or open_backend(path, url, api_key, collection),
            resolve_embedder(embedder),
            rrf_k=rrf_k,
            dedupe_threshold=dedupe_threshold,
            decay=decay,
            on_embed_error=on_embed_error,
            on_embedder_mismatch=on_embedder_mismatch,
            reinforce=reinforce,
        )

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory(backend={self.backend.kind!r}, location={self.backend.location!r}, embedder={self.embedder.name!r})"
