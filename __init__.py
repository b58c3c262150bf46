"""remem: long-term memory for AI agents on an embedded Qdrant.

>>> from remem import Memory, Scope
>>> mem = Memory()                                   # embedded, keyless, under $REMEM_HOME
>>> mem.add("Alice prefers green tea", scope=Scope(tenant="acme", user="alice"), kind="preference")
>>> mem.search("what does alice drink?", scope=Scope(tenant="acme", user="alice"))
"""

from .core.aio import AsyncMemory
from .core.memory import Memory
from .core.types import (EmbedderMismatchError, ForgetResult, MemoryRecord, NotFoundError, ProviderError,
                         RememError, Scope, ScopeError, SearchHit, Stats, StoreLockedError)

__version__ = "0.1.0"

__all__ = ["AsyncMemory", "EmbedderMismatchError", "ForgetResult", "Memory", "MemoryRecord", "NotFoundError",
           "ProviderError", "RememError", "Scope", "ScopeError", "SearchHit", "Stats", "StoreLockedError",
           "__version__"]
