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
import hashlib
import json
import logging
import re
import threading
import time
from functools import lru_cache
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, Op, PutOp,
                                  Result, SearchItem, SearchOp, TTLConfig)
from langgraph.store.base.embed import get_text_at_path

from ...core.aio import AsyncMemory
from ...core.store.engine import MAX_TEXT_CHARS
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
            Scope labels are stored as given (they are how records are found), so a label the redactor would
            rewrite (a key, or PII with ``pii=True``) is refused there: hash such a label in ``scope_for``.
        index: LangGraph ``IndexConfig``; only ``fields`` is used (remem's own embedder does the embedding).
        ttl: LangGraph ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``, ``sweep_interval_minutes``).
        fill_unmatched: with ``query=``, top up to ``limit`` with in-prefix items the query did not match
            (``score=None``), like a vector store always returning its nearest neighbours.

    Labels and keys that look like secrets (or PII, with ``Memory(pii=True)``) work as usual for put, get,
    delete, prefix search and namespace matching, but are stored redacted: results carry the caller's own
    labels where the request named them and ``[REDACTED:<kind>]`` elsewhere (a search over ``("users",)``
    returns ``("users", "[REDACTED:phone]")``; the clear value is not stored anywhere to recover it from).
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
            "lg_ttl": ttl,
            "lg_expires_at": now + float(ttl) * 60.0 if ttl is not None else FOREVER,
            "lg_updated_at": now,
        }
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
        return [_search_item(rec, score, prefix) for rec, score in page]

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
