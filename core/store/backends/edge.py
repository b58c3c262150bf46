"""Embedded backend: one Qdrant Edge shard in a folder (real HNSW, BM25 with IDF, payload indexes)."""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Sequence

import qdrant_edge as qe

try:
    import fcntl
except ImportError:  # Windows: no flock; Edge's own lock on its WAL still refuses a second process
    fcntl = None  # type: ignore[assignment]

from ...config import loose_paths, private_dir, private_opener, private_umask, repair_permissions, write_private
from ...types import DiskFullError, StoreLockedError
from . import ERASED_FILE, META_FILE, OWNER_FILE
from .disk_room import DiskRoom
from .edge_filters import edge_filter
from .base import (DENSE_VECTOR, FLOAT_FIELDS, KEYWORD_FIELDS, SPARSE_VECTORS, FilterSpec, Found, PointData,
                   PrefetchSpec)

log = logging.getLogger("remem.store.edge")

SHARD_DIR = "shard"
NEW_SHARD_DIR = "shard.new"  # a rewrite being built (compaction); the live shard is untouched until it is whole
OLD_SHARD_DIR = "shard.old"  # the shard a finished rewrite replaced, removed right after the swap
OWNER_ROLE = "process"  # written in OWNER_FILE after the pid; the local service sets "service" (hooks read it)
CLAIM_WAIT = 0.25  # seconds a claim retries: a hook probing who holds the store holds the lock for a moment
OPTIMIZE_EVERY = 2000  # writes before the first index build; later ones wait for the shard to grow by a quarter
OPTIMIZE_GROWTH = 0.25


def _rrf(k: int, prefetches: Sequence[PrefetchSpec]) -> Any:
    weights = [p.weight for p in prefetches]
    return qe.Fusion.Rrf(k=k, weights=weights) if any(w != 1.0 for w in weights) else qe.Fusion.Rrf(k=k)


def _vectors(p: PointData) -> dict[str, Any]:
    vec: dict[str, Any] = {name: qe.SparseVector(indices=i, values=v) for name, (i, v) in p.sparse.items()}
    if p.dense:
        vec[DENSE_VECTOR] = p.dense
    return vec


def _upsert(points: Sequence[PointData]) -> Any:
    return qe.UpdateOperation.upsert_points([qe.Point(p.id, _vectors(p), p.payload) for p in points])


def _found(p: Any, score: float = 0.0) -> Found:
    return Found(id=str(p.id), payload=dict(p.payload or {}), score=float(getattr(p, "score", score) or 0.0))


def _close_at_exit(ref: "weakref.ref[EdgeBackend]") -> None:
    backend = ref()
    if backend is not None:
        try:
            backend.close()
        except Exception:  # noqa: BLE001 - at exit: what cannot be closed is repaired at the next open
            pass


class EdgeBackend:
    """Qdrant Edge in ``<folder>/shard``; the folder also holds ``remem.json`` (embedder fingerprint etc.)."""

    kind = "edge"

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).expanduser().resolve()
        self.location = str(self.folder)
        private_dir(self.folder)
        repair_permissions(self.folder)  # modes left loose by older versions or a permissive umask
        self._shard: Any = None
        self._lock = threading.RLock()
        self._writes_since_optimize = 0
        self._size_at_optimize = 0
        self._touched: set[str] | None = None  # ids written while a rewrite is built (see rewrite)
        self._erasures = 0  # times words left the store since it was opened (a rewrite that raced one is redone)
        self._rewriting = threading.Lock()  # one rewrite (compaction) or recreate (reembed) of the files at a time
        self._owner: Any = None  # the open OWNER_FILE, locked (see _claim)
        self._room = DiskRoom(self.folder / SHARD_DIR)  # a full disk: an error, not SIGBUS
        # a script that ends without close(): Edge writes its last files as the shard is dropped at exit, under
        # the caller's umask (0644); closed here first, they are written private and checked
        atexit.register(_close_at_exit, weakref.ref(self))

    # -- meta -------------------------------------------------------------------------------------------
    def read_meta(self) -> dict[str, Any] | None:
        path = self.folder / META_FILE
        if not path.exists():
            return None
        return json.loads(path.read_text("utf-8"))

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_private(self.folder / META_FILE, json.dumps(meta, indent=2, sort_keys=True))

    def note_erasure(self) -> None:
        """Words left the store (a delete, an edit that dropped some): backups taken before now hold them."""
        self._erasures += 1
        # the time written in it, not its mtime (coarse on some file systems)
        write_private(self.folder / ERASED_FILE, str(time.time_ns()))

    # -- lifecycle --------------------------------------------------------------------------------------
    def _config(self, dense_dim: int) -> Any:
        vectors = {DENSE_VECTOR: qe.EdgeVectorParams(size=dense_dim, distance=qe.Distance.Dot)} if dense_dim else {}
        sparse = {name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf) for name in SPARSE_VECTORS}
        return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)

    def _recover(self) -> None:
        """Finish or undo a rewrite a crash interrupted: a half-built new shard is dropped; if the live one was
        moved aside and the new one not yet in its place, the old one goes back; a replaced one is removed."""
        live, new, old = (self.folder / d for d in (SHARD_DIR, NEW_SHARD_DIR, OLD_SHARD_DIR))
        if not live.exists() and old.exists():
            os.rename(old, live)
        shutil.rmtree(new, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)

    def _claim(self) -> None:
        """The store's files are this process's until :meth:`close`: another one that opens them is refused
        before it touches anything (it would take a running compaction's new shard for a crash's leftover)."""
        if self._owner is not None:
            return
        fh = open(self.folder / OWNER_FILE, "a", encoding="utf-8", opener=private_opener)
        give_up = time.monotonic() + CLAIM_WAIT
        while fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < give_up:
                    time.sleep(0.01)
                    continue
                fh.close()
                raise self._locked() from None
            except OSError:
                break  # a file system without flock: Edge's own lock on its WAL still refuses a second process
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()} {OWNER_ROLE}\n")  # who has it: a hook seeing a process, not a service, has it
        fh.flush()  # stops waiting for a service that cannot start
        self._owner = fh

    def _locked(self) -> StoreLockedError:
        return StoreLockedError(f"the store at {self.folder} is open in another process; use that process's service "
                                f"(remem serve / the default Memory() client) or close it first")

    def _release(self) -> None:
        if self._owner is not None:
            try:
                self._owner.seek(0)
                self._owner.truncate()  # no one has it now
            except OSError:
                pass
            self._owner.close()  # closing the file lets the lock go
            self._owner = None

    def ensure(self, dense_dim: int) -> None:
        shard_dir = self.folder / SHARD_DIR
        if self._owner is None:  # the first open (a swap or a recreate reopens a store that is open already)
            self._room.check("opening")
        self._claim()
        self._recover()
        try:
            with private_umask():  # Edge creates its WAL and segment files now: 0600, not 0644
                if (shard_dir / "edge_config.json").exists():
                    self._shard = qe.EdgeShard.load(str(shard_dir))
                    info = self._shard.info()
                    self._size_at_optimize = int(info.points_count)
                    self._create_indexes(skip=set(info.payload_schema))  # fields added by a newer remem
                else:
                    private_dir(shard_dir)
                    self._shard = qe.EdgeShard.create(str(shard_dir), self._config(dense_dim))
                    self._create_indexes()
        except Exception as exc:  # noqa: BLE001 - Edge raises a bare Exception for a held WAL lock
            if self._shard is None:
                self._release()  # not opened: the files are not ours to hold
            if "WouldBlock" in str(exc) or "lock" in str(exc).lower():
                raise self._locked() from exc
            raise

    def _create_indexes(self, skip: set[str] = frozenset(), shard: Any = None) -> None:  # type: ignore[assignment]
        shard = shard or self._shard
        for key in KEYWORD_FIELDS:
            if key in skip:
                continue
            params = qe.KeywordIndexParams(is_tenant=True) if key == "tenant" else None
            if params is not None:
                shard.update(qe.UpdateOperation.create_field_index(key, params))
            else:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
        for key in FLOAT_FIELDS:
            if key in skip:
                continue
            shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Float))

    def rewrite(self, pages: Iterable[Sequence[PointData]], dense_dim: int,
                settle: Callable[[set[str]], tuple[Sequence[PointData], Sequence[str]]],
                hold: ContextManager[Any]) -> bool:
        """A new shard built from ``pages`` beside the live one, then put in its place, and the old one's files
        deleted (with them, the bytes of every point deleted from it). Writes go on meanwhile: the ids they
        touch are noted, and before the swap, holding ``hold`` (the caller's write lock) and this backend's own,
        ``settle(ids)`` says what each is now (points to write, ids gone) and the new shard gets it. If words
        left the store meanwhile (:meth:`note_erasure`), the new files may hold them as they were copied: it is
        dropped and False returned (the caller tries again, the last time holding its lock throughout). Until
        the swap the live shard is untouched and still answers reads; a crash leaves one whole shard (see
        :meth:`_recover`)."""
        with self._rewriting:
            return self._rewrite(pages, dense_dim, settle, hold)

    def _rewrite(self, pages: Iterable[Sequence[PointData]], dense_dim: int,
                 settle: Callable[[set[str]], tuple[Sequence[PointData], Sequence[str]]],
                 hold: ContextManager[Any]) -> bool:
        new = self.folder / NEW_SHARD_DIR
        shutil.rmtree(new, ignore_errors=True)
        self._room.check("compacting", copy=True)
        self._touched, erasures, swapped = set(), self._erasures, False
        try:
            with private_umask():
                private_dir(new)
                shard = qe.EdgeShard.create(str(new), self._config(dense_dim))
                try:
                    self._create_indexes(shard=shard)
                    for page in pages:
                        if page:
                            shard.update(_upsert(page))
                    shard.optimize()
                    with hold, self._lock:
                        if self._erasures != erasures:
                            return False
                        points, gone = settle(self._touched)
                        if points:
                            shard.update(_upsert(points))
                        if gone:
                            shard.update(qe.UpdateOperation.delete_points(list(gone)))
                        shard.flush()
                        shard.close()
                        shard = None
                        self._swap(dense_dim)
                        swapped = True
                finally:
                    if shard is not None:
                        shard.close()
        finally:
            self._touched = None
            if not swapped:
                shutil.rmtree(new, ignore_errors=True)
        return True

    def _swap(self, dense_dim: int) -> None:
        """The new shard in the live one's place (the caller holds the lock); on a failure, one whole shard is
        opened again: the live one, or the new one if it was in place already."""
        new, live, old = (self.folder / d for d in (NEW_SHARD_DIR, SHARD_DIR, OLD_SHARD_DIR))
        self._shard.close()
        self._shard = None
        try:
            os.rename(live, old)
            os.rename(new, live)
        finally:
            self.ensure(dense_dim)  # opens the shard in place, removes the other

    def recreate(self, dense_dim: int) -> None:
        with self._rewriting, self._lock:
            if self._shard is not None:
                self._shard.close()
            shutil.rmtree(self.folder / SHARD_DIR, ignore_errors=True)
            self._shard = None
            self.ensure(dense_dim)

    def close(self) -> None:
        with self._lock, private_umask():
            try:
                if self._shard is not None:
                    try:
                        self._shard.flush()
                    except Exception as exc:  # noqa: BLE001 - Edge raises a bare Exception (a full disk: ENOSPC)
                        log.warning("could not flush the store at %s (%s); every write is in its WAL, which the "
                                    "next open reads back", self.folder, exc)
                    finally:
                        self._shard.close()
                        self._shard = None
                        loose_paths(self.folder, fix=True)  # files Edge created after open, under the caller's umask
            finally:
                self._release()

    def optimize(self) -> None:
        with self._lock, private_umask():  # new segment files
            self._room.check("optimizing")
            self._shard.optimize()
            self._writes_since_optimize = 0
            self._size_at_optimize = int(self._shard.info().points_count)

    def _note(self, ids: Iterable[str]) -> None:
        """The ids a write touched, while a rewrite is being built (it gives them to the new shard)."""
        if self._touched is not None:
            self._touched.update(ids)

    def _wrote(self, n: int) -> None:
        """Edge builds indexes only when asked: ask as the shard grows (geometrically, so bulk loads stay
        linear), without the user calling anything."""
        self._writes_since_optimize += n
        if self._writes_since_optimize >= max(OPTIMIZE_EVERY, OPTIMIZE_GROWTH * self._size_at_optimize):
            try:
                self.optimize()
            except DiskFullError:
                pass  # no room: the write is done; the next one is refused, and this is asked again after it

    # -- writes (each is in the WAL when the call returns) -------------------------------------------
    def upsert(self, points: Sequence[PointData]) -> None:
        if not points:
            return
        with self._lock:
            self._room.check("writing to")
            self._shard.update(_upsert(points))
            self._note(p.id for p in points)
            self._wrote(len(points))

    def set_payload(self, ids: Sequence[str], payload: dict[str, Any]) -> None:
        if ids:
            with self._lock:
                self._room.check("writing to")
                self._shard.update(qe.UpdateOperation.set_payload(list(ids), payload))
                self._note(ids)

    def set_vectors(self, points: Sequence[PointData]) -> None:
        if points:
            pvs = [qe.PointVectors(p.id, _vectors(p)) for p in points]
            with self._lock:
                self._room.check("writing to")
                self._shard.update(qe.UpdateOperation.update_vectors(pvs))
                self._note(p.id for p in points)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._room.check("deleting from")
            self.note_erasure()  # first: a store that cannot note it refuses the delete, rather than forget it
            with self._lock:
                self._shard.update(qe.UpdateOperation.delete_points(list(ids)))
                self._note(ids)
                self._wrote(len(ids))

    # -- reads ----------------------------------------------------------------------------------------
    def retrieve(self, ids: Sequence[str]) -> list[Found]:
        if not ids:
            return []
        with self._lock:
            return [_found(r) for r in self._shard.retrieve(list(ids), True, False)]

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        if not ids:
            return {}
        with self._lock:
            found = self._shard.retrieve(list(ids), False, True)
        return {str(r.id): list(r.vector[DENSE_VECTOR]) for r in found
                if isinstance(r.vector, dict) and r.vector.get(DENSE_VECTOR) is not None}

    def query(self, prefetches: Sequence[PrefetchSpec], flt: FilterSpec, limit: int, rrf_k: int) -> list[Found]:
        qf = self._filter(flt)
        pfs = [qe.Prefetch(limit=p.limit, query=qe.Query.Nearest(self._vector(p.vector), using=p.using), filter=qf)
               for p in prefetches]
        if len(pfs) == 1:
            only = prefetches[0]
            req = qe.QueryRequest(limit=limit, query=qe.Query.Nearest(self._vector(only.vector), using=only.using),
                                  filter=qf, with_payload=True)
        else:
            req = qe.QueryRequest(limit=limit, prefetches=pfs, query=_rrf(rrf_k, prefetches), filter=qf,
                                  with_payload=True)
        with self._lock:
            return [_found(p) for p in self._shard.query(req)]

    def _filter(self, flt: FilterSpec | None) -> Any:
        return edge_filter(flt, self._holding)

    def _holding(self, key: str, value: bool, within: Any) -> set[str]:
        """The ids of the points ``within`` allows whose payload ``key`` (a dotted path) is ``value``, or a list
        holding it."""
        out: set[str] = set()
        offset = None
        has = qe.Filter(must=[within], must_not=[qe.IsEmptyCondition(key)])
        while True:
            with self._lock:
                records, offset = self._shard.scroll(qe.ScrollRequest(limit=1024, offset=offset, filter=has,
                                                                      with_payload=True))
            for r in records:
                got: Any = r.payload or {}
                for part in key.split("."):
                    got = got.get(part) if isinstance(got, dict) else None
                if got is value or (isinstance(got, list) and any(g is value for g in got)):
                    out.add(str(r.id))
            if offset is None or not records:
                return out

    @staticmethod
    def _vector(v: Any) -> Any:
        if isinstance(v, tuple):
            return qe.SparseVector(indices=v[0], values=v[1])
        return v

    def scroll(self, flt: FilterSpec, limit: int, offset: Any = None) -> tuple[list[Found], Any]:
        req = qe.ScrollRequest(limit=limit, offset=offset, filter=self._filter(flt), with_payload=True)
        with self._lock:
            records, nxt = self._shard.scroll(req)
        return [_found(r) for r in records], nxt

    def newest(self, flt: FilterSpec, limit: int, by: str = "created_ts") -> list[Found]:
        return self._ordered(flt, limit, by, qe.Direction.Desc)

    def earliest(self, flt: FilterSpec, limit: int, by: str = "occurred_ts") -> list[Found]:
        return self._ordered(flt, limit, by, qe.Direction.Asc)

    def _ordered(self, flt: FilterSpec, limit: int, by: str, direction: Any) -> list[Found]:
        req = qe.ScrollRequest(limit=limit, filter=self._filter(flt), with_payload=True,
                               order_by=qe.OrderBy(key=by, direction=direction))
        with self._lock:
            records, _ = self._shard.scroll(req)
        return [_found(r) for r in records]

    def count(self, flt: FilterSpec) -> int:
        with self._lock:
            return int(self._shard.count(qe.CountRequest(filter=self._filter(flt), exact=True)))
