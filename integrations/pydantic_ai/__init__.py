"""remem for Pydantic AI: memory tools, recall before each model request, capture after each run.

Usage::

    from remem import Memory, Scope
    from remem.integrations.pydantic_ai import (CaptureMemories, ForceMemorySearchFirst, RecallMemories,
                                                from_deps, memory_toolset)

    @dataclass
    class Deps:                      # any deps with a ``memory_scope`` (the MemoryScoped protocol)
        memory_scope: Scope

    mem = Memory()
    agent = Agent("openai:gpt-5.2", deps_type=Deps,
                  toolsets=[memory_toolset(mem, scope=from_deps)],
                  capabilities=[RecallMemories(mem, scope=from_deps), CaptureMemories(mem, scope=from_deps),
                                ForceMemorySearchFirst()])
    agent.run_sync("What do I usually drink?", deps=Deps(Scope(tenant="acme", user="alice")))

Requires ``pydantic-ai-slim>=2.78`` (the ``remem[pydantic-ai]`` extra).
"""

from .capabilities import CaptureMemories, ForceMemorySearchFirst, RecallMemories, run_query
from .messages import MEMORY_TOOL_NAMES, RecalledMemoriesPart, latest_user_text, to_openai_messages
from .scope import MemoryScoped, ScopeSource, from_deps, resolve_scope, scope_from_deps
from .rotation import ContextRotation, RotatedUserWordsPart, RotationDigestPart
from .toolset import MemoryKind, memory_toolset

__all__ = ["CaptureMemories", "ContextRotation", "RotatedUserWordsPart", "RotationDigestPart", "ForceMemorySearchFirst", "MEMORY_TOOL_NAMES", "MemoryKind", "MemoryScoped",
           "RecallMemories", "RecalledMemoriesPart", "ScopeSource", "from_deps", "latest_user_text", "memory_toolset", "resolve_scope", "run_query", "scope_from_deps",
           "to_openai_messages"]
