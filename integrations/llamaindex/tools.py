"""memory_search / memory_save (/ memory_forget) as LlamaIndex ``FunctionTool``s, and a ``FunctionAgent`` that
searches memory first.

Tool behaviour and wording come from :mod:`remem.core.tooling`, so every adapter answers the same way; in
particular a search that cannot run says ``memory search did not run: <reason>`` instead of pretending the
memory is empty. The async variants run the store call in a worker thread, never blocking the event loop.
"""

import asyncio
from typing import Annotated, Any, Callable, List, Optional, Sequence

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


def _tool(fn: Callable[..., str], name: str, description: str) -> FunctionTool:
    """A tool from ``fn`` (its signature is the schema the model sees) with an async twin that runs it in a worker
    thread, so an async agent's event loop never waits on the store."""

    async def run_async(*args: Any, **kwargs: Any) -> str:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return FunctionTool.from_defaults(fn=fn, async_fn=run_async, name=name, description=description)


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

    def memory_save(text: Text, kind: Kind = "note", tags: Tags = None) -> str:
        return run_memory_save(store, text, call_scope(spec), kind=kind, tags=tags)

    def memory_forget(memory_id: MemoryId) -> str:
        return run_memory_forget(store, memory_id, call_scope(spec))

    def memory_answer(question: Question) -> str:
        return run_memory_answer(store, question, call_scope(spec))

    def memory_about(name: EntityName) -> str:
        return run_memory_about(store, name, call_scope(spec))

    chosen = [(memory_search, SEARCH_TOOL, SEARCH_DESCRIPTION, True),
              (memory_save, SAVE_TOOL, SAVE_DESCRIPTION, True),
              (memory_forget, FORGET_TOOL, FORGET_DESCRIPTION, forget),
              (memory_answer, ANSWER_TOOL, ANSWER_DESCRIPTION, answer),
              (memory_about, ABOUT_TOOL, ABOUT_DESCRIPTION, about)]
    tools = [_tool(fn, name, description) for fn, name, description, wanted in chosen if wanted]
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
