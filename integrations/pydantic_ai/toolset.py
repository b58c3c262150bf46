"""``memory_toolset``: memory_search / memory_save / memory_forget as a Pydantic AI ``FunctionToolset``.

The tools' behaviour and wording come from ``remem.core.tooling`` (shared by every adapter); this module only
gives them typed, described parameters and binds each call to the run's scope.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import Field
from pydantic_ai import FunctionToolset, RunContext

from ...core.tooling import (ABOUT_DESCRIPTION, FORGET_DESCRIPTION, SAVE_DESCRIPTION, SEARCH_DESCRIPTION,
                             run_memory_about, run_memory_forget, run_memory_save, run_memory_search, sync_memory)
from ...core.tooling import ANSWER_DESCRIPTION, run_memory_answer
from ...core.scope import check_scope_spec
from .scope import ScopeSource, resolve_scope

MemoryKind = Literal["fact", "preference", "decision", "event", "lesson", "summary", "note"]

Query = Annotated[str, Field(description="What to look for: names, topics, identifiers, the user's own words.")]
Limit = Annotated[int, Field(ge=1, le=20, description="Maximum number of memories to return.")]
KindFilter = Annotated[Optional[MemoryKind], Field(description="Only memories of this kind; omit for all kinds.")]
TagsFilter = Annotated[Optional[list[str]], Field(description="Only memories carrying all of these tags.")]
MemoryText = Annotated[str, Field(min_length=1, description=(
    "The memory as one self-contained sentence that makes sense without this conversation, "
    "e.g. 'Alice prefers green tea over coffee.'"))]
SaveKind = Annotated[MemoryKind, Field(description="fact, preference, decision (with its reason), lesson, event, ...")]
SaveTags = Annotated[Optional[list[str]], Field(description="A few short topic tags, e.g. ['drinks'].")]
Importance = Annotated[int, Field(ge=1, le=10, description="1 (trivia) to 10 (critical); 5 when unsure.")]
MemoryId = Annotated[str, Field(min_length=1, description="The id shown after a memory in memory_search results.")]
Question = Annotated[str, Field(min_length=1, description="The question to answer from memory, in plain words.")]
EntityName = Annotated[str, Field(min_length=1, description="A person, service, product, place, ... by any name.")]


def memory_toolset(memory: Any, *, scope: ScopeSource = None, limit: int = 5, token_budget: int | None = 1200,
                   include_save: bool = True, include_forget: bool = True, include_about: bool = False,
                   id: str | None = "remem_memory", max_retries: int | None = None,
                   include_answer: bool = False) -> FunctionToolset[Any]:
    """A toolset with ``memory_search`` (and ``memory_save`` / ``memory_forget`` unless turned off;
    ``memory_about``, an entity's profile, with ``include_about``; ``memory_answer``, a cited answer from
    memory, with ``include_answer``).

    ``memory`` is a ``Memory`` or ``AsyncMemory``. Each call uses the scope of the run it belongs to:
    ``scope``: a ``Scope`` or mapping, a ``(ctx) -> Scope | None`` callable such as ``from_deps`` (reads
    ``ctx.deps.memory_scope``), or None (the global space). When the callable finds no scope the tools answer
    ``"memory <action> did not run: <reason>"`` instead of touching another space. The tools never raise
    into the agent; their results are plain text lines that carry each memory's id (used by memory_forget).
    The functions are synchronous on purpose: Pydantic AI runs them in a worker thread, off the event loop.
    """
    store = sync_memory(memory)
    scope = check_scope_spec(scope)
    default_limit = max(1, min(int(limit), 20))
    toolset: FunctionToolset[Any] = FunctionToolset(id=id, max_retries=max_retries)

    def memory_search(ctx: RunContext[Any], query: Query, limit: Limit = default_limit, kind: KindFilter = None,
                      tags: TagsFilter = None) -> str:
        return run_memory_search(store, query, resolve_scope(scope, ctx), limit=limit, kind=kind, tags=tags,
                                 token_budget=token_budget)

    def memory_save(ctx: RunContext[Any], text: MemoryText, kind: SaveKind = "note", tags: SaveTags = None,
                    importance: Importance = 5) -> str:
        return run_memory_save(store, text, resolve_scope(scope, ctx), kind=kind, tags=tags, importance=importance)

    def memory_forget(ctx: RunContext[Any], memory_id: MemoryId) -> str:
        return run_memory_forget(store, memory_id, resolve_scope(scope, ctx))

    def memory_about(ctx: RunContext[Any], name: EntityName) -> str:
        return run_memory_about(store, name, resolve_scope(scope, ctx), token_budget=token_budget or 600)

    toolset.add_function(memory_search, takes_ctx=True, description=SEARCH_DESCRIPTION)
    if include_about:
        toolset.add_function(memory_about, takes_ctx=True, description=ABOUT_DESCRIPTION)
    if include_save:
        toolset.add_function(memory_save, takes_ctx=True, description=SAVE_DESCRIPTION)
    if include_forget:
        toolset.add_function(memory_forget, takes_ctx=True, description=FORGET_DESCRIPTION)
    if include_answer:
        def memory_answer(ctx: RunContext[Any], question: Question) -> str:
            return run_memory_answer(store, question, resolve_scope(scope, ctx))

        toolset.add_function(memory_answer, takes_ctx=True, description=ANSWER_DESCRIPTION)
    return toolset
