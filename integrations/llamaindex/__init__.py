"""remem for LlamaIndex (llama-index-core >= 0.14).

- :class:`RememRetriever`: memories as ``NodeWithScore`` for query engines, RAG flows and retriever tools.
- :class:`RememMemoryBlock`: recall inside ``llama_index.core.memory.Memory`` (rendered into the system
  message each step) and capture of what the FIFO flushes.
- :func:`run_and_remember` / :func:`remember_turn`: capture every turn, since LlamaIndex flushes to
  long-term blocks only past ~21k tokens of chat.
- :func:`memory_tools` / :func:`memory_agent`: memory_search / memory_save ``FunctionTool``s and a
  ``FunctionAgent`` that writes its own recall query on the first step.

Typical wiring::

    from llama_index.core.memory import Memory as ChatMemory
    from remem import Memory, Scope
    from remem.integrations.llamaindex import RememMemoryBlock, memory_agent, run_and_remember

    mem = Memory(path="./memory")
    alice = Scope(tenant="acme", user="alice")
    block = RememMemoryBlock(memory=mem, scope=alice)
    chat = ChatMemory.from_defaults(session_id="s1", memory_blocks=[block])
    agent = memory_agent(llm, mem, alice)
    result = await run_and_remember(agent, "What do I drink?", memory=chat)
"""

from .block import RememMemoryBlock
from .retriever import RememRetriever, hit_to_node, record_to_node
from .tools import (DEFAULT_SYSTEM_PROMPT, FORGET_TOOL, SAVE_TOOL, SEARCH_TOOL, memory_agent, memory_tools)
from .turns import acapture_session, find_block, remember_turn, run_and_remember

__all__ = ["DEFAULT_SYSTEM_PROMPT", "FORGET_TOOL", "RememMemoryBlock", "RememRetriever", "SAVE_TOOL",
           "SEARCH_TOOL", "acapture_session", "find_block", "hit_to_node", "memory_agent", "memory_tools",
           "record_to_node", "remember_turn", "run_and_remember"]
