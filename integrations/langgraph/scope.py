"""Who the memories of a LangGraph run belong to: a remem ``Scope`` from the run's config or runtime context."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

from ...core.types import Scope

log = logging.getLogger("remem.langgraph")

ScopeFn = Callable[[Mapping[str, Any], Any], "Scope | None"]
ScopeLike = Union[Scope, ScopeFn, "ScopeResolver", None]


def _lookup(source: Any, keys: tuple[str, ...]) -> str | None:
    if source is None:
        return None
    for key in keys:
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if value is not None and str(value).strip():
            return str(value)
    return None


@dataclass(frozen=True)
class ScopeResolver:
    """Reads the user (and optional tenant/agent) from the runtime context first, then
    ``config["configurable"]``. The thread id becomes the capture *session*, never part of the recall scope,
    so what was learnt in one thread is recalled in the next.

    With ``require_user=True`` (default) a run without a user id has no scope: recall is skipped and the memory
    tools answer "memory search did not run: ..." instead of searching someone else's memories.
    """

    tenant: str | None = None
    agent: str | None = None
    user_keys: tuple[str, ...] = ("user_id", "user")
    tenant_keys: tuple[str, ...] = ("tenant_id", "tenant")
    agent_keys: tuple[str, ...] = ("agent_id",)
    thread_keys: tuple[str, ...] = ("thread_id",)
    require_user: bool = True

    def scope(self, config: Mapping[str, Any] | None = None, context: Any = None) -> Scope | None:
        conf = (config or {}).get("configurable") or {}
        user = _lookup(context, self.user_keys) or _lookup(conf, self.user_keys)
        if user is None and self.require_user:
            return None
        tenant = _lookup(context, self.tenant_keys) or _lookup(conf, self.tenant_keys) or self.tenant
        agent = _lookup(context, self.agent_keys) or _lookup(conf, self.agent_keys) or self.agent
        try:
            return Scope(tenant=tenant, user=user, agent=agent)
        except (TypeError, ValueError) as exc:
            log.warning("invalid memory scope from config: %s", exc)
            return None

    def session(self, config: Mapping[str, Any] | None = None, context: Any = None) -> str | None:
        conf = (config or {}).get("configurable") or {}
        return _lookup(conf, self.thread_keys) or _lookup(context, self.thread_keys)


def resolve_scope(scope: ScopeLike, config: Mapping[str, Any] | None, context: Any = None, *,
                  tenant: str | None = None) -> Scope | None:
    """``scope`` may be a fixed :class:`Scope`, a ``(config, context) -> Scope | None`` callable, a
    :class:`ScopeResolver`, or None (the default resolver, with ``tenant``). Never raises."""
    try:
        if isinstance(scope, Scope):
            return scope
        if isinstance(scope, ScopeResolver):
            return scope.scope(config, context)
        if callable(scope):
            return scope(config or {}, context)
        return ScopeResolver(tenant=tenant).scope(config, context)
    except Exception as exc:  # noqa: BLE001 - no scope means "memory did not run", not a crashed turn
        log.warning("memory scope resolution failed: %s", exc)
        return None


def resolve_session(scope: ScopeLike, config: Mapping[str, Any] | None, context: Any = None) -> str | None:
    resolver = scope if isinstance(scope, ScopeResolver) else ScopeResolver()
    return resolver.session(config, context)


def current_config() -> dict[str, Any]:
    """The config of the LangGraph run we are inside, or {} outside a run."""
    try:
        from langgraph.config import get_config

        return dict(get_config())
    except Exception:  # noqa: BLE001
        return {}
