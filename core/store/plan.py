"""Operations that embed are written once, as plans: generators that yield what they need embedded.

A plan validates, yields an :class:`EmbedDocuments` or :class:`EmbedQuery` step, receives the vectors, and then
commits to the store. :func:`drive` runs a plan with the embedder's sync calls (``Memory``); :func:`adrive` awaits
the embedder's native async calls and runs the store steps in a worker thread (``AsyncMemory``). Sync and async
therefore share every line of the write path; only the transport of the embedding differs (like httpcore).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Any, Callable, Generator, Sequence, TypeVar

from ..providers.embedders import Embedder, aembed_documents, aembed_query
from ..recall import indexing
from ..types import MemoryRecord, ProviderError

T = TypeVar("T")
Vector = list[float]
Plan = Generator["EmbedDocuments | EmbedQuery", Any, T]


@dataclass(frozen=True)
class EmbedDocuments:
    """Embed these records as they will be indexed (:func:`~remem.core.recall.indexing.dense_docs`).
    Without ``keep_on_error`` a provider failure raises instead of yielding None vectors (a migration must not
    store vector-less copies)."""

    records: Sequence[MemoryRecord]
    keep_on_error: bool = True

    def run(self, embedder: Embedder) -> list[Vector | None]:
        if embedder.dim <= 0 or not self.records:
            return [None] * len(self.records)
        docs, spans = indexing.plan(self.records)
        try:
            vectors = list(embedder.embed_documents(docs))
        except ProviderError:
            if not self.keep_on_error:
                raise
            return [None] * len(self.records)
        return indexing.assemble(vectors, spans)

    async def arun(self, embedder: Embedder) -> list[Vector | None]:
        if embedder.dim <= 0 or not self.records:
            return [None] * len(self.records)
        docs, spans = indexing.plan(self.records)
        try:
            vectors = list(await aembed_documents(embedder, docs))
        except ProviderError:
            if not self.keep_on_error:
                raise
            return [None] * len(self.records)
        return indexing.assemble(vectors, spans)


@dataclass(frozen=True)
class EmbedQuery:
    """Embed a search query (None when there is no dense model or nothing to embed)."""

    text: str

    def run(self, embedder: Embedder) -> Vector | None:
        if embedder.dim <= 0 or not self.text.strip():
            return None
        return embedder.embed_query(self.text) or None

    async def arun(self, embedder: Embedder) -> Vector | None:
        if embedder.dim <= 0 or not self.text.strip():
            return None
        return (await aembed_query(embedder, self.text)) or None


def drive(plan: Plan[T], embedder: Embedder) -> T:
    """Run a plan in this thread, embedding with the sync API."""
    try:
        step = next(plan)
        while True:
            step = plan.send(step.run(embedder))
    except StopIteration as done:
        return done.value


async def adrive(plan: Plan[T], embedder: Embedder) -> T:
    """Run a plan without blocking the event loop: store steps in a worker thread, embeddings awaited."""
    done, value = await asyncio.to_thread(_advance, plan, None, True)
    while not done:
        vectors = await value.arun(embedder)
        done, value = await asyncio.to_thread(_advance, plan, vectors, False)
    return value


def _advance(plan: Plan[Any], value: Any, first: bool) -> tuple[bool, Any]:
    """One store step of a plan: (finished, result) or (not finished, the next embedding step). StopIteration
    cannot cross a thread's future, so it is turned into a flag here."""
    try:
        return False, next(plan) if first else plan.send(value)
    except StopIteration as stop:
        return True, stop.value


def planned(gen_fn: Callable[..., Plan[T]]) -> Callable[..., T]:
    """Make a plan method callable like a plain method (sync); ``method.plan`` is the plan itself."""
    @functools.wraps(gen_fn)
    def run(self: Any, *args: Any, **kwargs: Any) -> T:
        return drive(gen_fn(self, *args, **kwargs), self.embedder)

    run.plan = gen_fn  # type: ignore[attr-defined]
    return run


__all__ = ["EmbedDocuments", "EmbedQuery", "Plan", "adrive", "drive", "planned"]
