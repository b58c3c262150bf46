"""What was forgotten stays forgotten when a capture sends it again.

Apps capture by sending a conversation again: a restarted LangGraph or Pydantic-AI app sends a thread whole, an
adapter resends what a failed capture missed. A message forgotten since (``forget``) is then in the capture once
more. Its session summary notes the ids of the messages forgotten from it (:data:`~remem.core.store.derived.FORGOTTEN`,
ids only), and a capture of the session treats those messages as unsaid: they are not stored again, not distilled,
not quoted in the summary, not in the context of the messages around them, not queued for an LLM. How far the
capture goes (where the summary continues from) is still read from the messages as sent, so the rest of the
capture is handled as it would have been. A session forgotten whole, its summary too, keeps no note: sending it
again says it again.
"""

from __future__ import annotations

from typing import Any, Sequence

from .conversation import Turn
from ..store.derived import FORGOTTEN
from ..types import MemoryRecord


def forgotten_ids(summary: MemoryRecord | None) -> frozenset[str]:
    """The messages forgotten from the session of ``summary`` (none without one)."""
    if summary is None:
        return frozenset()
    return frozenset(str(i) for i in summary.metadata.get(FORGOTTEN) or ())


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


__all__ = ["forgotten_ids", "unsaid"]
