"""What was forgotten stays forgotten when a capture sends it again.

Apps capture by sending a conversation again: a restarted LangGraph or Pydantic-AI app sends a thread whole, an
adapter resends what a failed capture missed. A message forgotten since (``forget``) is then in the capture once
more. Its session summary notes the ids of the messages forgotten from it (:data:`~remem.core.store.derived.FORGOTTEN`,
ids only), and a capture of the session treats those messages as unsaid: they are not stored again, not distilled,
not quoted in the summary, not in the context of the messages around them, not queued for an LLM. How far the
capture goes (where the summary continues from) is still read from the messages as sent, so the rest of the
capture is handled as it would have been. A session forgotten whole leaves its summary as a note of the same
ids (no words), read the same way (:func:`~remem.core.store.derived.hollow`).

A capture queued for an LLM (:mod:`~remem.core.distill.pending`) is a copy of what was said on disk, so a forget
takes its messages out of the queued captures of their session too (:func:`scrub_queued`).
"""

from __future__ import annotations

from typing import Any, Sequence

from .conversation import Turn, conversation_turns
from .episodes import assign_ids, spoken
from .pending import queue_for
from ..store.derived import FORGOTTEN
from ..types import MemoryRecord, Scope


def forgotten_ids(*summaries: MemoryRecord | None) -> frozenset[str]:
    """The messages forgotten from the session of ``summaries`` (its summary, and the notes of its forgets
    whole), none without them."""
    return frozenset(str(i) for s in summaries if s is not None for i in s.metadata.get(FORGOTTEN) or ())


def unsaid(turns: Sequence[Turn], new_turns: Sequence[Turn], messages: Sequence[dict[str, Any]],
           gone: frozenset[str]) -> tuple[list[Turn], list[Turn], list[dict[str, Any]]]:
    """``turns``, ``new_turns`` and ``messages`` (the capture's, redacted) without the messages ``gone`` names (a
    message in ``messages`` goes when all it said is forgotten). A turn keeps its ``index`` (the message's
    position), so the messages after a forgotten one keep theirs."""
    if not gone:
        return list(turns), list(new_turns), list(messages)
    said: dict[int, list[bool]] = {}  # each message: whether each of its spoken turns is forgotten
    for t in turns:
        if t.role in ("user", "assistant"):
            said.setdefault(t.index, []).append(t.id in gone)
    dropped = {index for index, forgotten in said.items() if all(forgotten)}
    return ([t for t in turns if t.id not in gone], [t for t in new_turns if t.id not in gone],
            [m for i, m in enumerate(messages) if i not in dropped])


def scrub_queued(engine: Any, gone: Sequence[MemoryRecord]) -> int:
    """Take the forgotten messages of ``gone`` (its episodes) out of the captures of their session still queued
    for an LLM in ``engine``'s queue, and drop a capture left with nothing said; returns how many captures changed.
    A capture a worker is distilling right now is left to it: its ``remember`` reads the forget's note
    (:func:`forgotten_ids`)."""
    said: dict[tuple[Scope, str], set[str]] = {}
    for rec in gone:
        session = rec.metadata.get("session")
        if rec.kind == "episode" and isinstance(session, str):
            said.setdefault((rec.scope, session), set()).update(rec.sources)
    queue, changed = queue_for(engine), 0
    for peeked in queue.peek() if said else ():
        data = peeked.data
        try:
            ids = said.get((Scope.coerce(data.get("scope")), data.get("session")))
        except (TypeError, ValueError):  # an entry of an older format: the drain reports it
            continue
        if not ids or not peeked.of_store(engine) or (entry := queue.claim(peeked.id)) is None:
            continue
        messages = list(entry.data.get("messages") or [])
        left, _, kept = unsaid(assign_ids(conversation_turns(messages), str(data["session"])), [], messages,
                               frozenset(ids))
        if len(kept) == len(messages):
            queue.replace(entry, entry.data)
            continue
        changed += 1
        if spoken(left):
            queue.replace(entry, {**entry.data, "messages": kept})
        else:
            queue.done(entry)
    return changed


__all__ = ["forgotten_ids", "scrub_queued", "unsaid"]
