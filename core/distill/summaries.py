"""A session's one summary: how it is found, and which messages it stands for.

``remember()`` keeps a single summary per session and updates it in place with each capture (see
:mod:`remem.core.distill.pipeline`). Its ``sources`` are the messages it quotes: the session's user requests and
its last message, across every capture, so a hit on the summary points at messages that said what it says.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..scope import own_records
from ..store.records import SESSION_FORGOTTEN
from ..types import MemoryRecord, Scope

SUMMARY_SOURCES = 16  # message ids a summary names: the session's first requests and its latest ones


def summary_sources(ids: Sequence[str | None]) -> list[str]:
    """The message ids a session summary stands for, in order, each once: the first and the most recent ones
    when there are more than ``SUMMARY_SOURCES`` (what the summary quotes: its first request and its last)."""
    unique = [i for i in dict.fromkeys(ids) if i]
    if len(unique) <= SUMMARY_SOURCES:
        return unique
    head = SUMMARY_SOURCES // 4
    return [*unique[:head], *unique[-(SUMMARY_SOURCES - head):]]


def quoted_messages(meta: Mapping[str, Any]) -> list[str]:
    """The ids of the messages whose words a keyless summary keeps (its ``parts``: the requests it quotes, the
    answer its outcome quotes, those that named a file, command or error it lists), or none when it cannot tell
    (an LLM's summary, or one stored before request ids were kept)."""
    parts = meta.get("parts") or {}
    ids = parts.get("request_ids") or []
    if not ids or not all(ids):
        return []
    return [str(i) for i in dict.fromkeys([*ids, parts.get("outcome_id") or "", *(parts.get("named_in") or [])]) if i]


def find_summary(engine: Any, scope: Scope, session: str) -> MemoryRecord | None:
    """The session's current summary in ``scope``, if there is one."""
    found = engine.list(scope=scope, kind="summary", where=_mine(scope, session), limit=5, include_superseded=False)
    return next((r for r in found if r.superseded_by is None), None)


def session_summaries(engine: Any, scope: Scope, session: str) -> tuple[MemoryRecord | None, list[MemoryRecord]]:
    """The session's current summary in ``scope`` (if there is one), and the notes that forgets of the session
    whole left (:func:`~remem.core.store.derived.hollow`)."""
    where = {**_mine(scope, session), "meta." + SESSION_FORGOTTEN: {"$exists": True}}
    return find_summary(engine, scope, session), engine.list(scope=scope, kind="summary", where=where, limit=100)


def _mine(scope: Scope, session: str) -> dict[str, Any]:
    """The session's own records: not a user's summary of a session of the same name (``own_records``)."""
    return {"meta.session": session, **own_records(scope)}


__all__ = ["SUMMARY_SOURCES", "find_summary", "quoted_messages", "session_summaries", "summary_sources"]
