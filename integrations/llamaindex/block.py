"""``RememMemoryBlock``: long-term recall and capture inside LlamaIndex's ``Memory`` (``llama_index.core.memory``).

On every ``Memory.aget`` (each agent step) the block recalls what remem knows that is relevant to the latest
user message and LlamaIndex renders it as ``<memory><long_term_memory>…`` in the system message. LlamaIndex
only hands a block messages when its short-term FIFO overflows (~21k tokens by default), so short chats would
never be captured: call :func:`remem.integrations.llamaindex.run_and_remember` /
:func:`~remem.integrations.llamaindex.remember_turn` after each run (or :meth:`RememMemoryBlock.acapture`).
They send the session's conversation so far; ``remember()`` distils only what it has not seen yet, and the
block then ignores FIFO flushes for that session, so nothing is captured twice.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, List, Optional, Sequence

from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemoryBlock

from ...core.recall.rendering import render_context, trim_block
from ...core.recall.tokens import count_tokens
from ...core.scope import check_scope_spec
from ...core.tooling import (RECALL_QUERY_CHARS, BackgroundCapture, awithin_turn, call_scope, default_capture,
                             wait_for)
from ...core.types import Scope
from ._common import last_user_text, sync_and_async, to_capture_dicts

log = logging.getLogger("remem.llamaindex")

_CACHE_SECONDS = 10.0  # Memory.aget runs several times per agent run; recall (and reinforcement) once per turn


class RememMemoryBlock(BaseMemoryBlock[str]):
    """Recall from and capture into remem for one scope, per LlamaIndex session.

    ``scope``: a ``Scope`` or mapping, a zero-argument callable returning one per call (None from it = no
    recall or capture for that call), or None (the global space). ``tenant=``/``user=``/``agent=`` still build
    ``Scope(tenant, user, agent)`` when ``scope`` is not given (not both). Unknown fields are rejected.
    Recall uses that scope, so memories from earlier sessions come back; the current
    session's own summary and episodes (what was said in it) are left out: the chat history already holds them. ``session_scoped=True`` recalls
    only memories captured from the current ``Memory.session_id``. Captures are stored in that scope with
    ``remember(..., session=session_id)`` (the session is recorded in each memory's metadata). Recall never
    raises: a failing store yields an empty block and a log line.
    """

    name: str = Field(default="long_term_memory", description="Tag the recall is rendered under.")
    description: Optional[str] = Field(default="Relevant memories from earlier conversations (remem).")
    model_config = ConfigDict(extra="forbid")

    memory: Any = Field(description="A remem Memory or AsyncMemory.", exclude=True)
    scope: Any = Field(default=None, exclude=True,
                       description="Scope | mapping | zero-argument callable | None (= the global space).")
    tenant: Optional[str] = Field(default=None, description="Shorthand for scope=Scope(tenant=...).")
    user: Optional[str] = Field(default=None, description="Shorthand for scope=Scope(user=...).")
    agent: Optional[str] = Field(default=None, description="Shorthand for scope=Scope(agent=...).")
    token_budget: int = Field(default=800, description="Maximum tokens of recall text (tiktoken).")
    limit: int = Field(default=20, description="Candidates considered before the token budget cuts.")
    recall_turns: int = Field(default=1, description="How many latest user messages form the recall query.")
    session_scoped: bool = Field(default=False, description="Recall only this session's memories.")
    capture: Any = Field(default=None, exclude=True,
                         description="BackgroundCapture running remember(); default: the shared one.")

    _sync: Any = PrivateAttr(default=None)
    _async: Any = PrivateAttr(default=None)
    _turn_sessions: set = PrivateAttr(default_factory=set)
    _pending: set = PrivateAttr(default_factory=set)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _cache: dict = PrivateAttr(default_factory=dict)

    def model_post_init(self, __context: Any) -> None:
        self._sync, self._async = sync_and_async(self.memory)
        if self.tenant is not None or self.user is not None or self.agent is not None:
            if self.scope is not None:
                raise ValueError("pass either scope= or tenant=/user=/agent=, not both")
            self.scope = Scope(tenant=self.tenant, user=self.user, agent=self.agent)  # invalid labels fail here

    @field_validator("scope", mode="before")
    @classmethod
    def _check_scope(cls, value: Any) -> Any:
        return check_scope_spec(value)

    def current_scope(self) -> Scope | None:
        """The scope of this call: the fixed one, or what the callable returns now (None = skip this call)."""
        return call_scope(self.scope)

    # ------------------------------------------------------------------ recall
    async def _recall(self, query: str, scope: Scope, session_id: Optional[str]) -> list:
        """The chat history already holds this session's own summary and (unless ``session_scoped``) its words:
        recall other sessions' records and this session's distilled memories, not its episodes."""
        search = self._async.search
        if not session_id:
            return await search(query, scope=scope, limit=self.limit)
        mine = {"meta.session": session_id, "kind": {"$nin": ["summary"] if self.session_scoped
                                                             else ["summary", "episode"]}}
        if self.session_scoped:
            return await search(query, scope=scope, limit=self.limit, where=mine)
        other, own = await asyncio.gather(
            search(query, scope=scope, limit=self.limit, where={"meta.session": {"$ne": session_id}}),
            search(query, scope=scope, limit=self.limit, where=mine))
        return sorted([*other, *own], key=lambda h: h.score, reverse=True)[:self.limit]

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, session_id: Optional[str] = None,
                    **block_kwargs: Any) -> str:
        query = last_user_text(messages, turns=max(1, self.recall_turns))[:RECALL_QUERY_CHARS]
        scope = self.current_scope()
        if self._async is None or not query or scope is None:
            return ""
        key = (scope, session_id, query)
        hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < _CACHE_SECONDS:
            return hit[1]
        try:
            hits = await awithin_turn(self._recall(query, scope, session_id))
        except Exception as exc:  # noqa: BLE001 - no memory is better than a crashed agent step
            log.warning("remem recall failed: %s", exc)
            return ""
        text = render_context(hits, self.token_budget)
        self._cache.clear()
        self._cache[key] = (time.monotonic(), text)
        return text

    async def atruncate(self, content: str, tokens_to_truncate: int) -> Optional[str]:
        """Drop the least relevant memories (last lines) first instead of the whole block."""
        if not content or tokens_to_truncate <= 0:
            return content
        kept = trim_block(content, count_tokens(content) - tokens_to_truncate)  # the fence stays whole
        return kept or None  # a header alone is not worth its tokens

    # ------------------------------------------------------------------ capture
    async def _aput(self, messages: List[ChatMessage]) -> None:
        """Messages flushed out of the short-term FIFO: captured unless turn capture already covers the session."""
        session_id = next((m.additional_kwargs.get("session_id") for m in messages
                           if m.additional_kwargs.get("session_id")), None)
        if session_id in self._turn_sessions:
            return
        self._submit(messages, session_id)

    async def acapture(self, messages: Sequence[ChatMessage], session_id: str | None = None) -> Future | None:
        """Send a conversation to ``remember()`` now, in the background; never raises.

        Pass the session's conversation so far (``remember`` distils only turns it has not seen for that
        ``session_id``); from then on FIFO flushes of this session are not captured again. Only user and
        assistant text is sent: tool results (recalled memories above all) and system prompts are not.
        Returns the background future (resolving to the ``RememberResult``), or None if nothing was sent.
        """
        if session_id:
            self._turn_sessions.add(session_id)
        return self._submit(list(messages), session_id)

    def _submit(self, messages: Sequence[ChatMessage], session_id: str | None) -> Future | None:
        dicts = to_capture_dicts(messages)
        if not dicts or self._sync is None:
            return None
        scope = self.current_scope()
        if scope is None:
            log.info("remem capture skipped: no memory scope for this call")
            return None
        try:
            runner: BackgroundCapture = self.capture or default_capture()
            fut = runner.submit(self._sync, dicts, scope, session_id)
        except Exception as exc:  # noqa: BLE001
            log.warning("remem capture could not start: %s", exc)
            return None
        with self._lock:
            self._pending.add(fut)
        fut.add_done_callback(self._done)
        self._cache.clear()
        return fut

    def _done(self, fut: Future) -> None:
        with self._lock:
            self._pending.discard(fut)
        self._cache.clear()  # what was just captured should be recallable on the next step

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait for this block's pending captures (tests, shutdown, before reading the store)."""
        with self._lock:
            pending = list(self._pending)
        wait_for(pending, timeout)

    async def aflush(self, timeout: float | None = 30.0) -> None:
        await asyncio.to_thread(self.flush, timeout)
