"""Pydantic AI capabilities: recall before the model is asked, capture after the run, and a forced first search.

All three work the same under ``run_sync``, ``run``, ``run_stream`` and ``iter`` (they use run and
model-request hooks, which every mode goes through), and none of them can fail a run: memory problems are
logged and the run goes on without memory.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

import anyio.to_thread
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import OperatorSource
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult

from ...core.scope import Scope, check_scope_spec
from ...core.tooling import BackgroundCapture, default_capture, recall_context, sync_memory
from .messages import (MEMORY_TOOL_NAMES, REMEM_MARK, RecalledMemoriesPart, latest_user_text, to_openai_messages,
                       user_content_text)
from .scope import ScopeSource, resolve_scope

MAX_UNSENT = 200  # messages of one conversation kept for the next capture after a failed one
MAX_UNSENT_CONVERSATIONS = 256
log = logging.getLogger("remem.pydantic_ai")

QueryFunc = Callable[[RunContext[Any]], "str | None"]


def run_query(ctx: RunContext[Any]) -> str:
    """The default recall query: the run's user prompt, else the last user prompt in its history."""
    text = user_content_text(ctx.prompt) if ctx.prompt is not None else ""
    return text if text.strip() else latest_user_text(ctx.messages)


@dataclass
class RecallMemories(AbstractCapability[Any]):
    """Puts the memories relevant to the user's prompt in front of the model, within ``token_budget`` tokens.

    ``placement="instructions"`` (default): a dynamic instruction part, present in every model request of the
    run and replaced on the next run, so recalled text never piles up in the history. The search runs once
    per run (per query), which keeps the instructions identical across the run's requests (prompt caching).
    ``placement="history"``: one :class:`~.messages.RecalledMemoriesPart` added before the run's first request,
    which Pydantic AI shows the model as framed data (not instructions); it stays in the history (a stable,
    cache-friendly prefix for providers that cache it), and capture skips it.
    ``scope`` follows :mod:`.scope` (None = the global space). Nothing is added when a scope callable finds none, nothing matches, or recall fails.
    """

    memory: Any
    scope: ScopeSource = None
    token_budget: int = 800
    placement: Literal["instructions", "history"] = "instructions"
    query: QueryFunc | None = None
    _recalled: dict[tuple[str | None, Scope, str], str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.scope = check_scope_spec(self.scope)
        if self.placement not in ("instructions", "history"):
            raise ValueError(f"placement must be 'instructions' or 'history', got {self.placement!r}")

    async def recall(self, ctx: RunContext[Any]) -> str:
        """The recalled text for this run ('' when there is nothing to add); never raises."""
        try:
            query = (self.query or run_query)(ctx) or ""
            scope = resolve_scope(self.scope, ctx)
            if not query.strip() or scope is None:
                return ""
            key = (ctx.run_id, scope, query)  # an app may reuse a run id for another user: the scope is part
            if key not in self._recalled:
                if len(self._recalled) > 256:  # runs that never finished normally must not leak memory
                    self._recalled.clear()
                self._recalled[key] = await anyio.to_thread.run_sync(
                    lambda: recall_context(sync_memory(self.memory), query, scope, token_budget=self.token_budget))
            return self._recalled[key]
        except Exception as exc:  # noqa: BLE001 - recall is best-effort
            log.warning("memory recall failed: %s", exc)
            return ""

    def get_instructions(self) -> Any:
        if self.placement != "instructions":
            return None

        async def recalled_memories(ctx: RunContext[Any]) -> str:
            return await self.recall(ctx)

        return recalled_memories

    async def before_model_request(self, ctx: RunContext[Any],
                                   request_context: ModelRequestContext) -> ModelRequestContext:
        if self.placement == "history" and ctx.run_step <= 1:
            text = await self.recall(ctx)
            if text:
                ctx.enqueue(RecalledMemoriesPart(content=text, source=OperatorSource(),
                                                 metadata={REMEM_MARK: "recall"}))
        return request_context

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        self._drop(ctx)
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        self._drop(ctx)  # a failed run's recall must not outlive it either
        raise error

    def _drop(self, ctx: RunContext[Any]) -> None:
        for key in [k for k in self._recalled if k[0] == ctx.run_id]:
            self._recalled.pop(key, None)


@dataclass
class CaptureMemories(AbstractCapability[Any]):
    """After each run, hands the run's new messages to ``memory.remember()`` in a background thread.

    The result is returned at once; distillation happens off the agent's path (``capture.flush()`` waits for
    it, e.g. in tests or at shutdown; it is also flushed at interpreter exit). What is sent: the user's
    prompts and the assistant's replies, converted by ``to_openai_messages``; system prompts, recalled
    memories and memory-tool traffic are left out, and other tools' calls and results too unless
    ``include_tools=True``. ``scope`` follows :mod:`.scope` (None = the global space); runs whose scope
    callable returns None are not captured (logged).

    The session passed to ``remember`` is ``session(ctx)`` if given, else the scope's session, else the run's
    ``conversation_id`` -- which Pydantic AI keeps across runs that continue a ``message_history``, so a
    conversation keeps one summary that each run extends, and only the run's new turns are distilled.
    """

    memory: Any
    scope: ScopeSource = None
    capture: BackgroundCapture | None = None
    include_tools: bool = False
    exclude_tools: tuple[str, ...] = MEMORY_TOOL_NAMES
    session: Callable[[RunContext[Any]], "str | None"] | None = None

    _unsent: dict[tuple[Any, ...], list[dict[str, Any]]] = field(default_factory=dict, init=False, repr=False)
    _unsent_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.scope = check_scope_spec(self.scope)

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        try:
            self.submit(ctx, result.new_messages())
        except Exception as exc:  # noqa: BLE001 - capture must never fail the run it observes
            log.warning("memory capture was not started: %s", exc)
        return result

    def submit(self, ctx: RunContext[Any], messages: Iterable[Any]) -> Any:
        """Queue ``messages`` for distillation in the run's scope; returns the Future, or None if skipped."""
        scope = resolve_scope(self.scope, ctx)
        if scope is None:
            log.info("memory capture skipped: no memory scope is configured for this run")
            return None
        converted = to_openai_messages(messages, include_tools=self.include_tools, exclude_tools=self.exclude_tools)
        if not any(m["role"] in ("user", "assistant") and m["content"].strip() for m in converted):
            return None
        session = self.session(ctx) if self.session is not None else (scope.session or ctx.conversation_id)
        key = (scope, session)
        with self._unsent_lock:  # a run whose capture failed goes again with the next one of its conversation
            batch = self._unsent.pop(key, []) + converted
        fut = (self.capture or default_capture()).submit(sync_memory(self.memory), batch, scope, session)
        fut.add_done_callback(lambda f: self._keep(key, batch) if f.exception() or f.result() is None else None)
        return fut

    def _keep(self, key: tuple[Any, ...], batch: list[dict[str, Any]]) -> None:
        """``remember`` failed (it answers None, logged): the messages wait for the conversation's next run
        (``remember`` skips what it stored already). Bounded: the newest messages of the newest conversations."""
        with self._unsent_lock:
            self._unsent[key] = batch[-MAX_UNSENT:]
            while len(self._unsent) > MAX_UNSENT_CONVERSATIONS:
                self._unsent.pop(next(iter(self._unsent)))


@dataclass
class ForceMemorySearchFirst(AbstractCapability[Any]):
    """Pins ``tool_choice`` to the memory search tool on the first model request of every run; later requests
    are free. Done through the per-step model-settings hook: a static ``tool_choice`` list is refused by
    Pydantic AI because the agent could then never answer.

    Nothing is forced when the tool is not among the run's tools (forcing an unknown tool is an error), or
    when ``when(ctx)`` returns False, e.g. ``when=lambda ctx: ctx.deps.memory_scope is not None``.
    """

    tool_name: str = "memory_search"
    when: Callable[[RunContext[Any]], bool] | None = None

    def get_model_settings(self) -> Callable[[RunContext[Any]], dict[str, Any]]:
        return self.settings_for

    def settings_for(self, ctx: RunContext[Any]) -> dict[str, Any]:
        if ctx.run_step > 1 or not self._tool_available(ctx):
            return {}
        try:
            if self.when is not None and not self.when(ctx):
                return {}
        except Exception as exc:  # noqa: BLE001
            log.warning("ForceMemorySearchFirst.when failed; not forcing: %s", exc)
            return {}
        return {"tool_choice": [self.tool_name]}

    def _tool_available(self, ctx: RunContext[Any]) -> bool:
        tools = getattr(ctx.tool_manager, "tools", None)
        return bool(tools) and self.tool_name in tools
