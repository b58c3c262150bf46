"""``AsyncMemory``: the same operations for asyncio code, never blocking the event loop.

Each method is derived from :mod:`remem.core.operations`, like :class:`~remem.Memory`'s: the same name,
signature and docstring, awaited. In-process, operations that embed run the same plan as the sync call with the
embedder's native async API, and the (sub-millisecond) store steps run in worker threads; through the local
service every call is one request over asyncio streams.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

from .memory import Memory
from .operations import OPERATIONS, Operation


class AsyncMemory:
    """Async twin of :class:`~remem.Memory`; same constructor, same methods, awaited."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, memory: Memory | None = None,
                 **kwargs: Any) -> None:
        self.sync = memory if memory is not None else Memory(path, **kwargs)

    async def _run(self, op: Operation, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        mem = self.sync
        arguments = op.bind(args, kwargs)
        with mem._activity:
            conn = mem._connection
            if op.name == "remember" and mem.remote and not conn.encodable(arguments):  # type: ignore[attr-defined]
                return await asyncio.to_thread(lambda: mem.remember(**arguments))
            return await conn.acall(op, arguments)

    def with_settings(self, **changes: Any) -> "AsyncMemory":
        return AsyncMemory(memory=self.sync.with_settings(**changes))

    @property
    def settings(self) -> Any:
        return self.sync.settings

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Async{self.sync!r}"


def _async_method(op: Operation) -> Callable[..., Any]:
    async def method(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await self._run(op, args, kwargs)
    method.__name__ = op.name
    method.__qualname__ = f"AsyncMemory.{op.name}"
    method.__doc__ = op.doc
    method.__signature__ = op.signature  # type: ignore[attr-defined]
    return method


for _name, _op in OPERATIONS.items():
    setattr(AsyncMemory, _name, _async_method(_op))

__all__ = ["AsyncMemory"]
