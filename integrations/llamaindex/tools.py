"""memory_search / memory_save (/ memory_forget) as LlamaIndex ``FunctionTool``s, and a ``FunctionAgent`` that
searches memory first.

Tool behaviour and wording come from :mod:`remem.core.tooling`, so every adapter answers the same way; in
particular a search that cannot run says ``memory search did not run: <reason>`` instead of pretending the
memory is empty. The async variants run the store call in a worker thread, never blocking the event loop.
"""

import asyncio
from typing import Annotated, Any, List, Optional, Sequence

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.bridge.pydantic import Field
from llama_index.core.tools import FunctionTool

from ...core.scope import ScopeSpec, check_scope_spec
from ...core.tooling import (ABOUT_DESCRIPTION, FORGET_DESCRIPTION, SAVE_DESCRIPTION, SEARCH_DESCRIPTION,
                             call_scope, run_memory_about, run_memory_forget, run_memory_save, run_memory_search)
from ...core.tooling import ANSWER_DESCRIPTION, run_memory_answer
from ._common import sync_and_async

SEARCH_TOOL = "memory_search"
SAVE_TOOL = "memory_save"
FORGET_TOOL = "memory_forget"
ANSWER_TOOL = "memory_answer"
ABOUT_TOOL = "memory_about"

# No `from __future__ import annotations` here: FunctionTool reads these Annotated hints at runtime.
Query = Annotated[str, Field(description="What to look for: names, topics, identifiers; not the whole question.")]
Limit = Annotated[int, Field(description="Maximum number of memories to return (1-50).")]
Text = Annotated[str, Field(description="The memory, self-contained: who, what and why, in one or two sentences.")]
Kind = Annotated[str, Field(description="fact, preference, decision, event, lesson or note.")]
Tags = Annotated[Optional[List[str]], Field(description="Optional short topic tags.")]
MemoryId = Annotated[str, Field(description="The id shown in memory_search results.")]
Question = Annotated[str, Field(description="The question to answer from memory, in plain words.")]
EntityName = Annotated[str, Field(description="A person, service, product, place, ... by any name it goes by.")]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. Your first step is a memory_search for what the user "
    "is asking about; use what it finds. Save durable facts, preferences and decisions with memory_save."
)


def memory_tools(memory: Any, scope: ScopeSpec = None, *, forget: bool = False, about: bool = False,
                 search_limit: int = 5, answer: bool = False) -> List[FunctionTool]:
    """``[memory_search, memory_save]`` (+ ``memory_forget`` if ``forget``, ``memory_about`` if ``about``: an
    entity's profile, ``memory_answer`` if ``answer``) bound to one scope.

    ``scope``: a Scope or mapping, a zero-argument callable resolved per call, or None (the global space).
    When the callable returns None every call answers "memory … did not run: no memory scope is configured …",
    so a misconfigured deployment is visible to the model and in traces.
    """
    store, _ = sync_and_async(memory)
    spec = check_scope_spec(scope)

    def memory_search(query: Query, limit: Limit = search_limit) -> str:
        return run_memory_search(store, query, call_scope(spec), limit=limit)

    async def amemory_search(query: Query, limit: Limit = search_limit) -> str:
        return await asyncio.to_thread(memory_search, query, limit)

    def memory_save(text: Text, kind: Kind = "note", tags: Tags = None) -> str:
        return run_memory_save(store, text, call_scope(spec), kind=kind, tags=tags)

    async def amemory_save(text: Text, kind: Kind = "note", tags: Tags = None) -> str:
        return await asyncio.to_thread(memory_save, text, kind, tags)

    tools = [
        FunctionTool.from_defaults(fn=memory_search, async_fn=amemory_search, name=SEARCH_TOOL,
                                   description=SEARCH_DESCRIPTION),
        FunctionTool.from_defaults(fn=memory_save, async_fn=amemory_save, name=SAVE_TOOL,
                                   description=SAVE_DESCRIPTION),
    ]
    if forget:
        def memory_forget(memory_id: MemoryId) -> str:
            return run_memory_forget(store, memory_id, call_scope(spec))

        async def amemory_forget(memory_id: MemoryId) -> str:
            return await asyncio.to_thread(memory_forget, memory_id)

        tools.append(FunctionTool.from_defaults(fn=memory_forget, async_fn=amemory_forget, name=FORGET_TOOL,
                                                description=FORGET_DESCRIPTION))
    if answer:
        def memory_answer(question: Question) -> str:
            return run_memory_answer(store, question, call_scope(spec))

        async def amemory_answer(question: Question) -> str:
            return await asyncio.to_thread(memory_answer, question)

        tools.append(FunctionTool.from_defaults(fn=memory_answer, async_fn=amemory_answer, name=ANSWER_TOOL,
                                                description=ANSWER_DESCRIPTION))
    if about:
        def memory_about(name: EntityName) -> str:
            return run_memory_about(store, name, call_scope(spec))

        async def amemory_about(name: EntityName) -> str:
            return await asyncio.to_thread(memory_about, name)

        tools.append(FunctionTool.from_defaults(fn=memory_about, async_fn=amemory_about, name=ABOUT_TOOL,
                                                description=ABOUT_DESCRIPTION))
    return tools


def memory_agent(llm: Any, memory: Any, scope: ScopeSpec = None, *,
                 tools: Sequence[Any] = (), system_prompt: Optional[str] = DEFAULT_SYSTEM_PROMPT,
                 search_first: bool = True, forget: bool = False, **agent_kwargs: Any) -> FunctionAgent:
    """A ``FunctionAgent`` with the memory tools and ``initial_tool_choice="memory_search"``.

    Forcing the tool on the first step of each run makes the model write its own recall query from the user's
    message (better than searching with the raw message); later steps choose freely. ``llm`` must be a
    function-calling LLM whose integration honours ``tool_choice`` with a tool name (OpenAI, Anthropic, … do).
    """
    unknown = sorted(set(agent_kwargs) - set(FunctionAgent.model_fields))
    if unknown:  # FunctionAgent keeps unknown fields silently; a typo must not pass unnoticed
        raise TypeError(f"memory_agent() got unexpected keyword arguments: {', '.join(unknown)}")
    all_tools: list[Any] = [*memory_tools(memory, scope, forget=forget), *tools]
    return FunctionAgent(llm=llm, tools=all_tools, system_prompt=system_prompt,
                         initial_tool_choice=SEARCH_TOOL if search_first else None, **agent_kwargs)
