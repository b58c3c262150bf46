"""Graph nodes: ``recall_node`` puts relevant memories into the state; ``capture_node`` sends new messages to
``Memory.remember`` in the background.

```python
who = ScopeResolver()                                    # the user from the run config
builder.add_node("recall", recall_node(mem, scope=who))  # before the model node
builder.add_node("capture", capture_node(mem, scope=who))  # after it
graph.invoke(inputs, {"configurable": {"user_id": "alice", "thread_id": "t1"}})
```
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Literal

from langchain_core.messages import RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from ...core.scope import check_scope_spec
from ...core.tooling import BackgroundCapture, recall_context
from .capture import RECALL_ID_PREFIX, CaptureLedger, submit_capture
from .messages import latest_human_text
from .scope import ScopeLike, resolve_scope, resolve_session
from .tools import sync_memory


def _messages(state: Any, key: str) -> list[Any]:
    if isinstance(state, dict):
        return list(state.get(key) or [])
    return list(getattr(state, key, None) or [])


def _context(config: RunnableConfig | None) -> Any:
    """The run's ``context=`` (LangGraph Runtime), or None outside a run."""
    try:
        from langgraph.runtime import get_runtime

        return getattr(get_runtime(), "context", None)
    except Exception:  # noqa: BLE001
        return None


def recall_node(memory: Any, *, scope: ScopeLike = None, token_budget: int = 800,
                mode: Literal["system_message", "state"] = "system_message", state_key: str = "memories",
                messages_key: str = "messages") -> RunnableLambda:
    """A node that recalls the memories relevant to the latest user message, within ``token_budget`` tokens.

    ``mode="system_message"``: appends one ``SystemMessage`` (id ``remem-recall-...``) and removes the previous
    recall message, so the history holds only the current one (it is never captured back into memory).
    ``mode="state"``: writes the text to ``state[state_key]`` ("" when nothing is relevant or recall failed).
    ``scope``: a Scope or mapping, a ``(config, context)`` callable such as ``ScopeResolver()`` (the user from
    the run config; a run without one is not recalled for), or None (the global space).
    """
    mem = sync_memory(memory)
    scope = check_scope_spec(scope)

    def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = _messages(state, messages_key)
        sc = resolve_scope(scope, config, _context(config))
        text = recall_context(mem, latest_human_text(messages), sc, token_budget=token_budget)
        if mode == "state":
            return {state_key: text}
        old = [RemoveMessage(id=m.id) for m in messages
               if getattr(m, "id", None) and str(m.id).startswith(RECALL_ID_PREFIX)]
        new = [SystemMessage(content=text, id=f"{RECALL_ID_PREFIX}{uuid.uuid4().hex}")] if text else []
        return {messages_key: old + new} if old or new else {}

    async def arun(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await asyncio.to_thread(run, state, config)

    return RunnableLambda(run, afunc=arun, name="remem_recall")


def capture_node(memory: Any, *, scope: ScopeLike = None, messages_key: str = "messages", capture_executor: BackgroundCapture | None = None,
                 ledger: CaptureLedger | None = None) -> RunnableLambda:
    """A node that submits the thread's not-yet-captured messages to ``remember`` (redacted, distilled) in a
    background thread and returns immediately; it changes no state. Capture is once per message id per thread."""
    mem = sync_memory(memory)
    scope = check_scope_spec(scope)
    seen = ledger or CaptureLedger()

    def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
        context = _context(config)
        sc = resolve_scope(scope, config, context)
        session = resolve_session(scope, config, context)
        submit_capture(mem, _messages(state, messages_key), sc, session, ledger=seen, capture=capture_executor)
        return {}

    return RunnableLambda(run, name="remem_capture")
