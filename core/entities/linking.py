"""Linking off the write path: a new memory is stored with its entities *pending* and linked moments later, in
batches, by a background thread, or at once by anything that reads entities (read-your-writes: :func:`settle`).

Why: extraction and linking cost about as much as the write itself (~265 us against ~330 us a memory, BM25
only); the caller of ``add_many`` or ``remember()`` should not wait for them. They are cheaper in batches too:
the entity records a batch creates are written in one upsert.

A pending memory carries :data:`PENDING` in its ``entities`` field (keyword-indexed, never an entity id). The
marker is written with the memory, in the same point, so a process that dies before linking leaves it behind
and the next open of the entity index finds those memories and links them (:meth:`Linker.recover`). A memory
forgotten before it was linked is not there when its turn comes: no entity is made for it. Where other writers
share the store (a Qdrant server) nothing is deferred: the entity index is not cached there and each write links
its own memory, as before.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..scope import coerce_scope
from ..store.backends.base import Cond, FilterSpec
from ..types import Scope, SparseVec
from .store import LINK_FIELD

if TYPE_CHECKING:
    from ..store.engine import Engine

LinkBatch = Callable[["Engine", "dict[str, tuple[str, SparseVec | None]]"], None]

log = logging.getLogger("remem.entities")

BACKGROUND = True  # False: every write links its own memory before it returns (the cost this module removes)
PENDING = "pending"  # in a memory's ``entities`` field until it is linked (entity ids are UUIDs)
IDLE = 0.2  # seconds without a new write before the background thread links: a bulk load is not slowed
BATCH = 64  # memories linked under the write lock at once (a writer waits for one batch at most, ~20 ms)
MAX_PENDING = 20_000  # beyond it the writer links a batch itself: the queue (ids and small vectors) stays bounded
RECOVER_PAGE = 1024


class Linker:
    """The memories of one open store waiting for their entities, and the thread that links them."""

    def __init__(self, engine: "Engine", link: "LinkBatch") -> None:
        self.engine = engine
        self._link = link  # links a batch under the write lock (hooks.link_pending)
        self._pending: dict[str, tuple[str, SparseVec | None]] = {}  # id -> (stored tenant, its ident vector)
        self._busy = 0  # memories taken from the queue whose links are being written
        self._cond = threading.Condition()
        self._last = 0.0
        self._thread: threading.Thread | None = None
        self._stopping = False

    def __len__(self) -> int:
        return len(self._pending) + self._busy

    # ------------------------------------------------------------------ queueing
    def add(self, memory_id: str, tenant: str, ident: SparseVec | None) -> None:
        """Queue a memory just written with :data:`PENDING` (called under the write lock, after the write: the
        queue changes only under it, so no other lock is taken unless the thread must be woken)."""
        first = not self._pending
        self._pending[memory_id] = (tenant, ident)
        self._last = time.monotonic()
        if first or self._thread is None:  # a thread counting down wakes by itself: no hand-over per write
            with self._cond:
                self._wake()
        if len(self._pending) > MAX_PENDING:
            self._link_some(None)

    def recover(self) -> int:
        """Queue the memories a previous process stored and did not link (it died first); returns how many."""
        backend = self.engine.backend
        flt = FilterSpec(must=[Cond(LINK_FIELD, any_of=(PENDING,))])
        if not backend.count(flt):
            return 0
        n, offset = 0, None
        while True:
            found, offset = backend.scroll(flt, limit=RECOVER_PAGE, offset=offset)
            with self._cond:
                for f in found:
                    self._pending.setdefault(f.id, (str(f.payload.get("tenant", "")), None))
            n += len(found)
            if offset is None or not found:
                break
        with self._cond:
            self._last = 0.0
            self._wake()
        log.info("linking the entities of %d memories a previous process left pending", n)
        return n

    def _wake(self) -> None:
        """Start the thread on the first pending memory, and tell it there is one (under ``_cond``)."""
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=self._run, name="remem-entity-linker", daemon=True)
            self._thread.start()
        self._cond.notify()

    # ------------------------------------------------------------------ linking
    def settle(self, scope: Any = None) -> None:
        """Link now what is pending for ``scope``'s tenant (None or ALL_TENANTS: every tenant), so that what
        reads entities next sees every memory written before it."""
        if not self._pending and not self._busy:
            return
        wanted = coerce_scope(scope, admin=True) if scope is not None else None
        tenant = wanted.stored_tenant if isinstance(wanted, Scope) else None
        with self.engine.write_lock:  # a batch the thread is linking is written when this is acquired
            while self._link_some(tenant):
                pass

    def _link_some(self, tenant: str | None) -> bool:
        """Link one batch (of ``tenant``'s memories; None: any); False when there was none."""
        with self.engine.write_lock:
            with self._cond:
                ids = [i for i, (t, _) in self._pending.items() if tenant is None or t == tenant][:BATCH]
                batch = {i: self._pending.pop(i) for i in ids}
                self._busy += len(batch)
            if not batch:
                return False
            try:
                self._link(self.engine, batch)
            except Exception as exc:  # noqa: BLE001 - they keep their marker: the next open links them
                log.warning("could not link the entities of %d memories: %s: %s", len(batch), type(exc).__name__,
                            exc)
            finally:
                with self._cond:
                    self._busy -= len(batch)
            return True

    def _run(self) -> None:
        lock = self.engine.write_lock
        while True:
            with self._cond:
                while not self._stopping:
                    idle = time.monotonic() - self._last
                    if self._pending and idle >= IDLE:
                        break
                    self._cond.wait(IDLE - idle if self._pending else None)
                if self._stopping:
                    return
            if not lock.acquire(timeout=0.1):  # a writer holds it: try again (and see whether we are stopping)
                continue
            try:
                if self._stopping:
                    return
                self._link_some(None)
                if not self._pending:
                    _flush_index(self.engine)
            except Exception as exc:  # noqa: BLE001 - a background thread never raises into nothing
                log.warning("entity linking stopped a batch: %s: %s", type(exc).__name__, exc)
            finally:
                lock.release()

    def stop(self) -> None:
        """Link everything pending, then end the thread (the store is closing: the caller holds the write lock)."""
        try:
            self.settle()
        finally:
            with self._cond:
                self._stopping = True
                self._cond.notify_all()
                thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=5)


def _flush_index(engine: "Engine") -> None:
    idx = getattr(engine._shared, "entity_index", None)
    if idx:
        idx.flush()


def linker(engine: "Engine", link: "LinkBatch | None" = None) -> Linker | None:
    """The store's linker; created on first use when given the function that links a batch."""
    shared = engine._shared
    got = getattr(shared, "entity_linker", None)
    if got is None and link is not None:
        with shared.lock:
            got = getattr(shared, "entity_linker", None)
            if got is None:
                got = Linker(engine, link)
                shared.entity_linker = got  # type: ignore[attr-defined]
    return got


def settle(engine: "Engine", scope: Any = None) -> None:
    """Link what is pending for ``scope`` now (see :meth:`Linker.settle`); nothing to do costs a dict check."""
    got = getattr(engine._shared, "entity_linker", None)
    if got is not None and len(got):
        got.settle(scope)


__all__ = ["BACKGROUND", "BATCH", "IDLE", "LinkBatch", "Linker", "MAX_PENDING", "PENDING", "linker", "settle"]
