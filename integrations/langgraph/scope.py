"""Who the memories of a LangGraph run belong to: a remem ``Scope`` from the run's config or runtime context."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...core.scope import ScopeSpec
from ...core.tooling import call_scope
from ...core.types import Scope

log = logging.getLogger("remem.langgraph")

ScopeFn = Callable[[Mapping[str, Any], Any], "Scope | Mapping[str, Any] | None"]
ScopeLike = ScopeSpec
"""``scope=`` of every LangGraph entry point: a ``Scope`` or mapping (that scope for every run), a
``(config, context) -> Scope | None`` callable such as :class:`ScopeResolver` (per run), or None (the global
space)."""


SERVER_SET = "langgraph_auth_"
"""Keys a LangGraph server's auth writes into ``configurable`` (``langgraph_auth_user_id``): read only from there,
never from the run's context, which the client sends."""


def _lookup(source: Any, keys: tuple[str, ...], *, client_sent: bool = False) -> str | None:
    if source is None:
        return None
    for key in keys:
        if client_sent and key.startswith(SERVER_SET):
            continue
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if value is not None and str(value).strip():
            return str(value)
    return None


@dataclass(frozen=True)
class ScopeResolver:
    """A ``(config, context)`` scope callable: pass ``scope=ScopeResolver()`` to take the user (and optional
    tenant/agent) from the runtime context first, then ``config["configurable"]``. The thread id becomes the capture *session*, never part of the recall scope,
    so what was learnt in one thread is recalled in the next.

    With ``require_user=True`` (default) a run without a user id has no scope: recall is skipped and the memory
    tools answer "memory search did not run: ..." instead of searching someone else's memories.

    ``tenant=`` / ``agent=`` given here are fixed: a run's config or context cannot move it into another tenant
    (on a hosted LangGraph server the clients write ``configurable``). Left unset, they are read from the run.
    On a LangGraph server with custom auth, take the user from what the auth decided, not from what the client
    sent: ``ScopeResolver(tenant="acme", user_keys=("langgraph_auth_user_id",))`` (such keys are read only from
    ``configurable``, where the server writes them).
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
        user = _lookup(context, self.user_keys, client_sent=True) or _lookup(conf, self.user_keys)
        if user is None and self.require_user:
            return None
        # a tenant or agent given here is fixed: the run's config (which a hosted server's clients write) and
        # context only fill what was left unset
        tenant = self.tenant or _lookup(context, self.tenant_keys, client_sent=True) or _lookup(conf, self.tenant_keys)
        agent = self.agent or _lookup(context, self.agent_keys, client_sent=True) or _lookup(conf, self.agent_keys)
        try:
            return Scope(tenant=tenant, user=user, agent=agent)
        except (TypeError, ValueError) as exc:
            log.warning("invalid memory scope from config: %s", exc)
            return None

    def __call__(self, config: Mapping[str, Any] | None = None, context: Any = None) -> Scope | None:
        return self.scope(config, context)

    def session(self, config: Mapping[str, Any] | None = None, context: Any = None) -> str | None:
        conf = (config or {}).get("configurable") or {}
        return _lookup(conf, self.thread_keys) or _lookup(context, self.thread_keys)


def resolve_scope(scope: ScopeLike, config: Mapping[str, Any] | None, context: Any = None) -> Scope | None:
    """The scope of one call: a fixed ``Scope`` or mapping as it is, ``None`` as the global space, a callable
    called with ``(config, context)``; None when a callable finds no scope or fails (logged). Never raises."""
    return call_scope(scope, config or {}, context)


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
