"""``Memory``: the public, synchronous entry point (embedded Qdrant Edge by default, or a Qdrant server).

Its operations are not written here: each method is derived from :mod:`remem.core.operations` (same name,
signature and docstring) and forwards the bound arguments to the memory's connection — the store in this
process, or the store's local service. :class:`~remem.AsyncMemory` is derived from the same table.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future, wait
from typing import Any, Callable, Iterable, Literal

from .connection import Connection, LocalConnection, ServiceConnection, connect
from .operations import OPERATIONS, MemoryOperations, Operation
from .providers.embedders import Embedder
from .recall.decay import DecayPolicy
from .settings import Settings, configured_kinds
from .types import RememError

log = logging.getLogger("remem.memory")
ServiceMode = Literal["auto", "off", "require"]
CLOSE_WAIT = 30.0  # seconds close() waits for background captures still running


class _Activity:
    """Calls in flight and background work tracked for one store handle, so close() can wait for them."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.calls = 0
        self.futures: set[Future[Any]] = set()
        self.closed = False

    def __enter__(self) -> "_Activity":
        with self.cond:
            if self.closed:
                raise RememError("this Memory is closed")
            self.calls += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self.cond:
            self.calls -= 1
            self.cond.notify_all()


class Memory(MemoryOperations):
    """Long-term memory for agents.

    ``Memory()`` opens the embedded store under ``$REMEM_HOME`` (keyless); ``Memory(path=...)`` another folder;
    ``Memory(url=..., api_key=...)`` a Qdrant server or cluster (``url=":memory:"``: qdrant-client local mode).

    An embedded store can be opened by one process only, so by default (``service="auto"``, or env
    ``REMEM_SERVICE``) ``Memory`` talks to the store's local service, starting it when needed: any number of
    processes then share the store. ``service="off"`` opens it in-process and exclusively (a clear
    :class:`StoreLockedError` if a service owns it); ``"require"`` never falls back to in-process.
    ``timeout`` bounds each service call (seconds; default 30, longer for bulk operations).
    ``tenant_quota`` caps the memories of each tenant, checked atomically with every write.
    ``thread_gap_minutes``: notes ``add()``ed with an ``occurred_at`` this close to each other in one scope are
    read as one conversation (each recalled with its neighbours; ``0`` turns it off).
    ``kinds``: kinds this store accepts beyond the built-in closed set (:data:`~remem.core.types.KINDS`);
    default ``$REMEM_KINDS`` (comma-separated). Any other kind is a ``ValueError`` that names the known ones.
    ``entities=False``: no entities linked on write nor used by recall (a same-run baseline; ``about()`` then
    knows only what was linked before).

    ``scope=None`` in every call is the global space: a library is not run "in" a project. (The CLI, the MCP
    server and the Claude Code hooks default to the project of their folder: :func:`remem.core.scope.default_scope`.)
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        collection: str | None = None,
        embedder: str | Embedder | None = None,
        rrf_k: int = 5,
        dedupe_threshold: float = 0.95,
        decay: DecayPolicy | None = None,
        on_embed_error: Literal["keep", "refuse"] = "keep",
        on_embedder_mismatch: Literal["error", "allow"] = "error",
        reinforce: bool = True,
        redact: bool = True,
        pii: bool = False,
        tenant_quota: int | None = None,
        thread_gap_minutes: float = 30.0,
        kinds: Iterable[str] | None = None,
        entities: bool = True,
        backend: Any = None,
        service: ServiceMode | None = None,
        timeout: float | None = None,
    ) -> None:
        settings = Settings(rrf_k=rrf_k, dedupe_threshold=dedupe_threshold, decay=decay or DecayPolicy(),
                            on_embed_error=on_embed_error, on_embedder_mismatch=on_embedder_mismatch,
                            reinforce=reinforce, redact=redact, pii=pii, tenant_quota=tenant_quota,
                            thread_gap_minutes=thread_gap_minutes, kinds=tuple(configured_kinds(kinds)),
                            entities=entities)
        self._attach(connect(path, url=url, api_key=api_key, collection=collection, embedder=embedder,
                             settings=settings, backend=backend, service=service, timeout=timeout), _Activity())

    def _attach(self, connection: Connection, activity: _Activity) -> None:
        self._connection = connection
        self._activity = activity

    @classmethod
    def _from(cls, connection: Connection, activity: _Activity) -> "Memory":
        mem = cls.__new__(cls)
        mem._attach(connection, activity)
        return mem

    # ------------------------------------------------------------------ what this handle is
    @property
    def settings(self) -> Settings:
        return self._connection.settings

    @property
    def remote(self) -> bool:
        """Whether the store is owned by the local service (every call is a socket request)."""
        return isinstance(self._connection, ServiceConnection)

    @property
    def embedder(self) -> Any:
        conn = self._connection
        return conn.embedder if isinstance(conn, ServiceConnection) else conn.local.embedder  # type: ignore[attr-defined]

    @property
    def backend(self) -> Any:
        conn = self._connection
        return conn.backend if isinstance(conn, ServiceConnection) else conn.local.backend  # type: ignore[attr-defined]

    @property
    def dense(self) -> bool:
        return int(self.embedder.dim) > 0

    @property
    def mismatch(self) -> str | None:
        conn = self._connection
        return conn.info.get("mismatch") if isinstance(conn, ServiceConnection) else conn.local.mismatch  # type: ignore[attr-defined]

    @property
    def service_info(self) -> dict[str, Any]:
        """The service's hello when this Memory connected (pid, embedder, socket, log, ...); {} in-process."""
        conn = self._connection
        return dict(conn.info) if isinstance(conn, ServiceConnection) else {}

    @property
    def client(self) -> Any:
        """The service client (None in-process)."""
        conn = self._connection
        return conn.client if isinstance(conn, ServiceConnection) else None

    def with_settings(self, **changes: Any) -> "Memory":
        """A handle on the same store with other settings (e.g. ``tenant_quota`` for one server's writes)."""
        return type(self)._from(self._connection.with_settings(self.settings.with_changes(changes)), self._activity)

    # ------------------------------------------------------------------ running operations
    def _run(self, op: Operation, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self._activity:
            conn = self._connection
            if isinstance(conn, LocalConnection):  # same signature as the declaration (tested): call it as given
                return getattr(conn.local, op.name)(*args, **kwargs)
            arguments = op.bind(args, kwargs)
            if op.name == "remember" and isinstance(self._connection, ServiceConnection) \
                    and not self._connection.encodable(arguments):
                from .distill.pipeline import remember

                return remember(self, **arguments)  # distilled here (e.g. an LLM object), stored through the service
            return self._connection.call(op, arguments)

    def track(self, future: Future[Any]) -> Future[Any]:
        """Background work on this memory (a capture): ``close()`` waits for it before closing the store."""
        act = self._activity
        with act.cond:
            act.futures.add(future)
        future.add_done_callback(self._untrack)
        return future

    def _untrack(self, future: Future[Any]) -> None:
        with self._activity.cond:
            self._activity.futures.discard(future)
            self._activity.cond.notify_all()

    def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Wait (up to ``timeout`` s) for background captures and calls in flight, then close the store (the
        service's store stays open for others). What is still running then is reported, never dropped silently."""
        act = self._activity
        with act.cond:
            if act.closed:
                return
            pending = list(act.futures)
        if pending:
            wait(pending, timeout=timeout)
        with act.cond:
            act.cond.wait_for(lambda: act.calls == 0, timeout=timeout)
            act.closed = True
            left, calls = len(act.futures), act.calls
        if left or calls:
            log.warning("remem: closing with %d background capture(s) and %d call(s) still running after %g s; "
                        "they will fail and be logged", left, calls, timeout)
        self._connection.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        conn = self._connection
        if isinstance(conn, ServiceConnection):
            return (f"Memory(service={conn.client.paths.socket!s}, location={conn.backend.location!r}, "
                    f"embedder={conn.embedder.name!r})")
        assert isinstance(conn, LocalConnection)
        return (f"Memory(backend={conn.local.backend.kind!r}, location={conn.local.backend.location!r}, "
                f"embedder={conn.local.embedder.name!r})")


def _sync_method(op: Operation) -> Callable[..., Any]:
    def method(self: Memory, *args: Any, **kwargs: Any) -> Any:
        return self._run(op, args, kwargs)
    return _describe(method, op, Memory)


def _describe(fn: Callable[..., Any], op: Operation, owner: type) -> Callable[..., Any]:
    """Give a derived method the operation's name, signature and docstring (what help() and IDEs show)."""
    fn.__name__ = op.name
    fn.__qualname__ = f"{owner.__name__}.{op.name}"
    fn.__doc__ = op.doc
    fn.__signature__ = op.signature  # type: ignore[attr-defined]
    fn.__module__ = owner.__module__
    return fn


for _name, _op in OPERATIONS.items():
    setattr(Memory, _name, _sync_method(_op))


def __getattr__(name: str) -> Any:  # names that used to live here
    if name in ("service_mode", "expected_embedder_name", "open_backend"):
        from . import connection

        return getattr(connection, name)
    raise AttributeError(name)


__all__ = ["Memory", "ServiceMode"]
