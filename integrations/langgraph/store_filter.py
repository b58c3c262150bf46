"""LangGraph ``filter=`` semantics for :class:`~remem.integrations.langgraph.store.RememStore`.

A filter maps a key to a value or to operators. A key is a path into the stored value: dots separate levels
(``"user.access-level"`` is ``value["user"]["access-level"]``, as in LangGraph's SQLite and Postgres stores);
a level's name may hold any other character (hyphens, leading digits, spaces, quotes). A value matches by
equality (a dict: the keys it names, recursively; a list: element by element; ``True`` never equals ``1``).
Operators are LangGraph's: ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``. Ranges compare numbers as
numbers and dates/ISO timestamps as datetimes (PostgresStore compared them as text, and InMemoryStore raises when
an item lacks the field: here a missing or incomparable field simply does not match; ``$ne`` matches it).

What Qdrant evaluates exactly (string equality and numeric ranges on plain keys) is pushed into the query
(:func:`pushdown`); every result is re-checked in Python (:func:`matches`), so the pushed part only ever narrows
what is read, never what matches, on Qdrant Edge and on a Qdrant server alike.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Mapping

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_RANGE = ("$gt", "$gte", "$lt", "$lte")
_PLAIN = re.compile(r"^[A-Za-z0-9_-]+$")  # a level name Qdrant Edge and qdrant-client both read as is (tested)
MISSING = object()


def check(flt: Mapping[str, Any] | None) -> None:
    """Refuse a malformed filter up front (a clear error, instead of matching nothing)."""
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise TypeError(f"filter must be a dict such as {{'color': 'red'}}, got {type(flt).__name__}")
    for key, cond in flt.items():
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            raise ValueError(f"Invalid filter key {key!r}: a path such as 'user.access-level' (no empty level)")
        _check_ops(key, cond)


def _check_ops(key: str, cond: Any) -> None:
    if isinstance(cond, Mapping):
        ops = [k for k in cond if isinstance(k, str) and k.startswith("$")]
        if ops:
            bad = sorted(set(ops) - set(OPERATORS))
            if bad or len(ops) != len(cond):
                raise ValueError(f"unsupported filter operator(s) {bad or sorted(map(str, cond))} for {key!r}; "
                                 f"use {', '.join(OPERATORS)}")
            return
        for sub, v in cond.items():
            _check_ops(f"{key}.{sub}", v)


def lookup(value: Any, key: str) -> Any:
    """The value at a dotted path, or :data:`MISSING`."""
    node = value
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return MISSING
        node = node[part]
    return node


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def pushdown(flt: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """The part of a filter Qdrant evaluates exactly, as a remem ``where``; and whether that is all of it.

    Only string equality and numeric ranges on keys whose levels are plain names go down (on unindexed payload
    fields, Qdrant Edge matched neither ``True`` nor the integer 3 against a stored 3.0); nested dicts, lists,
    bools, ``$ne``, datetime ranges and unusual key characters are checked in Python afterwards.
    """
    where: dict[str, Any] = {}
    exact = True
    for key, cond in (flt or {}).items():
        if not isinstance(key, str) or not all(_PLAIN.match(part) for part in key.split(".")):
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
            elif op in _RANGE and _is_number(bound) and bound == bound:  # NaN matches nothing: checked here
                sub[op] = float(bound)
            else:
                exact = False
        if sub:
            where[field] = sub
    return where, exact


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return all(_compare(lookup(value, k), cond) for k, cond in (flt or {}).items())


def _compare(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond):
        return all(_apply(actual, op, bound) for op, bound in cond.items())
    return _equal(actual, cond)


def _equal(actual: Any, expected: Any) -> bool:
    if actual is MISSING:
        return False
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(_compare(actual.get(k, MISSING), v) for k, v in expected.items())
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
        raise ValueError(f"unsupported filter operator {op!r}; use {', '.join(OPERATORS)}")
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
    if actual is MISSING or actual is None:
        return None
    if _is_number(actual) and _is_number(bound):
        return float(actual), float(bound)
    da, db = _as_datetime(actual), _as_datetime(bound)
    if da is not None and db is not None:
        return da, db
    if isinstance(actual, str) and isinstance(bound, str) and da is None and db is None:
        return actual, bound
    return None


__all__ = ["MISSING", "OPERATORS", "check", "lookup", "matches", "pushdown"]
