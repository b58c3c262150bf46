"""``memory_search`` / ``memory_save`` as LangChain tools whose scope comes from the ``ToolRuntime``."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime

from ...core.tooling import ABOUT_DESCRIPTION, run_memory_about
from ...core.tooling import (SAVE_DESCRIPTION, SEARCH_DESCRIPTION, did_not_run, run_memory_save, run_memory_search,
                             sync_memory)
from ...core.tooling import ANSWER_DESCRIPTION, run_memory_answer
from ...core.scope import check_scope_spec
from .scope import ScopeLike, resolve_scope


NO_MEMORY = "no remem memory is attached (pass memory= or use RememStore)"


def _memory_for(memory: Any, runtime: Any) -> Any:
    if memory is not None:
        return sync_memory(memory)
    store = getattr(runtime, "store", None)
    return sync_memory(store) if store is not None and hasattr(store, "memory") else None


def memory_tools(memory: Any = None, *, scope: ScopeLike = None, limit: int = 5,
                 token_budget: int | None = 1200, save: bool = True, answer: bool = False,
                 about: bool = False) -> list[BaseTool]:
    """``[memory_search, memory_save]`` bound to ``memory`` (or, when None, to the graph's ``RememStore``),
    with ``memory_answer`` (a cited answer from memory) when ``answer`` and ``memory_about`` (an entity's
    profile) when ``about``.

    ``scope``: a Scope or mapping, a ``(config, context)`` callable resolved per call from the tool runtime
    (``ScopeResolver()`` takes the user from the context, then ``config["configurable"]``), or None (the global
    space). When a callable finds no scope, or there is no memory, the tools answer "memory ... did not run:
    <reason>" rather than "no memories".
    """
    scope = check_scope_spec(scope)

    def target(runtime: ToolRuntime) -> tuple[Any, Any]:
        """The memory and the scope this call works in (scope from the runtime's context, then config)."""
        sc = resolve_scope(scope, getattr(runtime, "config", None), getattr(runtime, "context", None))
        return _memory_for(memory, runtime), sc

    def memory_search(query: str, runtime: ToolRuntime, limit: int = limit) -> str:
        mem, sc = target(runtime)
        if mem is None:
            return did_not_run("search", NO_MEMORY)
        return run_memory_search(mem, query, sc, limit=limit, token_budget=token_budget)

    async def amemory_search(query: str, runtime: ToolRuntime, limit: int = limit) -> str:
        return await asyncio.to_thread(memory_search, query, runtime, limit)

    def memory_save(text: str, runtime: ToolRuntime, kind: str = "note", importance: int = 5) -> str:
        mem, sc = target(runtime)
        if mem is None:
            return did_not_run("save", NO_MEMORY)
        return run_memory_save(mem, text, sc, kind=kind, importance=importance)

    async def amemory_save(text: str, runtime: ToolRuntime, kind: str = "note", importance: int = 5) -> str:
        return await asyncio.to_thread(memory_save, text, runtime, kind, importance)

    tools: list[BaseTool] = [StructuredTool.from_function(func=memory_search, coroutine=amemory_search,
                                                          name="memory_search", description=SEARCH_DESCRIPTION)]
    if save:
        tools.append(StructuredTool.from_function(func=memory_save, coroutine=amemory_save, name="memory_save",
                                                  description=SAVE_DESCRIPTION))
    if answer:
        def memory_answer(question: str, runtime: ToolRuntime) -> str:
            mem, sc = target(runtime)
            if mem is None:
                return did_not_run("answer", NO_MEMORY)
            return run_memory_answer(mem, question, sc)

        async def amemory_answer(question: str, runtime: ToolRuntime) -> str:
            return await asyncio.to_thread(memory_answer, question, runtime)

        tools.append(StructuredTool.from_function(func=memory_answer, coroutine=amemory_answer, name="memory_answer",
                                                  description=ANSWER_DESCRIPTION))
    if about:
        def memory_about(name: str, runtime: ToolRuntime) -> str:
            mem, sc = target(runtime)
            if mem is None:
                return did_not_run("about", NO_MEMORY)
            return run_memory_about(mem, name, sc, token_budget=token_budget or 600)

        async def amemory_about(name: str, runtime: ToolRuntime) -> str:
            return await asyncio.to_thread(memory_about, name, runtime)

        tools.append(StructuredTool.from_function(func=memory_about, coroutine=amemory_about, name="memory_about",
                                                  description=ABOUT_DESCRIPTION))
    return tools
