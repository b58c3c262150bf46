"""A LlamaIndex FunctionAgent with long-term memory, runnable offline.

    python examples/llamaindex_agent.py

Session 1 tells the agent a few things; every turn is captured with ``run_and_remember`` (LlamaIndex itself
would only hand them to a memory block after ~21k tokens of chat). Session 2 is a new conversation: the
``RememMemoryBlock`` puts what is relevant into the system prompt, and the agent's first step is a
``memory_search`` whose query the model writes itself. Finally a ``RememRetriever`` answers through a
query engine.

The LLM is LlamaIndex's offline ``MockFunctionCallingLLM`` with a tiny script, so no API key is needed.
Swap ``offline_llm()`` for a real one, e.g. ``from llama_index.llms.openai import OpenAI; OpenAI("gpt-5.2")``,
and the rest stays the same.
"""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from typing import Any, List

from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.query_engine import RetrieverQueryEngine

from remem import Memory, Scope
from remem.integrations.llamaindex import RememMemoryBlock, RememRetriever, memory_agent, run_and_remember

warnings.filterwarnings("ignore", category=DeprecationWarning)
ALICE = Scope(tenant="demo", user="alice")


class OfflineLLM(MockFunctionCallingLLM):
    """The mock LLM, also told which tool the agent forces (the stock mock drops ``tool_choice``)."""

    def _prepare_chat_with_tools(self, tools: Any, user_msg: Any = None, chat_history: Any = None,
                                 verbose: bool = False, allow_parallel_tool_calls: bool = False,
                                 tool_required: bool = False, **kwargs: Any) -> dict:
        prepared = super()._prepare_chat_with_tools(tools, user_msg, chat_history)
        prepared["tool_choice"] = kwargs.get("tool_choice")
        return prepared


def offline_llm() -> OfflineLLM:
    def respond(messages: List[ChatMessage], tool_choice: Any = None, **_: Any) -> ChatMessage:
        user = next(m.content or "" for m in reversed(messages) if m.role.value == "user")
        if tool_choice == "memory_search":  # a real model would write a better query than these keywords
            query = " ".join(w for w in user.lower().strip("?.!").split() if len(w) > 3)
            return ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="memory_search",
                                                                       tool_kwargs={"query": query})])
        found = next((m.content or "" for m in reversed(messages) if m.role.value == "tool"), "")
        system = "\n".join(m.content or "" for m in messages if m.role.value == "system")
        if "long_term_memory" in system or found.startswith("- ["):
            return ChatMessage(role="assistant", content="From memory:\n" + (found or system))
        return ChatMessage(role="assistant", content="Noted.")

    return OfflineLLM(response_generator=respond)


async def main() -> None:
    # a store in a temporary folder, removed at the end (its local service sees that and exits at once)
    with tempfile.TemporaryDirectory(prefix="remem-li-") as folder:
        await session(Memory(path=folder + "/store", embedder="none"))  # BM25 only: instant


async def session(mem: Memory) -> None:
    block = RememMemoryBlock(memory=mem, scope=ALICE, token_budget=400)
    agent = memory_agent(offline_llm(), mem, ALICE)

    print("== session 1: tell the agent things (each turn captured)")
    monday = ChatMemory.from_defaults(session_id="monday", memory_blocks=[block])
    for msg in ["I prefer oolong tea, never sweetened.",
                "We decided to deploy the billing service on Fly.io because of the EU region."]:
        print("user:", msg)
        print("agent:", await run_and_remember(agent, msg, memory=monday))
    await block.aflush()  # distillation runs in the background; wait before reading the store
    for rec in mem.list(scope=ALICE):
        print(f"  stored [{rec.kind}] {rec.text}")

    print("\n== session 2: a new conversation recalls them")
    friday = ChatMemory.from_defaults(session_id="friday", memory_blocks=[block])
    question = "Where do we deploy the billing service?"
    print("user:", question)
    print("agent:", await run_and_remember(agent, question, memory=friday))

    print("\n== the same memories through a query engine")
    engine = RetrieverQueryEngine.from_args(RememRetriever(mem, ALICE, limit=2), llm=MockLLM())
    response = engine.query("what tea does alice drink?")
    for node in response.source_nodes:
        print(f"  {node.score:.3f} [{node.node.metadata['kind']}] {node.node.get_content()}")
    await block.aflush()
    mem.close()


if __name__ == "__main__":
    asyncio.run(main())
