"""``ContextRotation``: a long-running LangGraph / LangChain agent trims its messages without forgetting them.

```python
rotation = ContextRotation(mem, scope=ScopeResolver(), max_tokens=12_000)
agent = create_agent(model, tools=memory_tools(mem, scope=ScopeResolver()), middleware=[rotation],
                     checkpointer=saver)
```

Before each model call, when the thread's messages pass ``max_tokens`` (tiktoken), the oldest are captured into
memory (``remember()``, with their message ids: nothing is stored twice) and, once that capture has returned,
removed from the graph's state, down to ``target_tokens``; a short digest message stands in for them, and
recall (``memory_search``, :class:`~.middleware.MemoryMiddleware`) brings back what they said. A capture that
fails drops nothing. The cut is made only before a user message, so a tool call is never parted from its
result; leading system messages and the last ``keep_last`` messages always stay. Captures still running are
flushed when the agent's run ends, at :meth:`ContextRotation.close` and at interpreter exit.

In a hand-built graph, add :meth:`ContextRotation.node` as a node before the model's (its state needs a
``messages`` key with the ``add_messages`` reducer).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from ...core.rotation.rotator import DIGEST_MARK, Rotator, cut_point, digest, message_tokens
from ...core.scope import check_scope_spec
from .capture import capturable
from .messages import content_text, to_openai_message
from .scope import ScopeLike, current_config, resolve_scope, resolve_session


def is_digest(message: Any) -> bool:
    return bool(getattr(message, "additional_kwargs", {}).get(DIGEST_MARK))


class ContextRotation(AgentMiddleware):
    """Rotates a thread's oldest messages into memory past ``max_tokens`` (see the module docstring).

    ``target_tokens`` (default half of ``max_tokens``): what the thread is cut down to. ``wait``: seconds a
    model call waits for the capture before going on uncut (default: ``REMEM_TURN_TIMEOUT``, 5 s); the cut is
    then made at a later call. ``scope`` and the session follow :func:`~.scope.resolve_scope` as in
    :class:`~.middleware.MemoryMiddleware`, so both capture a thread into the same session."""

    def __init__(self, memory: Any, *, scope: ScopeLike = None, max_tokens: int = 12_000,
                 target_tokens: int | None = None, keep_last: int = 4, wait: float | None = None) -> None:
        super().__init__()
        if max_tokens < 100:
            raise ValueError(f"max_tokens must be at least 100, got {max_tokens}")
        self.scope = check_scope_spec(scope)
        self.max_tokens = max_tokens
        self.target_tokens = target_tokens if target_tokens is not None else max_tokens // 2
        if not 0 < self.target_tokens < max_tokens:
            raise ValueError("target_tokens must be between 0 and max_tokens")
        self.keep_last = max(1, keep_last)
        self.rotator = Rotator(memory, wait=wait)

    # ------------------------------------------------------------------ the cut
    def rotate(self, messages: list[Any], config: Any = None, context: Any = None) -> dict[str, Any] | None:
        """The state update that rotates ``messages`` (None: nothing to do, or the capture is not confirmed)."""
        scope = resolve_scope(self.scope, config, context)
        if scope is None or not messages:
            return None
        first = 0
        while first < len(messages) and isinstance(messages[first], SystemMessage) and not is_digest(messages[first]):
            first += 1
        converted = [to_openai_message(m) for m in messages]
        tokens = [message_tokens(c) if c else 0 for c in converted]
        can_start = [isinstance(m, HumanMessage) and not is_digest(m) for m in messages]
        cut = cut_point(tokens, can_start, max_tokens=self.max_tokens, target_tokens=self.target_tokens,
                        keep_last=self.keep_last, first=first)
        if not cut:
            return None
        session = resolve_session(self.scope, config, context)

        def captured_before(end: int) -> list[dict[str, Any]]:
            return [c for m, c in zip(messages[first:end], converted[first:end])
                    if c and not is_digest(m) and capturable(m)]

        if captured_before(cut) and not self.rotator.confirmed(scope, session, captured_before(cut)):
            # not stored (yet): only what an earlier capture stored may go (nothing, if none did)
            cut = next((i for i in range(cut - 1, first, -1) if can_start[i] and all(
                self.rotator.stored(scope, session, c) for c in captured_before(i))), 0)
            if not cut:
                return None
        rotated = messages[first:cut]
        previous = next((content_text(m.content) for m in reversed(rotated) if is_digest(m)), None)
        captured = captured_before(cut)
        stand_in = HumanMessage(content=digest(captured, previous), id=f"remem-digest-{uuid.uuid4().hex}",
                                additional_kwargs={DIGEST_MARK: True})
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[:first], stand_in, *messages[cut:]]}

    # ------------------------------------------------------------------ as middleware
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.rotate(list(_messages(state)), current_config(), getattr(runtime, "context", None))

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        config, context = current_config(), getattr(runtime, "context", None)
        return await asyncio.to_thread(self.rotate, list(_messages(state)), config, context)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.rotator.flush()  # the run ends: what it rotated is stored before the caller moves on
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        await asyncio.to_thread(self.rotator.flush)
        return None

    # ------------------------------------------------------------------ as a node
    def node(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """For a hand-built graph: ``builder.add_node("rotate", rotation.node)`` before the model's node."""
        return self.rotate(list(_messages(state)), config) or {}

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait for captures still running."""
        self.rotator.flush(timeout)

    def close(self) -> None:
        """Flush, then stop capturing (the memory itself stays open: it is the caller's)."""
        self.rotator.close()


def _messages(state: Any) -> Any:
    return state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])


__all__ = ["ContextRotation", "is_digest"]
