"""``RememStore``: a LangGraph ``BaseStore`` whose items live in remem (embedded Qdrant, hybrid recall).

Each LangGraph item ``(namespace, key, value)`` is one remem memory:

* ``put`` is an upsert: the memory holding (namespace, key) is found by metadata and updated (creation time
  kept), else added; only public ``Memory`` methods are used, so the store works the same on an in-process
  store, through the local remem service, or on a Qdrant server;
* its metadata holds the value (``lg_value``), the key, the namespace labels and, for lookups, digests of
  (namespace, key) (``lg_id_h``), of the namespace (``lg_ns_h``), of every namespace prefix (``lg_prefix_h``) and
  of every label (``lg_label_h``), so a get is one exact filter and a prefix search one filter *inside* the
  Qdrant query, never a post-filter; ``lg_expires_at`` carries the TTL and is filtered on every read;
* lookups never filter on a stored label or key: remem redacts every metadata string on write (secrets always,
  PII when the ``Memory`` has ``pii=True``), so a namespace like ``("users", "+1 415 555 0132")`` or a key like
  ``"sk-proj-..."`` is stored as ``[REDACTED:...]``. Digests are sha256 spelled in the letters ``a``-``p``
  (no digits, so no credit-card/phone rule can fire inside one, which plain hex does ~1 in 750 times). Secrets
  and PII never persist in clear text, by design: ``get`` returns the namespace and key the caller passed,
  ``search`` and ``list_namespaces`` return the caller's labels for the positions the query named and the
  stored (possibly redacted) labels and keys elsewhere;
* its text (what BM25 and the dense model read) is the item's indexed texts (LangGraph ``IndexConfig``
  ``fields``, with LangGraph's path syntax: ``"key1.key2"``, ``"list[*]"``, ``"list[-1]"``, ``"{a,b}"``,
  ``"$"`` the whole value, the default; a per-put ``index=[...]`` replaces them for that item; ``index=False``
  keeps the item listable and filterable but never matched by a query);
* with ``index["embed"]`` (LangGraph's embeddings: see :mod:`.store_embed`), each indexed text also keeps its own
  vector (``lg_vec``), so a search scores as LangGraph's stores do.

Search with a ``query`` returns, in order:

1. the items that match it, best first, each with its ``score``. With ``index["embed"]`` the score is
   LangGraph's: the best cosine similarity between the query and the item's indexed texts under those
   embeddings, and the order is that score's. The candidates come from remem's hybrid recall (BM25 words,
   identifiers and nearest vectors together), so an exact name or id is found even where nearest-neighbour
   search alone would miss it; ``order="recall"`` keeps remem's order instead (better recall, scores then not
   in order). Without ``index["embed"]`` (remem's own embedder), the score is remem's fused relevance: higher
   is better, comparable within one search only.
2. then, with ``fill_unmatched`` (the default), the other items of the prefix, newest first, up to ``limit``:
   with ``index["embed"]`` they are scored and ranked like the others; only items that have no vector
   (``index=False``, or nothing to index) come back with ``score=None``, always after every scored item.

``filter=`` follows LangGraph (dotted paths into the value, any key characters, ``$eq/$ne/$gt/$gte/$lt/$lte``):
see :mod:`.store_filter`.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import logging
import threading
import time
from functools import lru_cache
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, Op, PutOp,
                                  Result, SearchItem, SearchOp, TTLConfig)
from langgraph.store.base.embed import get_text_at_path

from ...core.aio import AsyncMemory
from ...core.memory import Memory
from ...core.store.engine import MAX_TEXT_CHARS
from ...core.store.validation import MAX_METADATA_BYTES
from ...core.types import FOREVER, EmbedderMismatchError, MemoryRecord, Scope
from . import store_filter
from .store_embed import IndexEmbedder, best_cosine, index_embedder

log = logging.getLogger("remem.langgraph.store")

_VECTOR_ROOM = 1024  # bytes of metadata kept free beside the item's vectors

NamespaceScope = Callable[[tuple[str, ...]], Scope]


class RememStore(BaseStore):
    """LangGraph long-term store on remem. Sync ``batch`` and async ``abatch`` (store work off the event loop).

    Args:
        memory: a :class:`~remem.Memory` (or :class:`~remem.AsyncMemory`); or pass ``path=``/``embedder=``.
        tenant: the remem tenant all items live in (a hard partition; default ``"langgraph"``).
        scope_for: maps a namespace (or a search prefix) to the remem :class:`Scope` it lives in, e.g.
            ``lambda ns: Scope(tenant="acme", user=ns[1] if len(ns) > 1 else None)``. It must return, for a
            prefix, a scope that contains every namespace below it (``scope_for(())`` covers the whole store).
            Scope labels are stored as given (they are how records are found), so a label the redactor would
            rewrite (a key, or PII with ``pii=True``) is refused there: hash such a label in ``scope_for``.
        index: LangGraph ``IndexConfig``: ``embed`` (a LangChain ``Embeddings``, a sync or async function of a
            list of texts, or a ``"provider:model"`` string for LangChain's ``init_embeddings``), ``dims`` and
            ``fields`` (``text_fields``, SqliteStore's name, is read too). With ``embed``, the store's vectors
            are those embeddings' (recorded in the store: reopening it with other ones is an
            ``EmbedderMismatchError``) and ``score`` is LangGraph's; without it, remem's embedder
            (``embedder=``) does the dense part of recall.
        ttl: LangGraph ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``, ``sweep_interval_minutes``).
        fill_unmatched: with ``query=``, top up to ``limit`` with in-prefix items the query did not match, like
            a vector store always returning its nearest neighbours: scored and ranked with the others under
            ``index["embed"]``, else (and for items with no vector) ``score=None`` after every scored item.
        order: with ``index["embed"]``, how a query's matches are ordered: ``"score"`` (the default, LangGraph's:
            by ``score``) or ``"recall"`` (remem's hybrid order: words, identifiers and vectors fused; each item
            still carries its LangGraph ``score``, so scores are then not in order). On LoCoMo, ``"recall"``
            finds an evidence turn in the top 10 for about twice as many questions
            (``python -m remem.bench.bench_langgraph_store``).

    Labels and keys that look like secrets (or PII, with ``Memory(pii=True)``) work as usual for put, get,
    delete, prefix search and namespace matching, but are stored redacted: results carry the caller's own
    labels where the request named them and ``[REDACTED:<kind>]`` elsewhere (a search over ``("users",)``
    returns ``("users", "[REDACTED:phone]")``; the clear value is not stored anywhere to recover it from).
    """

    supports_ttl: bool = True

    def __init__(self, memory: Memory | AsyncMemory | None = None, *, path: str | None = None,
                 embedder: str | None = None, tenant: str | None = "langgraph",
                 scope_for: NamespaceScope | None = None, index: Mapping[str, Any] | None = None,
                 ttl: TTLConfig | None = None, kind: str = "note", fill_unmatched: bool = True,
                 order: Literal["score", "recall"] = "score") -> None:
        if isinstance(memory, AsyncMemory):
            memory = memory.sync
        self.index_config = dict(index) if index else None
        cfg = self.index_config or {}
        self._embedder: IndexEmbedder | None = index_embedder(cfg) if cfg.get("embed") is not None else None
        if self._embedder is not None and embedder is not None:
            raise ValueError("pass either index={'embed': ...} (LangGraph's embeddings) or embedder= (a remem "
                             "embedder), not both")
        if memory is not None and self._embedder is not None:
            self._embedder = _same_embedder(memory, self._embedder)
        self.memory: Memory = memory if memory is not None else self._open(path, embedder)
        self._owns_memory = memory is None
        self.tenant = tenant
        self._scope_for = scope_for
        fields = cfg.get("fields") or cfg.get("text_fields")
        if isinstance(fields, str):
            fields = [fields]
        self.fields: list[str] = list(fields) if fields else ["$"]
        self.ttl_config = ttl
        self.kind = kind
        self.fill_unmatched = fill_unmatched
        if order not in ("score", "recall"):
            raise ValueError(f"order must be 'score' (LangGraph's) or 'recall' (remem's), got {order!r}")
        self.order = order
        self._lock = threading.RLock()
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    def _open(self, path: str | None, embedder: str | None) -> Memory:
        try:
            return Memory(path=path, embedder=self._embedder if self._embedder is not None else embedder)
        except EmbedderMismatchError as exc:
            raise EmbedderMismatchError(
                f"{exc} For a RememStore: give index['embed'] the embeddings the store was built with (its "
                f"vectors only compare with theirs), or leave 'embed' out if remem's own embedder built it.") from exc

    @property
    def embeddings(self) -> Any:
        """The LangChain ``Embeddings`` from ``index["embed"]`` (None without one), as on LangGraph's stores."""
        return self._embedder.embeddings if self._embedder is not None else None

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order (a put is visible to the ops after it)."""
        ops = list(ops)
        self._embed_puts(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, (GetOp, PutOp, SearchOp)):
                _validate_labels(op.namespace_prefix if isinstance(op, SearchOp) else op.namespace)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _embed_puts(self, ops: Sequence[Op]) -> None:
        """Embed every text the batch's puts index in one batched call (cached for the puts themselves)."""
        if self._embedder is None:
            return
        texts: list[str] = []
        for op in ops:
            if isinstance(op, PutOp) and isinstance(op.value, Mapping):
                parts = self._texts(_jsonable(op.value), op.index)
                texts.extend(parts)
                texts.append(self._redact("\n".join(parts)[:MAX_TEXT_CHARS].strip()))
        if texts:
            self._embedder.warm([t for t in texts if t])

    def _redact(self, text: str) -> str:
        """What remem's core stores and embeds for a text (secrets, and PII with ``pii=True``, redacted)."""
        settings = self.memory.settings
        if not settings.redact or not text:
            return text
        from ...core.redact.redactor import configured

        return configured(settings.pii).redact(text).text

    # ------------------------------------------------------------------ mapping
    def scope_for(self, namespace: tuple[str, ...]) -> Scope:
        if self._scope_for is not None:
            return self._scope_for(tuple(namespace))
        return Scope(tenant=self.tenant)

    def _texts(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> list[str]:
        if index is False:
            return []
        paths = list(index) if index else self.fields
        texts: list[str] = []
        for path in paths:
            try:
                found = get_text_at_path(value, path)
            except Exception:  # noqa: BLE001 - a malformed path indexes nothing, like LangGraph's stores
                continue
            texts.extend(self._redact(t) for t in found if t and t.strip())
        return texts

    def _base_where(self, prefix: tuple[str, ...], now: float) -> dict[str, Any]:
        where: dict[str, Any] = {"lg_expires_at": {"$gt": now}}
        if prefix:
            where["lg_prefix_h"] = _ns_digest(prefix)
        return where

    # ------------------------------------------------------------------ operations
    def _records(self, namespace: tuple[str, ...], key: str, now: float | None) -> list[MemoryRecord]:
        """The memories holding (namespace, key), newest first (normally one); ``now`` given: unexpired only."""
        where: dict[str, Any] = {"lg_id_h": _item_digest(namespace, key)}
        if now is not None:
            where["lg_expires_at"] = {"$gt": now}
        return self.memory.list(scope=self.scope_for(namespace), where=where, limit=8)

    def _get(self, op: GetOp) -> Item | None:
        recs = self._records(op.namespace, op.key, time.time())
        if not recs:
            return None
        if op.refresh_ttl:
            self._refresh(recs[:1])
        return _item(recs[0], tuple(op.namespace), str(op.key))

    def _put(self, op: PutOp) -> None:
        with self._lock:
            self._put_locked(op)

    def _put_locked(self, op: PutOp) -> None:
        mem = self.memory
        now = time.time()
        existing = self._records(op.namespace, op.key, None)
        live = [r for r in existing if not _expired(r, now)]
        if op.value is None or not live:
            for rec in existing:  # delete, or clear expired leftovers before a fresh put
                mem.forget(rec.id, scope=rec.scope)
            if op.value is None:
                return
        if not isinstance(op.value, Mapping):
            raise TypeError(f"store values must be dicts, got {type(op.value).__name__}")
        value = _jsonable(op.value)
        texts = self._texts(value, op.index)
        ns_text = ".".join(op.namespace)
        text = "\n".join(texts)[:MAX_TEXT_CHARS].strip() or f"{ns_text} {op.key}"[:MAX_TEXT_CHARS]
        ttl = op.ttl
        ns = tuple(op.namespace)
        item_h = _item_digest(ns, op.key)
        meta = {
            "lg_ns": ns_text,
            "lg_labels": list(ns),
            "lg_prefixes": [".".join(ns[:i]) for i in range(1, len(ns) + 1)],
            "lg_depth": len(ns),
            "lg_key": str(op.key),
            "lg_id_h": item_h,
            "lg_ns_h": _ns_digest(ns),
            "lg_prefix_h": [_ns_digest(ns[:i]) for i in range(1, len(ns) + 1)],
            "lg_label_h": [_label_digest(label) for label in ns],
            "lg_value": value,
            "lg_indexed": "yes" if texts else "no",
            "lg_vec": "",
            "lg_ttl": ttl,
            "lg_expires_at": now + float(ttl) * 60.0 if ttl is not None else FOREVER,
            "lg_updated_at": now,
        }
        if self._embedder is not None and texts:
            meta["lg_vec"] = "".join(_fitting(self._embedder.vectors(texts), meta))
        if live:
            rec = mem.update(live[0].id, text=text, metadata=meta, scope=live[0].scope)
            for extra in live[1:]:  # a concurrent first put from another process: keep one
                mem.forget(extra.id, scope=extra.scope)
        else:
            rec = mem.add(text, scope=self.scope_for(op.namespace), kind=self.kind, metadata=meta,
                          source="langgraph-store", dedupe=False)
        stored = getattr(rec, "metadata", None)
        if isinstance(stored, Mapping) and stored.get("lg_id_h") not in (None, item_h):
            log.warning("a redaction rule rewrote the lookup digest of a store item; it cannot be found by key "
                        "(check the Memory's extra redaction patterns)")
        if isinstance(stored, Mapping) and stored.get("lg_vec") not in (None, meta["lg_vec"]):
            log.warning("a redaction rule rewrote the vectors of a store item; its score is what is left of them "
                        "(check the Memory's extra redaction patterns)")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        limit, offset = max(0, int(op.limit)), max(0, int(op.offset))
        if limit == 0:
            return []
        now = time.time()
        prefix = tuple(op.namespace_prefix)
        scope = self.scope_for(prefix)
        store_filter.check(op.filter)
        where, exact = store_filter.pushdown(op.filter)
        where.update(self._base_where(prefix, now))
        check = (lambda rec: store_filter.matches(rec.metadata.get("lg_value") or {}, op.filter)) \
            if op.filter else None
        need = offset + limit
        ranked: list[tuple[MemoryRecord, float | None]] = []
        query = op.query.strip() if isinstance(op.query, str) else ""
        if query:
            n = max(20, need * 2)
            while True:
                hits = self.memory.search(query, scope=scope, where={**where, "lg_indexed": "yes"}, limit=n,
                                          reinforce=False)
                ranked = [(h.record, h.score) for h in hits if check is None or check(h.record)]
                if len(ranked) >= need or len(hits) < n:
                    break
                n *= 4
            if self._embedder is None or self.order == "recall":
                ranked = ranked[:need]
        matched = len(ranked)
        if not query or (self.fill_unmatched and len(ranked) < need):
            seen = {rec.id for rec, _ in ranked}
            rest = self._scan(scope, where, check, need - len(ranked) + len(seen), exact)
            ranked.extend((rec, None) for rec in rest if rec.id not in seen)
        if query and self._embedder is not None:
            qvec = self._embedder.query_vector(query)
            scored = [(rec, best_cosine(qvec, rec.metadata.get("lg_vec"))) for rec, _ in ranked]
            if self.order == "recall":  # the matches as remem ranked them, then the rest by score
                ranked = scored[:matched] + _by_score(scored[matched:])
            else:
                ranked = _by_score(scored)
        page = ranked[offset:offset + limit]
        if op.refresh_ttl:
            self._refresh([rec for rec, _ in page])
        return [_search_item(rec, score, prefix) for rec, score in page]

    def _scan(self, scope: Scope, where: dict[str, Any], check: Callable[[MemoryRecord], bool] | None, need: int,
              exact: bool) -> list[MemoryRecord]:
        """Items matching ``where`` and ``check``, newest first, at least ``need`` of them when there are.

        ``where`` may hold more than ``check`` does (Qdrant matches a value inside a list), so ``check`` always
        has the last word; when ``exact``, it seldom drops anything and one read is usually enough."""
        if check is None:
            return self.memory.list(scope=scope, where=where, limit=max(1, need))
        n = max(need + 8, need * 2) if exact else max(64, need * 2)
        while True:
            recs = self.memory.list(scope=scope, where=where, limit=n)
            kept = [r for r in recs if check(r)]
            if len(kept) >= need or len(recs) < n:
                return kept
            n *= 4

    def _all(self, scope: Scope, where: dict[str, Any]) -> list[MemoryRecord]:
        n = 1024
        while True:
            recs = self.memory.list(scope=scope, where=where, limit=n)
            if len(recs) < n:
                return recs
            n *= 8

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for cond in op.match_conditions or ():
            if cond.match_type == "prefix":
                fixed = []
                for label in cond.path:
                    if label == "*":
                        break
                    fixed.append(label)
                prefix = tuple(fixed)
        recs = self._all(self.scope_for(prefix), self._base_where(prefix, time.time()))
        found: set[tuple[str, ...]] = set()
        for rec in recs:
            labels = _labels(rec)
            hashes = rec.metadata.get("lg_label_h")
            hashes = list(hashes) if isinstance(hashes, list) and len(hashes) == len(labels) else None
            for cond in op.match_conditions or ():
                known = _ns_matches(cond.match_type, cond.path, labels, hashes)
                if known is None:
                    break
                for i, label in known.items():  # the caller's clear label where the stored one is redacted
                    labels[i] = label
            else:
                ns = tuple(labels)
                found.add(ns[:op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset:op.offset + op.limit]

    # ------------------------------------------------------------------ TTL
    def _refresh(self, recs: Sequence[MemoryRecord]) -> None:
        """Push the expiry of TTL items forward on read (the item's ``updated_at`` is its own, so it stays)."""
        now = time.time()
        for rec in recs:
            ttl = rec.metadata.get("lg_ttl")
            if ttl is None:
                continue
            try:
                self.memory.update(rec.id, metadata={"lg_expires_at": now + float(ttl) * 60.0}, scope=rec.scope)
            except Exception as exc:  # noqa: BLE001 - a failed refresh must not fail the read
                log.warning("TTL refresh failed for %s: %s", rec.id, exc)

    def sweep_ttl(self) -> int:
        """Delete every expired item now; returns how many were deleted."""
        res = self.memory.forget(scope=self.scope_for(()), where={"lg_expires_at": {"$lte": time.time()}},
                                 dry_run=False)
        return int(getattr(res, "count", 0))

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread:
        """Sweep expired items in a daemon thread every ``sweep_interval_minutes`` (default from ``ttl``, or 5)."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return self._sweeper
        interval = 60.0 * float(sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
                                or 5)
        self._sweeper_stop.clear()

        def loop() -> None:
            while not self._sweeper_stop.wait(interval):
                try:
                    self.sweep_ttl()
                except Exception as exc:  # noqa: BLE001
                    log.warning("TTL sweep failed: %s", exc)

        self._sweeper = threading.Thread(target=loop, name="remem-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return self._sweeper

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        self._sweeper_stop.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        return not self._sweeper.is_alive()

    def close(self) -> None:
        self.stop_ttl_sweeper(1.0)
        if self._owns_memory:
            self.memory.close()


# ---------------------------------------------------------------------- helpers
def _same_embedder(memory: Memory, wanted: IndexEmbedder) -> IndexEmbedder:
    """The embedder a given ``Memory`` must already use for ``index["embed"]`` (its vectors are the store's)."""
    have = memory.embedder
    if getattr(have, "name", None) != wanted.name:
        raise ValueError(f"this Memory embeds with {getattr(have, 'name', have)!r}, but index['embed'] is "
                         f"{wanted.name!r}: open it with Memory(..., embedder=index_embedder(index)) (from "
                         f"remem.integrations.langgraph.store_embed), or pass path= instead of a Memory")
    return have if isinstance(have, IndexEmbedder) else wanted


def _by_score(pairs: list[tuple[MemoryRecord, float | None]]) -> list[tuple[MemoryRecord, float | None]]:
    """Best score first; the items with no score after all the others, in the order they came."""
    return sorted(pairs, key=lambda pair: (pair[1] is None, -(pair[1] or 0.0)))


def _fitting(vectors: list[str], meta: Mapping[str, Any]) -> list[str]:
    """As many of an item's packed vectors as its metadata has room for (remem caps metadata at 64 KiB; 1536
    dimensions take 6 KiB a vector)."""
    room = MAX_METADATA_BYTES - len(json.dumps(dict(meta), ensure_ascii=False)) - _VECTOR_ROOM
    kept: list[str] = []
    for vec in vectors:
        room -= len(vec)
        if room < 0:
            log.warning("an item indexes %d texts; the vectors of %d fit in its metadata (the others still "
                        "match by words and through the item's whole-text vector; its score is the best of the "
                        "kept ones)", len(vectors), len(kept))
            break
        kept.append(vec)
    return kept


def _validate_labels(namespace: tuple[str, ...]) -> None:
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"invalid namespace label {label!r} in {namespace}: labels must be "
                                        f"non-empty strings without '.'")


def _jsonable(value: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(value), default=_json_default, ensure_ascii=False))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (_dt.datetime, _dt.date)):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    return str(obj)


def _expired(rec: MemoryRecord, now: float) -> bool:
    exp = rec.metadata.get("lg_expires_at")
    return exp is not None and float(exp) <= now


def _updated_at(rec: MemoryRecord) -> _dt.datetime:
    ts = rec.metadata.get("lg_updated_at")
    if ts is None:
        return rec.updated_at
    # a new item is stamped just before it is stored: never earlier than its own creation
    return max(_dt.datetime.fromtimestamp(float(ts), tz=_dt.timezone.utc), rec.created_at)


_HEX_TO_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")


def _digest(kind: str, *parts: Any) -> str:
    """sha256 of ``parts`` as 64 letters a-p: no digit runs for PII rules, no separators or digits for secret
    and entropy rules, so remem's redactor leaves it as written (plain hex trips the credit-card rule)."""
    raw = json.dumps([kind, *parts], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest().translate(_HEX_TO_LETTERS)


def _ns_digest(namespace: Sequence[str]) -> str:
    return _digest("ns", ".".join(namespace))


def _item_digest(namespace: Sequence[str], key: Any) -> str:
    return _digest("item", ".".join(namespace), str(key))


@lru_cache(maxsize=1024)
def _label_digest(label: str) -> str:
    return _digest("label", label)


def _labels(rec: MemoryRecord) -> list[str]:
    """The stored namespace labels (each redacted on its own, so a placeholder never swallows a neighbour)."""
    labels = rec.metadata.get("lg_labels")
    if isinstance(labels, list) and labels:
        return [str(label) for label in labels]
    return str(rec.metadata.get("lg_ns", "")).split(".")


def _item(rec: MemoryRecord, namespace: tuple[str, ...], key: str) -> Item:
    """The item as the caller named it (the stored namespace/key may be redacted)."""
    return Item(value=dict(rec.metadata.get("lg_value") or {}), key=key, namespace=namespace,
                created_at=rec.created_at, updated_at=_updated_at(rec))


def _search_item(rec: MemoryRecord, score: float | None, prefix: tuple[str, ...]) -> SearchItem:
    """A search hit; its first ``len(prefix)`` labels are the caller's (the prefix digest matched them), the
    rest and the key are what was stored: ``[REDACTED:<kind>]`` where a secret or PII was, by design."""
    labels = _labels(rec)
    namespace = tuple(prefix) + tuple(labels[len(prefix):])
    return SearchItem(namespace=namespace, key=str(rec.metadata.get("lg_key")),
                      value=dict(rec.metadata.get("lg_value") or {}), created_at=rec.created_at,
                      updated_at=_updated_at(rec), score=float(score) if score is not None else None)


def _ns_matches(match_type: str, path: Sequence[str], labels: Sequence[str],
                hashes: Sequence[str] | None) -> dict[int, str] | None:
    """None if ``labels`` fail the condition, else {position: the condition's label} for every position it
    named; a label matches by its digest too, so a redacted stored label still matches the caller's clear one."""
    n = len(labels)
    if n < len(path):
        return None
    positions = range(len(path)) if match_type == "prefix" else range(n - len(path), n)
    known: dict[int, str] = {}
    for i, p in zip(positions, path):
        if p == "*":
            continue
        if labels[i] != p and (hashes is None or hashes[i] != _label_digest(p)):
            return None
        known[i] = p
    return known


__all__ = ["RememStore"]
