"""``RememStore``: a LangGraph ``BaseStore`` whose items live in remem (embedded Qdrant, hybrid recall).

Each LangGraph item ``(namespace, key, value)`` is one remem memory:

* ``put`` is an upsert: the memory holding (namespace, key) is found by metadata and updated (creation time
  kept), else added; only public ``Memory`` methods are used, so the store works the same on an in-process
  store, through the local remem service, or on a Qdrant server;
* its metadata holds the value (``lg_value``), the key, the dot-joined namespace and the list of every
  namespace prefix (``lg_prefixes``), so a prefix search is one filter *inside* the Qdrant query, never a
  post-filter; ``lg_expires_at`` carries the TTL and is filtered on every read;
* its text (what BM25 and the dense model read) is the item's indexed fields (LangGraph ``IndexConfig``
  ``fields`` semantics: default the whole value as JSON; ``index=False`` keeps the item listable and filterable
  but never matched by a query).

``filter=`` supports exact values, nested dicts and ``$eq/$ne/$gt/$gte/$lt/$lte``. Ranges compare numbers as
numbers and dates/ISO timestamps as datetimes (PostgresStore compared them as text, and InMemoryStore raises
when an item lacks the field: here a missing or incomparable field simply does not match). Conditions Qdrant can
evaluate exactly (string equality, numeric ranges) are pushed into the query; every result is re-checked.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import re
import threading
import time
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, Op, PutOp,
                                  Result, SearchItem, SearchOp, TTLConfig)
from langgraph.store.base.embed import get_text_at_path

from ...core.aio import AsyncMemory
from ...core.engine import MAX_TEXT_CHARS
from ...core.memory import Memory
from ...core.types import FOREVER, MemoryRecord, Scope

log = logging.getLogger("remem.langgraph.store")

_SIMPLE_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")
_RANGE = ("$gt", "$gte", "$lt", "$lte")
_MISSING = object()

NamespaceScope = Callable[[tuple[str, ...]], Scope]


class RememStore(BaseStore):
    """LangGraph long-term store on remem. Sync ``batch`` and async ``abatch`` (store work off the event loop).

    Args:
        memory: a :class:`~remem.Memory` (or :class:`~remem.AsyncMemory`); or pass ``path=``/``embedder=``.
        tenant: the remem tenant all items live in (a hard partition; default ``"langgraph"``).
        scope_for: maps a namespace (or a search prefix) to the remem :class:`Scope` it lives in, e.g.
            ``lambda ns: Scope(tenant="acme", user=ns[1] if len(ns) > 1 else None)``. It must return, for a
            prefix, a scope that contains every namespace below it (``scope_for(())`` covers the whole store).
        index: LangGraph ``IndexConfig``; only ``fields`` is used (remem's own embedder does the embedding).
        ttl: LangGraph ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``, ``sweep_interval_minutes``).
        fill_unmatched: with ``query=``, top up to ``limit`` with in-prefix items the query did not match
            (``score=None``), like a vector store always returning its nearest neighbours.
    """

    supports_ttl: bool = True

    def __init__(self, memory: Memory | AsyncMemory | None = None, *, path: str | None = None,
                 embedder: str | None = None, tenant: str | None = "langgraph",
                 scope_for: NamespaceScope | None = None, index: Mapping[str, Any] | None = None,
                 ttl: TTLConfig | None = None, kind: str = "note", fill_unmatched: bool = True) -> None:
        if isinstance(memory, AsyncMemory):
            memory = memory.sync
        self.memory: Memory = memory if memory is not None else Memory(path=path, embedder=embedder)
        self._owns_memory = memory is None
        self.tenant = tenant
        self._scope_for = scope_for
        self.index_config = dict(index) if index else None
        fields = (self.index_config or {}).get("fields")
        self.fields: list[str] = list(fields) if fields else ["$"]
        self.ttl_config = ttl
        self.kind = kind
        self.fill_unmatched = fill_unmatched
        self._lock = threading.RLock()
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order (a put is visible to the ops after it)."""
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
                texts.extend(t for t in get_text_at_path(value, path) if t and t.strip())
            except Exception:  # noqa: BLE001 - a malformed path indexes nothing, like LangGraph's stores
                continue
        return texts

    def _base_where(self, prefix: tuple[str, ...], now: float) -> dict[str, Any]:
        where: dict[str, Any] = {"lg_expires_at": {"$gt": now}}
        if prefix:
            where["lg_prefixes"] = ".".join(prefix)
        return where

    # ------------------------------------------------------------------ operations
    def _records(self, namespace: tuple[str, ...], key: str, now: float | None) -> list[MemoryRecord]:
        """The memories holding (namespace, key), newest first (normally one); ``now`` given: unexpired only."""
        where: dict[str, Any] = {"lg_ns": ".".join(namespace), "lg_key": str(key)}
        if now is not None:
            where["lg_expires_at"] = {"$gt": now}
        return self.memory.list(scope=self.scope_for(namespace), where=where, limit=8)

    def _get(self, op: GetOp) -> Item | None:
        recs = self._records(op.namespace, op.key, time.time())
        if not recs:
            return None
        if op.refresh_ttl:
            self._refresh(recs[:1])
        return _item(recs[0])

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
                mem.forget(rec.id)
            if op.value is None:
                return
        if not isinstance(op.value, Mapping):
            raise TypeError(f"store values must be dicts, got {type(op.value).__name__}")
        value = _jsonable(op.value)
        texts = self._texts(value, op.index)
        ns_text = ".".join(op.namespace)
        text = "\n".join(texts)[:MAX_TEXT_CHARS].strip() or f"{ns_text} {op.key}"[:MAX_TEXT_CHARS]
        ttl = op.ttl
        meta = {
            "lg_ns": ns_text,
            "lg_prefixes": [".".join(op.namespace[:i]) for i in range(1, len(op.namespace) + 1)],
            "lg_depth": len(op.namespace),
            "lg_key": str(op.key),
            "lg_value": value,
            "lg_indexed": "yes" if texts else "no",
            "lg_ttl": ttl,
            "lg_expires_at": now + float(ttl) * 60.0 if ttl is not None else FOREVER,
            "lg_updated_at": now,
        }
        if live:
            mem.update(live[0].id, text=text, metadata=meta)
            for extra in live[1:]:  # a concurrent first put from another process: keep one
                mem.forget(extra.id)
        else:
            mem.add(text, scope=self.scope_for(op.namespace), kind=self.kind, metadata=meta,
                    source="langgraph-store", dedupe=False)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        limit, offset = max(0, int(op.limit)), max(0, int(op.offset))
        if limit == 0:
            return []
        now = time.time()
        prefix = tuple(op.namespace_prefix)
        scope = self.scope_for(prefix)
        where, exact = _pushdown(op.filter)
        where.update(self._base_where(prefix, now))
        check = (lambda rec: _matches(rec.metadata.get("lg_value") or {}, op.filter)) if op.filter else None
        need = offset + limit
        ranked: list[tuple[MemoryRecord, float | None]] = []
        query = op.query.strip() if isinstance(op.query, str) else ""
        if query:
            n = max(20, need * 2)
            while True:
                hits = self.memory.search(query, scope=scope, where={**where, "lg_indexed": "yes"}, limit=n,
                                          reinforce=False)
                ranked = [(h.record, h.score) for h in hits if check is None or check(h.record)]
                if len(ranked) >= need or len(hits) < n or exact:
                    break
                n *= 4
            ranked = ranked[:need]
        if not query or (self.fill_unmatched and len(ranked) < need):
            seen = {rec.id for rec, _ in ranked}
            rest = self._scan(scope, where, check, need - len(ranked) + len(seen), exact)
            ranked.extend((rec, None) for rec in rest if rec.id not in seen)
        page = ranked[offset:offset + limit]
        if op.refresh_ttl:
            self._refresh([rec for rec, _ in page])
        return [_search_item(rec, score) for rec, score in page]

    def _scan(self, scope: Scope, where: dict[str, Any], check: Callable[[MemoryRecord], bool] | None, need: int,
              exact: bool) -> list[MemoryRecord]:
        """Items matching ``where`` (and ``check``), newest first, at least ``need`` of them when there are."""
        if exact or check is None:
            return self.memory.list(scope=scope, where=where, limit=max(1, need))
        n = max(64, need * 2)
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
            ns = tuple(str(rec.metadata.get("lg_ns", "")).split("."))
            if all(_ns_matches(cond.match_type, cond.path, ns) for cond in op.match_conditions or ()):
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
                self.memory.update(rec.id, metadata={"lg_expires_at": now + float(ttl) * 60.0})
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
    return _dt.datetime.fromtimestamp(float(ts), tz=_dt.timezone.utc) if ts is not None else rec.updated_at


def _item(rec: MemoryRecord) -> Item:
    return Item(value=dict(rec.metadata.get("lg_value") or {}), key=str(rec.metadata.get("lg_key")),
                namespace=tuple(str(rec.metadata.get("lg_ns", "")).split(".")), created_at=rec.created_at,
                updated_at=_updated_at(rec))


def _search_item(rec: MemoryRecord, score: float | None) -> SearchItem:
    return SearchItem(namespace=tuple(str(rec.metadata.get("lg_ns", "")).split(".")),
                      key=str(rec.metadata.get("lg_key")), value=dict(rec.metadata.get("lg_value") or {}),
                      created_at=rec.created_at, updated_at=_updated_at(rec),
                      score=float(score) if score is not None else None)


def _ns_matches(match_type: str, path: Sequence[str], ns: tuple[str, ...]) -> bool:
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if match_type == "prefix" else zip(reversed(ns), reversed(path))
    return all(p == "*" or p == label for label, p in pairs)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _pushdown(flt: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """The part of a LangGraph filter Qdrant evaluates exactly, as a remem ``where``; and whether that is all of it.

    Only string equality and numeric ranges go down (on unindexed payload fields, Qdrant Edge matched neither
    ``True`` nor the integer 3 against a stored 3.0); nested dicts, lists, bools, ``$ne`` and datetime ranges are
    checked in Python afterwards.
    """
    where: dict[str, Any] = {}
    exact = True
    for key, cond in (flt or {}).items():
        if not isinstance(key, str) or not _SIMPLE_KEY.match(key):
            exact = False
            continue
        field = f"lg_value.{key}"
        if isinstance(cond, str):
            where[field] = cond
            continue
        if not isinstance(cond, Mapping) or not cond or not all(str(k).startswith("$") for k in cond):
            exact = False
            continue
        sub: dict[str, Any] = {}
        for op, bound in cond.items():
            if op == "$eq" and isinstance(bound, str):
                sub["$eq"] = bound
            elif op in _RANGE and _is_number(bound):
                sub[op] = float(bound)
            else:
                exact = False
        if sub:
            where[field] = sub
    return where, exact


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return all(_compare(value.get(k, _MISSING), cond) for k, cond in (flt or {}).items())


def _compare(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond):
        return all(_apply(actual, op, bound) for op, bound in cond.items())
    return _equal(actual, cond)


def _equal(actual: Any, expected: Any) -> bool:
    if actual is _MISSING:
        return False
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(_compare(actual.get(k, _MISSING), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                and all(_equal(a, e) for a, e in zip(actual, expected)))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(actual == expected)


def _apply(actual: Any, op: str, bound: Any) -> bool:
    if op == "$eq":
        return _equal(actual, bound)
    if op == "$ne":
        return not _equal(actual, bound)
    if op not in _RANGE:
        raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
    pair = _comparable(actual, bound)
    if pair is None:
        return False
    a, b = pair
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _as_datetime(v: Any) -> _dt.datetime | None:
    if isinstance(v, _dt.datetime):
        return v if v.tzinfo else v.replace(tzinfo=_dt.timezone.utc)
    if isinstance(v, _dt.date):
        return _dt.datetime(v.year, v.month, v.day, tzinfo=_dt.timezone.utc)
    if isinstance(v, str) and len(v) >= 8 and v[:4].isdigit() and v[4] == "-":
        try:
            parsed = _dt.datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.timezone.utc)
    return None


def _comparable(actual: Any, bound: Any) -> tuple[Any, Any] | None:
    """Numbers as numbers, dates as datetimes, other strings as strings; anything else (or a mix) is no match."""
    if actual is _MISSING or actual is None:
        return None
    if _is_number(actual) and _is_number(bound):
        return float(actual), float(bound)
    da, db = _as_datetime(actual), _as_datetime(bound)
    if da is not None and db is not None:
        return da, db
    if isinstance(actual, str) and isinstance(bound, str) and da is None and db is None:
        return actual, bound
    return None


__all__ = ["RememStore"]
