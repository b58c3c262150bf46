"""The embeddings a LangGraph ``index`` config names, as a remem embedder.

LangGraph's ``IndexConfig["embed"]`` is a LangChain ``Embeddings``, a sync or async function of a list of texts,
or a ``"provider:model"`` string (resolved by LangChain's ``init_embeddings``, through LangGraph's own
``ensure_embeddings``). :class:`IndexEmbedder` gives it remem's embedder interface (``name``, ``dim``,
``embed_documents``, ``embed_query``), so the remem store it builds records which embeddings made its vectors
(opening it with other ones is remem's usual :class:`~remem.core.types.EmbedderMismatchError`) and the store's
own dense recall uses them.

It also keeps LangGraph's scores: an item is represented by one vector per indexed text (as in LangGraph's own
stores), and its score for a query is the best cosine similarity among them. Those vectors are stored with the
item as one string (:func:`pack`: unit length, 16-bit fixed point, cosine error under 1e-4, spelled in the
letters ``a``-``p`` so no redaction rule reads a secret or a number in it). A string, not a list of numbers: a
search reads the payloads of its candidates, and 384 numbers per vector made every search ~2.6x slower
(median 183 vs 69 ms on one LoCoMo conversation, MiniLM, same run); see :func:`best_cosine`.
"""

from __future__ import annotations

import array
import asyncio
import concurrent.futures
import math
import sys
import threading
from collections import OrderedDict
from typing import Any, Mapping, Sequence

from langgraph.store.base.embed import ensure_embeddings

SCALE = 32767  # unit vectors as 16-bit integers
_TO_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")
_FROM_LETTERS = str.maketrans("abcdefghijklmnop", "0123456789abcdef")
_SWAP = sys.byteorder == "little"  # packed big-endian, whatever the machine
CACHE_SIZE = 4096  # texts whose vectors are kept: a put's fields, then the same text embedded by remem's core


class IndexEmbedder:
    """A LangGraph ``index["embed"]`` with remem's embedder interface, batched and thread-safe.

    Vectors are cached by text, so the texts a batch of puts needs are embedded in one call
    (:meth:`warm`) and the core's own embedding of the same text costs nothing. An async-only function is run
    on its own event loop, never on the caller's (the store calls it from a worker thread under ``abatch``).
    """

    def __init__(self, embed: Any, dims: int | None = None, *, batch_size: int = 256) -> None:
        self.embeddings = ensure_embeddings(embed)
        self.name = embedder_name(embed, self.embeddings)
        self._dims = int(dims) if dims else None
        self.batch_size = max(1, int(batch_size))
        self._docs: OrderedDict[str, list[float]] = OrderedDict()
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.RLock()
        self._async_only = getattr(self.embeddings, "afunc", None) is not None and \
            getattr(self.embeddings, "func", None) is None

    # ------------------------------------------------------------------ remem's Embedder protocol
    @property
    def dim(self) -> int:
        if self._dims is None:  # no "dims" in the index config: ask the model once
            self._dims = len(self.embed_query("dimension probe"))
        return self._dims

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        found = self.warm(texts)
        return [list(found[t]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            hit = self._queries.get(text)
            if hit is not None:
                self._queries.move_to_end(text)
                return list(hit)
            vec = self._checked([self._call("aembed_query", "embed_query", text)])[0]
            _remember(self._queries, text, vec)
            return list(vec)

    # ------------------------------------------------------------------ batching
    def warm(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """The vectors of ``texts``: cached ones as they are, the others embedded in batches of ``batch_size``."""
        with self._lock:
            found: dict[str, list[float]] = {}
            for t in texts:
                if t in self._docs:
                    found[t] = self._docs[t]
                    self._docs.move_to_end(t)
            todo = list(dict.fromkeys(t for t in texts if t not in found))
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                vectors = self._checked(self._call("aembed_documents", "embed_documents", chunk))
                if len(vectors) != len(chunk):
                    raise ValueError(f"index['embed'] returned {len(vectors)} vectors for {len(chunk)} texts")
                for text, vec in zip(chunk, vectors):
                    found[text] = vec
                    _remember(self._docs, text, vec)
            return found

    def vectors(self, texts: Sequence[str]) -> list[str]:
        """The packed vectors of ``texts`` (see :func:`pack`), embedded in one batch."""
        return [pack(v) for v in self.embed_documents(texts)] if texts else []

    def query_vector(self, text: str) -> list[float]:
        return unit(self.embed_query(text))

    # ------------------------------------------------------------------ internals
    def _call(self, async_name: str, sync_name: str, arg: Any) -> Any:
        if not self._async_only:
            return getattr(self.embeddings, sync_name)(arg)
        coro_fn = getattr(self.embeddings, async_name)
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop in this thread (the store's worker thread): run one
            return asyncio.run(coro_fn(arg))
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="remem-embed") as pool:
            return pool.submit(asyncio.run, coro_fn(arg)).result()  # never block the caller's loop on itself

    def _checked(self, vectors: Sequence[Sequence[float]]) -> list[list[float]]:
        out = [[float(x) for x in v] for v in vectors]
        for v in out:
            if self._dims is None:
                self._dims = len(v)
            if len(v) != self._dims:
                raise ValueError(f"index['embed'] returned a vector of {len(v)} dimensions; index['dims'] is "
                                 f"{self._dims}")
            if not all(math.isfinite(x) for x in v):
                raise ValueError("index['embed'] returned a vector with NaN or infinite values")
        return out


def _remember(cache: OrderedDict[str, list[float]], text: str, vec: list[float]) -> None:
    cache[text] = vec
    cache.move_to_end(text)
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def embedder_name(embed: Any, embeddings: Any) -> str:
    """The name a store records for these embeddings: the provider string, or the class (and model) or function
    that embeds. A store built with one cannot be opened with another (their vectors do not compare)."""
    if isinstance(embed, str):
        return f"langchain:{embed.strip()}"
    func = getattr(embeddings, "func", None) or getattr(embeddings, "afunc", None)
    if func is not None and type(embeddings).__name__ == "EmbeddingsLambda":
        target = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(func).__qualname__)}"
        return f"callable:{target}"
    cls = type(embeddings)
    name = f"langchain:{cls.__module__}.{cls.__qualname__}"
    model = next((getattr(embeddings, a) for a in ("model", "model_name", "model_id")
                  if isinstance(getattr(embeddings, a, None), str)), None)
    return f"{name}:{model}" if model else name


def index_embedder(index: Mapping[str, Any]) -> IndexEmbedder:
    """The remem embedder for a LangGraph ``index`` config (``embed`` and ``dims``): pass it as
    ``Memory(embedder=...)`` to share one store between a ``RememStore`` and other remem code."""
    if not isinstance(index, Mapping) or index.get("embed") is None:
        raise ValueError("index needs an 'embed': a LangChain Embeddings, a function of a list of texts, or a "
                         "'provider:model' string such as 'openai:text-embedding-3-small'")
    dims = index.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0):
        raise ValueError(f"index['dims'] must be a positive integer, got {dims!r}")
    return IndexEmbedder(index["embed"], dims)


def unit(vec: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vec))
    return [x / norm for x in vec] if norm > 0 else [0.0 for _ in vec]


def pack(vec: Sequence[float]) -> str:
    """``vec`` at unit length in 16-bit fixed point, 4 letters ``a``-``p`` a dimension; an all-zero vector packs
    to "" (it matches nothing). An item's vectors are stored end to end (they all have the model's length)."""
    u = unit(vec)
    if not any(u):
        return ""
    packed = array.array("h", [max(-SCALE, min(SCALE, round(x * SCALE))) for x in u])
    if _SWAP:
        packed.byteswap()
    return packed.tobytes().hex().translate(_TO_LETTERS)


def unpack(packed: str, dims: int) -> list[array.array]:
    """The vectors in an item's packed string (malformed parts are skipped)."""
    width = 4 * dims
    out = []
    for start in range(0, len(packed) - width + 1, width):
        try:
            vec = array.array("h", bytes.fromhex(packed[start:start + width].translate(_FROM_LETTERS)))
        except ValueError:
            continue
        if _SWAP:
            vec.byteswap()
        out.append(vec)
    return out


def best_cosine(query_unit: Sequence[float], packed: Any) -> float | None:
    """The best cosine similarity between a unit query vector and an item's packed vectors; None without any."""
    if not isinstance(packed, str) or not packed or not query_unit:
        return None
    best: float | None = None
    for v in unpack(packed, len(query_unit)):
        norm = math.sqrt(sum(x * x for x in v))
        if norm == 0:
            continue
        cos = sum(q * x for q, x in zip(query_unit, v)) / norm
        best = cos if best is None else max(best, cos)
    return best


__all__ = ["IndexEmbedder", "best_cosine", "embedder_name", "index_embedder", "pack", "unit", "unpack"]
