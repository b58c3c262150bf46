"""Which memory scope a run uses: from its deps (a small protocol) or an explicit scope / callable.

There is no fallback to the global space: a run whose scope cannot be resolved gets no memory (tools answer
"memory ... did not run: no memory scope is configured for this conversation"), because silently reading or
writing ``Scope()`` would mix every user's memories.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Protocol, Union, runtime_checkable

from pydantic_ai import RunContext

from ...core.types import Scope

log = logging.getLogger("remem.pydantic_ai")

ScopeLike = Union[Scope, Mapping[str, Any]]
ScopeSource = Union[ScopeLike, Callable[[RunContext[Any]], Union[ScopeLike, None]], None]
"""What adapters accept as ``scope=``:

- ``None`` (default): read it from the run's deps (see :class:`MemoryScoped`);
- a ``Scope`` (or a mapping of its fields): that scope for every run of the agent, stated explicitly;
- a callable ``(ctx: RunContext) -> Scope | None``: computed per run, e.g.
  ``lambda ctx: Scope(tenant=ctx.deps.org, user=ctx.deps.user_id)``.
"""


@runtime_checkable
class MemoryScoped(Protocol):
    """Deps that say whose memories a run may use: ``deps.memory_scope`` (a ``Scope``, or ``None`` for none).

    A ``Scope`` passed directly as deps, or a mapping deps with a ``"memory_scope"`` key, work as well.
    """

    @property
    def memory_scope(self) -> Scope | None: ...


def _coerce(value: Any) -> Scope | None:
    if value is None:
        return None
    if isinstance(value, Scope):
        return value
    if isinstance(value, Mapping):
        return Scope.coerce(value)
    raise TypeError(f"a memory scope must be a Scope, a mapping or None, got {type(value).__name__}")


def scope_from_deps(deps: Any) -> Scope | None:
    if isinstance(deps, Scope):
        return deps
    if isinstance(deps, Mapping):
        return _coerce(deps.get("memory_scope"))
    return _coerce(getattr(deps, "memory_scope", None))


def resolve_scope(source: ScopeSource, ctx: RunContext[Any]) -> Scope | None:
    """The run's scope, or None when none is configured or resolving it failed (logged, never raised)."""
    try:
        if source is None:
            return scope_from_deps(ctx.deps)
        if isinstance(source, (Scope, Mapping)):
            return _coerce(source)
        if callable(source):
            return _coerce(source(ctx))
        raise TypeError(f"scope= must be a Scope, a mapping, a callable or None, got {type(source).__name__}")
    except Exception as exc:  # noqa: BLE001 - a bad scope means "no memory", not a crashed turn
        log.warning("memory scope could not be resolved: %s", exc)
        return None


