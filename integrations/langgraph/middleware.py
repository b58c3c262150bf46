"""LangChain v1 agent middleware: recall before the model, capture after the agent, and a forced first search.

```python
agent = create_agent(model, tools=[...], middleware=[MemoryMiddleware(mem, scope=ScopeResolver()),
                                                           ForceMemorySearchFirst()])
agent.invoke({"messages": [...]}, {"configurable": {"user_id": "alice", "thread_id": "t1"}})
```
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from typing import Any, Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from ...core.scope import check_scope_spec
from ...core.tooling import BackgroundCapture, recall_context
from .capture import CaptureLedger, submit_capture
from .messages import content_text, latest_human_text, message_key
from .scope import ScopeLike, current_config, resolve_scope, resolve_session
from .tools import memory_tools, sync_memory

log = logging.getLogger("remem.langgraph.middleware")


def _first_call_of_turn(messages: list[Any]) -> bool:
    """No model answer yet since the latest user message: the first model call of this run."""
    for msg in reversed(messages):
        if isinstance(msg, AIMessage):
            return False
        if isinstance(msg, HumanMessage):
            return True
    return True


def _tool_names(request: ModelRequest) -> set[str]:
    names = set()
    for tool in request.tools or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name") if isinstance(tool, dict) else getattr(
            tool, "name", None)
        if name:
            names.add(name)
    return names


class ForceMemorySearchFirst(AgentMiddleware):
    """Pins ``tool_choice`` to ``memory_search`` on the first model call of each run (the first call after the
    latest user message); later calls keep whatever tool_choice they had. Does nothing when the agent has no
    ``memory_search`` tool (forcing an unknown tool would make the provider reject the call)."""

    def __init__(self, tool_name: str = "memory_search") -> None:
        super().__init__()
        self.tool_name = tool_name

    def _adjust(self, request: ModelRequest) -> ModelRequest:
        if _first_call_of_turn(list(request.messages)) and self.tool_name in _tool_names(request):
            return request.override(tool_choice=self.tool_name)
        return request

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._adjust(request))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        return await handler(self._adjust(request))


class MemoryMiddleware(AgentMiddleware):
    """Recall relevant memories into the system message before each model call of a turn, and capture the
    turn's new messages into remem (redacted and distilled by ``remember``) in the background after the agent.

    Recall runs once per user message (cached), is cut to ``token_budget`` tokens, and is added to the request
    only, never to the persisted state (so it is not captured back). With ``tools=True`` the middleware also
    registers ``memory_search`` and ``memory_save``. ``scope``: a Scope or mapping, a ``(config, context)``
    callable such as ``ScopeResolver()`` (the user from the run config), or None (the global space).
    """

    def __init__(self, memory: Any, *, scope: ScopeLike = None, token_budget: int = 800,
                 recall: bool = True, capture: bool = True, tools: bool = True,
                 capture_executor: BackgroundCapture | None = None, ledger: CaptureLedger | None = None) -> None:
        super().__init__()
        self.memory = sync_memory(memory)
        self.scope = check_scope_spec(scope)
        self.token_budget = token_budget
        self.recall = recall
        self.capture = capture
        self.capture_executor = capture_executor
        self.ledger = ledger or CaptureLedger()
        self.tools = memory_tools(self.memory, scope=self.scope) if tools else []
        self._recalled: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._lock = threading.Lock()
        self.last_capture: Any = None  # the Future of the latest capture (tests, flush)

    # ------------------------------------------------------------------ recall
    def _scope(self, runtime: Any) -> Any:
        return resolve_scope(self.scope, current_config(), getattr(runtime, "context", None))

    def _recall_text(self, request: ModelRequest) -> str:
        if not self.recall:
            return ""
        scope = self._scope(request.runtime)
        query = latest_human_text(request.messages)
        if scope is None or not query:
            return ""
        last_human = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
        cache_key = (scope, message_key(last_human) if last_human is not None else query)
        with self._lock:
            if cache_key in self._recalled:
                return self._recalled[cache_key]
        text = recall_context(self.memory, query, scope, token_budget=self.token_budget)
        with self._lock:
            self._recalled[cache_key] = text
            while len(self._recalled) > 1024:
                self._recalled.popitem(last=False)
        return text

    def _with_recall(self, request: ModelRequest, text: str) -> ModelRequest:
        if not text:
            return request
        base = content_text(request.system_message.content) if request.system_message is not None else ""
        merged = f"{base}\n\n{text}" if base else text
        return request.override(system_message=SystemMessage(content=merged))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._with_recall(request, self._recall_text(request)))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        text = await asyncio.to_thread(self._recall_text, request)
        return await handler(self._with_recall(request, text))

    # ------------------------------------------------------------------ capture
    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if not self.capture:
            return None
        config = current_config()
        context = getattr(runtime, "context", None)
        scope = resolve_scope(self.scope, config, context)
        session = resolve_session(self.scope, config, context)
        messages = state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])
        self.last_capture = submit_capture(self.memory, messages, scope, session, ledger=self.ledger,
                                           capture=self.capture_executor)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)
