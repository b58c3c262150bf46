"""The one scope rule, shared by the engine, every adapter, the MCP server, the CLI and the hooks.

- ``scope`` is a :class:`Scope`, a mapping of its fields, or (in adapters) a callable that returns one per call.
- ``None`` means the global space (``Scope()``), everywhere it means anything. It never means "every tenant".
- By-id operations (get, update, supersede, forget, import) act only inside their scope, like search does.
- Crossing tenants takes the explicit admin switch :data:`ALL_TENANTS`, never an omission.

Adapters resolve callables with :func:`resolve_scope`; a callable that returns ``None`` means "no scope for this
call", and the memory tools then answer "memory ... did not run" instead of using someone else's memories.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Union

from .types import MemoryRecord, Scope, ScopeError


class AllTenants:
    """The admin switch: ``scope=ALL_TENANTS`` reads or changes memories of every tenant. Use it only for
    store-wide administration (backups, restores, audits); agents and tools never need it."""

    _instance: "AllTenants | None" = None

    def __new__(cls) -> "AllTenants":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ALL_TENANTS"

    def __reduce__(self) -> str:
        return "ALL_TENANTS"


ALL_TENANTS = AllTenants()

ScopeLike = Union[Scope, Mapping[str, Any], None]
"""What the engine and the facade take: a Scope, a mapping of its fields, or None (the global space)."""

ScopeSpec = Union[Scope, Mapping[str, Any], Callable[..., Union[Scope, Mapping[str, Any], None]], None]
"""What adapters take: a ScopeLike, or a callable resolving one per call from the framework's call context."""


def coerce_scope(value: Any, *, admin: bool = False) -> Scope | AllTenants:
    """A concrete scope for the engine. ``admin=True`` lets :data:`ALL_TENANTS` through (operations that
    can span tenants); everywhere else it is refused, so a write always lands in one tenant."""
    if value is ALL_TENANTS or isinstance(value, AllTenants):
        if not admin:
            raise ScopeError("ALL_TENANTS is not allowed here: this operation works inside one scope")
        return ALL_TENANTS
    return Scope.coerce(value)


def in_scope(rec: MemoryRecord, scope: Scope | AllTenants) -> bool:
    """Whether a record belongs to ``scope``: the same tenant (the global space is one), and the same
    user/agent/session where the scope sets them."""
    if isinstance(scope, AllTenants):
        return True
    if rec.scope.stored_tenant != scope.stored_tenant:
        return False
    return all(getattr(scope, k) is None or getattr(scope, k) == getattr(rec.scope, k)
               for k in ("user", "agent", "session"))


def own_records(scope: Scope) -> dict[str, Any]:
    """``where`` conditions for ``scope``'s own records only: what the scope leaves unset, they leave unset too.
    A tenant's scope also holds its users', agents' and sessions' records; a lookup that reads or rewrites what
    a scope itself said before (a conversation's past, its summary, a thread) must not take theirs."""
    return {key: {"$exists": False} for key in ("user", "agent", "session") if getattr(scope, key) is None}


def resolve_scope(spec: ScopeSpec, *context: Any) -> Scope | None:
    """The scope of one adapter call: a fixed scope as it is (``None`` = the global space), or what a callable
    returns for this call's ``context`` (``None`` from a callable = no scope: the memory step does not run).

    Raises ``TypeError``/``ValueError`` for a malformed scope; adapters turn that into "did not run"."""
    if spec is None or isinstance(spec, (Scope, Mapping)):
        return Scope.coerce(spec)
    if isinstance(spec, AllTenants):
        raise ScopeError("adapters work inside one scope; ALL_TENANTS is for administration only")
    if callable(spec):
        value = spec(*context)
        return None if value is None else Scope.coerce(value)
    raise TypeError(f"scope must be a Scope, a mapping, a callable or None, got {type(spec).__name__}")


def check_scope_spec(spec: Any) -> ScopeSpec:
    """Validate an adapter's ``scope=`` when it is built, so a typo fails at construction, not mid-run."""
    if spec is None or callable(spec) and not isinstance(spec, (Scope, Mapping, AllTenants)):
        return spec
    if isinstance(spec, AllTenants):
        raise ScopeError("adapters work inside one scope; ALL_TENANTS is for administration only")
    return Scope.coerce(spec)


__all__ = ["ALL_TENANTS", "AllTenants", "ScopeLike", "ScopeSpec", "check_scope_spec", "coerce_scope", "in_scope",
           "own_records", "resolve_scope"]
