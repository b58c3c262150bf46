"""Which memory scope a run uses: ``scope=`` of every Pydantic AI entry point follows remem's one scope rule.

- a ``Scope`` (or a mapping of its fields): that scope for every run of the agent;
- a callable ``(ctx: RunContext) -> Scope | None``, computed per run, e.g. :func:`from_deps` (reads
  ``ctx.deps.memory_scope``) or ``lambda ctx: Scope(tenant=ctx.deps.org, user=ctx.deps.user_id)``; when it
  returns None the run gets no memory (tools answer "memory ... did not run: ...");
- ``None``: the global space (``Scope()``), shared by every run. Pass ``scope=from_deps`` for per-user memory.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

from pydantic_ai import RunContext

from ...core.scope import ScopeSpec
from ...core.tooling import call_scope
from ...core.types import Scope

ScopeSource = ScopeSpec
"""What adapters accept as ``scope=``: Scope | mapping | ``(ctx) -> Scope | None`` | None (the global space)."""


@runtime_checkable
class MemoryScoped(Protocol):
    """Deps that say whose memories a run may use: ``deps.memory_scope`` (a ``Scope``, or ``None`` for none).

    A ``Scope`` passed directly as deps, or a mapping deps with a ``"memory_scope"`` key, work as well.
    """

    @property
    def memory_scope(self) -> Scope | None: ...


def scope_from_deps(deps: Any) -> Scope | Mapping[str, Any] | None:
    """The scope deps carry (see :class:`MemoryScoped`), or None when they carry none."""
    if isinstance(deps, Scope):
        return deps
    if isinstance(deps, Mapping):
        return deps.get("memory_scope")
    return getattr(deps, "memory_scope", None)


def from_deps(ctx: RunContext[Any]) -> Scope | Mapping[str, Any] | None:
    """``scope=from_deps``: each run's scope is ``ctx.deps.memory_scope``; runs without one get no memory."""
    return scope_from_deps(ctx.deps)


def resolve_scope(source: ScopeSource, ctx: RunContext[Any]) -> Scope | None:
    """The run's scope (``None`` source = the global space), or None when a callable finds none or fails
    (logged, never raised)."""
    return call_scope(source, ctx)
