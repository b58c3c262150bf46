"""What a capture is before the distiller runs: redacted, read into turns, its session named, and what an
earlier capture of the session already covered (or a forget took out) set aside.

:func:`prepare` is the first step of :func:`remem.core.distill.pipeline.remember`. It reads how far the
session's summary says earlier captures got (the hashes of the turns they covered), so a capture goes on from
there, and it sets down the same mark for the next one.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .capture_redaction import redact_capture
from .conversation import Turn, check_messages, conversation_turns, to_plain_messages
from .episodes import all_stored, assign_ids
from .forgotten import forgotten_ids, unsaid
from .result import RememberResult
from .summaries import session_summaries
from ..types import MemoryRecord, Scope

log = logging.getLogger("remem.distill")


def _redactor(pii: bool | None) -> Any:
    """The configured redactor, imported when a capture runs (not with the store)."""
    from ..redact.redactor import configured

    return configured(bool(pii))


def _turn_hash(turns: Sequence[Turn]) -> str:
    """What a session summary keeps of the turns it covered, to tell a continuation from another capture."""
    h = hashlib.sha256()
    for t in turns:
        h.update(f"{t.role}\x1f{t.name or ''}\x1f{t.text}\x1e".encode("utf-8", "replace"))
    return h.hexdigest()[:24]


def derive_session_id(turns: Sequence[Turn]) -> str:
    """A stable id for a conversation without one: the hash of its first user message (a growing
    conversation keeps its id, so its summary is updated rather than duplicated)."""
    first = next((t for t in turns if t.role == "user"), turns[0] if turns else Turn("user", ""))
    return "auto-" + hashlib.sha256(first.text.strip().encode("utf-8", "replace")).hexdigest()[:16]


@dataclass
class Prep:
    """Everything decided before the distiller runs (redaction, session, what is new)."""

    scope: Scope
    session: str
    messages: list[dict[str, Any]]
    turns: list[Turn]
    new_turns: list[Turn]
    continuation: bool
    previous: MemoryRecord | None
    result: RememberResult
    metadata: dict[str, Any]
    source: str
    tags: tuple[str, ...]
    redactor: Any
    offset: int = 0  # session position of the capture's first message
    keep_episodes: bool = True
    mark: tuple[int, int, str, str] = (0, 0, "", "")  # the capture as sent: messages, turns, their hashes


def prepare(engine: Any, messages: Any, scope: Any, session: str | None, pii: bool | None,
             metadata: Mapping[str, Any] | None, source: str | None, tags: Iterable[str] | None,
             episodes: bool = True) -> Prep:
    """The capture redacted and read into turns, with what is new in it: nothing is stored or sent before this."""
    scope = Scope.coerce(scope)
    redactor = _redactor(engine.settings.pii if pii is None else pii)  # None: as the store redacts
    plain = to_plain_messages(messages)
    for problem in check_messages(plain):  # a role it cannot read raises here, before anything is stored
        log.warning("remember(): %s", problem)
    capture = redact_capture(redactor, plain, metadata, source, tags)  # every later step reads only this
    redacted = capture.messages
    turns = conversation_turns(redacted)
    sid = redactor.redact(session).text if session else scope.session or derive_session_id(turns)  # as stored
    turns = assign_ids(turns, sid)
    result = RememberResult(redactions=capture.counts, session=sid)
    previous, notes = session_summaries(engine, scope, sid) if turns else (None, [])
    gone = forgotten_ids(previous, *notes)  # messages forgotten since: a capture sending them again is not heard
    new_turns, continuation = list(turns), False
    if previous is not None:
        meta = previous.metadata
        covered = int(meta.get("covered") or 0)
        if 0 < covered <= len(turns) and meta.get("prefix") == _turn_hash(turns[:covered]):
            new_turns, continuation = list(turns[covered:]), True
        elif covered > len(turns) and meta.get("head") == _turn_hash(turns[:1]) and all_stored(
                engine, scope, sid, [t for t in turns if t.id not in gone]):
            new_turns, continuation = [], True  # an older snapshot of a session already distilled further
    offset = 0 if continuation or previous is None else int(previous.metadata.get("messages") or 0)
    mark = (len(redacted), len(turns), _turn_hash(turns), _turn_hash(turns[:1]))  # where a next capture goes on
    turns, new_turns, redacted = unsaid(turns, new_turns, redacted, gone)
    return Prep(scope=scope, session=sid, messages=redacted, turns=turns, new_turns=new_turns,
                 continuation=continuation, previous=previous, result=result, metadata=capture.metadata,
                 source=capture.source or "remember", tags=capture.tags, redactor=redactor, offset=offset,
                 keep_episodes=episodes, mark=mark)
