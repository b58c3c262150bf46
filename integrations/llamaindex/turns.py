"""Capture every agent turn into remem, not only what LlamaIndex's FIFO flushes at ~21k tokens.

``Memory`` hands long-term blocks nothing until its short-term queue overflows, so a normal chat is never
distilled. After a run finishes, these helpers read the session's conversation from the run's ``Memory``
(archived messages included) and hand it to the ``RememMemoryBlock`` inside it, which runs ``remember()`` in
the background. ``remember`` tracks how far each session was distilled, so only the new turn is distilled;
a repeated or retried capture stores nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

from llama_index.core.memory import Memory as LIMemory

from .block import RememMemoryBlock

log = logging.getLogger("remem.llamaindex")


def find_block(memory: Any) -> RememMemoryBlock | None:
    """The first ``RememMemoryBlock`` in a LlamaIndex ``Memory`` (None for other memory types)."""
    for block in getattr(memory, "memory_blocks", None) or []:
        if isinstance(block, RememMemoryBlock):
            return block
    return None


async def acapture_session(memory: LIMemory, block: RememMemoryBlock | None = None) -> Any:
    """Capture ``memory``'s conversation now (only its new turns get distilled); returns the background future
    or None. Never raises."""
    try:
        block = block or find_block(memory)
        if block is None:
            log.warning("remem: no RememMemoryBlock in this memory; the turn was not captured")
            return None
        messages = await memory.aget_all()  # active and archived: the whole session, oldest first
        return await block.acapture(messages, session_id=getattr(memory, "session_id", None))
    except Exception as exc:  # noqa: BLE001
        log.warning("remem: turn capture failed: %s", exc)
        return None


def remember_turn(handler: Any, memory: Optional[LIMemory] = None,
                  block: RememMemoryBlock | None = None) -> "asyncio.Task[Any]":
    """Capture the turn once the agent run behind ``handler`` (what ``agent.run(...)`` returned) finishes.

    Keeps streaming intact: ``handler = agent.run(...); remember_turn(handler, memory); async for ev in
    handler.stream_events(): ...``. Without ``memory``, the run's own memory (``ctx.store["memory"]``) is
    used. A run that fails or is cancelled is not captured. The returned task resolves to the capture future
    (or None); awaiting it is optional.
    """

    async def _after() -> Any:
        try:
            await handler.stop_event_result()
        except asyncio.CancelledError:
            cancelled = getattr(handler, "cancelled", None)
            if not (callable(cancelled) and cancelled()):
                raise  # we were cancelled ourselves, not the run (Task.cancelling() would need Python 3.11)
            return None
        except Exception:  # noqa: BLE001 - a failed/cancelled run has no turn worth remembering
            return None
        mem = memory
        if mem is None:
            try:
                mem = await handler.ctx.store.get("memory", default=None)
            except Exception as exc:  # noqa: BLE001
                log.warning("remem: could not read the run's memory: %s", exc)
                return None
        if mem is None:
            return None
        return await acapture_session(mem, block)

    return asyncio.ensure_future(_after())


async def run_and_remember(agent: Any, user_msg: Any = None, *, memory: LIMemory,
                           block: RememMemoryBlock | None = None, **run_kwargs: Any) -> Any:
    """``await agent.run(user_msg=..., memory=memory, **run_kwargs)``, then capture the turn; returns the result.

    Works for ``FunctionAgent``, ``ReActAgent`` and ``AgentWorkflow`` alike. Distillation runs in the
    background; ``block.flush()`` waits for it.
    """
    handler = agent.run(user_msg=user_msg, memory=memory, **run_kwargs)
    task = remember_turn(handler, memory, block)
    result = await handler
    await task
    return result
