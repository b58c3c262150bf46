"""remem: long-term memory for AI agents on an embedded Qdrant.

>>> from remem import Memory, Scope
>>> mem = Memory()                                   # embedded, keyless, under $REMEM_HOME
>>> mem.add("Alice prefers green tea", scope=Scope(tenant="acme", user="alice"), kind="preference")
>>> mem.search("what does alice drink?", scope=Scope(tenant="acme", user="alice"))

Names are imported lazily, so a hook or CLI call that needs one class does not pay for the whole engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Memory": "remem.core.memory",
    "AsyncMemory": "remem.core.aio",
    "Scope": "remem.core.types",
    "ALL_TENANTS": "remem.core.scope",
    "Settings": "remem.core.settings",
    "QuotaExceededError": "remem.core.store.quota",
    "MemoryRecord": "remem.core.types",
    "SearchHit": "remem.core.types",
    "ForgetResult": "remem.core.types",
    "Stats": "remem.core.types",
    "Answer": "remem.core.answer.result",
    "RememError": "remem.core.types",
    "ScopeError": "remem.core.types",
    "NotFoundError": "remem.core.types",
    "EmbedderMismatchError": "remem.core.types",
    "ProviderError": "remem.core.types",
    "StoreLockedError": "remem.core.types",
    "ErasureIncompleteError": "remem.core.types",
    "DiskFullError": "remem.core.types",
    "ServiceError": "remem.core.service.client",
    "ServiceTimeoutError": "remem.core.service.client",
}

__all__ = [*_EXPORTS, "__version__"]

if TYPE_CHECKING:
    from .core.aio import AsyncMemory
    from .core.answer.result import Answer
    from .core.service.client import ServiceError, ServiceTimeoutError
    from .core.memory import Memory
    from .core.scope import ALL_TENANTS
    from .core.settings import Settings
    from .core.store.quota import QuotaExceededError
    from .core.types import (DiskFullError, EmbedderMismatchError, ErasureIncompleteError, ForgetResult,
                             MemoryRecord, NotFoundError, ProviderError, RememError, Scope, ScopeError, SearchHit,
                             Stats, StoreLockedError)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'remem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
