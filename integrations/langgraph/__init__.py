"""remem for LangGraph and LangChain v1 agents.

* :class:`RememStore` - a LangGraph ``BaseStore`` on remem (``graph.compile(store=...)``, ``create_agent(store=...)``).
* :class:`MemoryMiddleware`, :class:`ForceMemorySearchFirst` - ``create_agent`` middleware (recall, capture,
  a forced first ``memory_search``); :func:`memory_tools` - ``memory_search`` / ``memory_save`` tools.
* :class:`MemoryCaptureSaver` - wraps any checkpointer and captures each thread's new messages.
* :func:`recall_node`, :func:`capture_node` - nodes for hand-built graphs.
* :class:`ContextRotation` - past a token budget, the oldest messages go to memory, a digest stands in.

Install with ``pip install "remem[langgraph]"``.
"""

from .capture import CaptureLedger
from .checkpointer import MemoryCaptureSaver
from .messages import to_openai_message, to_openai_messages
from .middleware import ForceMemorySearchFirst, MemoryMiddleware
from .nodes import capture_node, recall_node
from .rotation import ContextRotation
from .scope import ScopeResolver, resolve_scope
from .store import RememStore
from .tools import memory_tools

__all__ = ["CaptureLedger", "ContextRotation", "ForceMemorySearchFirst", "MemoryCaptureSaver", "MemoryMiddleware", "RememStore",
           "ScopeResolver", "capture_node", "memory_tools", "recall_node", "resolve_scope", "to_openai_message",
           "to_openai_messages"]
