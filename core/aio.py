"""``AsyncMemory``: the same operations for asyncio code, never blocking the event loop.

Embedding and LLM calls use the providers' native async clients where they have one; the store work
(in-process Rust for Qdrant Edge, sub-millisecond per call) runs in worker threads.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from typing import Any, Callable, TypeVar

from .providers.embedders import aembed_documents, aembed_query
from .memory import Memory, RemoteMemory
from .types import ForgetResult, MemoryRecord, ProviderError, SearchHit, Stats
from .recall import indexing
from .recall.rendering import render_context

T = TypeVar("T")


class AsyncMemory:
    """Async twin of :class:`~remem.Memory`; same constructor, same methods, awaited."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, memory: Memory | None = None,
                 **kwargs: Any) -> None:
        self.sync = memory if memory is not None else Memory(path, **kwargs)
        # a store owned by the local service: every call is one request over asyncio streams
        self._remote: Any = self.sync.async_client if isinstance(self.sync, RemoteMemory) else None

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.sync._closed:
            from .types import RememError

            raise RememError("this Memory is closed")
        return await self._remote.call(method, *args, **kwargs)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(partial(fn, *args, **kwargs))

    async def _vectors_for(self, recs: list[MemoryRecord]) -> list[list[float] | None]:
        """Async twin of ``Engine.vectors_for``: the embedding request is awaited, not run in a thread."""
        eng = self.sync
        if not eng.dense:
            return [None] * len(recs)
        docs, spans = indexing.plan(recs)
        try:
            vectors = list(await aembed_documents(eng.embedder, docs))
        except ProviderError:
            if eng.on_embed_error == "refuse":
                raise
            return [None] * len(recs)
        return indexing.assemble(vectors, spans)

    async def add(self, text: str, **kwargs: Any) -> MemoryRecord:
        if self._remote:
            return await self._call("add", text, **kwargs)
        dense = (await self._vectors_for([self.sync.draft(text, **kwargs)]))[0]
        return await self._run(self.sync._add, text, dense, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> list[SearchHit]:
        if self._remote:
            return await self._call("search", query, **kwargs)
        eng = self.sync
        qvec = (await aembed_query(eng.embedder, query)
                if eng.dense and isinstance(query, str) and query.strip() else None)
        return await self._run(eng._search, query, qvec or None, **kwargs)

    async def context(self, query: str, *, token_budget: int = 800, limit: int = 20, **kwargs: Any) -> str:
        if self._remote:
            return await self._call("context", query, token_budget=token_budget, limit=limit, **kwargs)
        hits = await self.search(query, limit=limit, token_budget=token_budget, **kwargs)
        return render_context(hits, token_budget)

    async def _plain(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Methods without an embedding step: one service request, or the sync method in a worker thread.
        (Remote path arguments and progress callbacks go through the sync facade, which resolves them.)"""
        if self._remote and "progress" not in kwargs and method not in ("export", "import_", "backup", "remember"):
            return await self._call(method, *args, **kwargs)
        return await self._run(getattr(self.sync, method), *args, **kwargs)

    async def get(self, memory_id: str, **kwargs: Any) -> MemoryRecord:
        return await self._plain("get", memory_id, **kwargs)

    async def update(self, memory_id: str, *, text: str | None = None, **kwargs: Any) -> MemoryRecord:
        if self._remote:
            return await self._call("update", memory_id, text=text, **kwargs)
        dense = None
        if text is not None or kwargs.get("context") is not None:
            draft = await self._run(self.sync.revised, memory_id, text=text, context=kwargs.get("context"),
                                    scope=kwargs.get("scope"))
            dense = (await self._vectors_for([draft]))[0]
        return await self._run(self.sync._update, memory_id, dense, text=text, **kwargs)

    async def supersede(self, old_id: str, new: Any, *, scope: Any = None, valid_from: Any = None,
                        **fields: Any) -> MemoryRecord:
        if self._remote:
            return await self._call("supersede", old_id, new, scope=scope, valid_from=valid_from, **fields)
        spec, draft = await self._run(self.sync.prepare_supersede, old_id, new, scope=scope, valid_from=valid_from,
                                      **fields)
        dense = (await self._vectors_for([draft]))[0]
        return await self._run(self.sync._supersede, old_id, dense, spec, scope=scope)

    async def forget(self, memory_id: str | None = None, **kwargs: Any) -> ForgetResult | bool:
        return await self._plain("forget", memory_id, **kwargs)

    async def list(self, **kwargs: Any) -> list[MemoryRecord]:
        return await self._plain("list", **kwargs)

    async def count(self, **kwargs: Any) -> int:
        return await self._plain("count", **kwargs)

    async def stats(self, **kwargs: Any) -> Stats:
        return await self._plain("stats", **kwargs)

    async def export(self, path: str | os.PathLike[str], **kwargs: Any) -> int:
        return await self._plain("export", path, **kwargs)

    async def import_(self, path: str | os.PathLike[str], **kwargs: Any) -> int:
        return await self._plain("import_", path, **kwargs)

    async def backup(self, *args: Any, **kwargs: Any) -> Any:
        return await self._plain("backup", *args, **kwargs)

    async def reembed(self, **kwargs: Any) -> int:
        return await self._plain("reembed", **kwargs)

    async def add_many(self, items: Any, **kwargs: Any) -> list[MemoryRecord]:
        return await self._plain("add_many", items, **kwargs)

    async def iter_records(self, scope: Any = None) -> list[MemoryRecord]:
        """Every record of ``scope`` (a list: the async API does not stream)."""
        return await self._run(lambda: list(self.sync.iter_records(scope)))

    async def audit(self, **kwargs: Any) -> dict[str, Any]:
        return await self._plain("audit", **kwargs)

    async def usage(self) -> dict[str, Any]:
        return await self._plain("usage")

    async def drain_pending(self) -> int:
        return await self._plain("drain_pending")

    async def rescan_redactions(self, **kwargs: Any) -> dict[str, Any]:
        return await self._plain("rescan_redactions", **kwargs)

    async def optimize(self) -> None:
        await self._plain("optimize")

    async def remember(self, messages: Any, **kwargs: Any) -> Any:
        """Distil a conversation into memories (see ``Memory.remember``): LLM calls with the async client,
        store work in worker threads; through the service when it owns the store."""
        if self._remote:
            return await self._remote_remember(messages, **kwargs)
        from .distill.pipeline import aremember

        return await aremember(self, messages, **kwargs)

    async def _remote_remember(self, messages: Any, **kwargs: Any) -> Any:
        from .service.client import encode

        try:
            encode([messages, kwargs])
        except TypeError:
            return await self._run(self.sync.remember, messages, **kwargs)
        return await self._call("remember", messages, **kwargs)

    async def close(self) -> None:
        if self._remote:
            self.sync.close()
            return
        await self._run(self.sync.close)

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
