"""The store engine: every memory operation on one Qdrant backend, with one embedder and one scope rule.

Operations that embed are plans (:mod:`.plan`): the sync facade drives them with the embedder's sync calls,
the async facade awaits its native async calls; both run the same validation and the same commit.
Scopes follow :mod:`remem.core.scope`: ``None`` is the global space, by-id operations act only inside their
scope, and only :data:`~remem.core.scope.ALL_TENANTS` crosses tenants.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from array import array
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..providers.embedders import Embedder, NoEmbedder, mismatch_advice
from ..recall import indexing, planner
from ..recall.rendering import fit_hits, render_context
from ..scope import ALL_TENANTS, AllTenants, coerce_scope, in_scope
from ..settings import Settings
from ..types import (DiskFullError, EmbedderMismatchError, ForgetResult, MemoryRecord, NotFoundError, RememError,
                     Scope, ScopeError, SearchHit, Stats, record_time, to_datetime, to_ts, utcnow)
from . import dedupe, derived, erasure, retrieval, threads
from .backends.base import Backend, Cond, FilterSpec, Found, PointData
from .retrieval import DENSE_WEIGHT
from .plan import EmbedDocuments, EmbedQuery, Plan, planned
from .fields import check_add_items, superseding_spec
from .records import build_filter, content_hash, from_payload, tally, to_payload, valid_within
from .quota import QuotaExceededError, check_quota, confirm_quota
from .validation import MAX_TEXT_CHARS, Validator, check_limit, check_query, finite

FORMAT_VERSION = 1


@dataclass
class _Shared:
    """What every settings view of one open store shares: the write lock, whether it is usable, and how many
    hits its searches lately dropped as not valid now (the spare they ask, :class:`~.retrieval.DropRate`)."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    drops: retrieval.DropRate = field(default_factory=retrieval.DropRate)
    closed: bool = False
    mismatch: str | None = None


class Engine:
    """Memory operations over a :class:`Backend`. Thread-safe; one instance (and its views) owns its backend."""

    def __init__(self, backend: Backend, embedder: Embedder | None = None, settings: Settings | None = None,
                 *, _shared: _Shared | None = None) -> None:
        self.backend = backend
        self.embedder: Embedder = embedder or NoEmbedder()
        self.settings = settings or Settings()
        self.check = Validator(redact=self.settings.redact, pii=self.settings.pii, kinds=self.settings.kinds)
        self._shared = _shared or _Shared()
        if _shared is None:
            self._open(self.settings.on_embedder_mismatch)

    def with_settings(self, settings: Settings) -> "Engine":
        """A view of the same open store (backend, embedder, write lock) with other settings."""
        return type(self)(self.backend, self.embedder, settings, _shared=self._shared)

    # ------------------------------------------------------------------ opening and the embedder fingerprint
    def fingerprint(self) -> dict[str, Any]:
        return {"embedder": self.embedder.name, "dim": int(self.embedder.dim)}

    def store_meta(self) -> dict[str, Any]:
        """What a store records of how it was written, at creation and on a rewrite (``reembed``)."""
        return {"format": FORMAT_VERSION, **self.fingerprint(), "sparse": indexing.SPARSE_RECIPE, "created_at": utcnow().isoformat()}

    def _open(self, on_mismatch: str) -> None:
        meta = self.backend.read_meta()
        fp = self.fingerprint()
        if meta is None:
            self.backend.ensure(fp["dim"])
            self.backend.write_meta(self.store_meta())
            return
        if meta.get("format", 1) > FORMAT_VERSION:
            raise RememError(f"store format {meta.get('format')} is newer than this remem ({FORMAT_VERSION}); upgrade remem")
        if (meta.get("embedder"), int(meta.get("dim", 0))) != (fp["embedder"], fp["dim"]):
            self.mismatch = (f"store at {self.backend.location} was built with embedder {meta.get('embedder')!r} "
                             f"(dim {meta.get('dim')}), but {fp['embedder']!r} (dim {fp['dim']}) is configured")
            if on_mismatch == "error":
                raise EmbedderMismatchError(f"{self.mismatch}. {mismatch_advice(meta.get('embedder'))}")
            self.backend.ensure(int(meta.get("dim", 0)))
            return
        self.backend.ensure(fp["dim"])

    @property
    def mismatch(self) -> str | None:
        return self._shared.mismatch

    @mismatch.setter
    def mismatch(self, value: str | None) -> None:
        self._shared.mismatch = value

    @property
    def closed(self) -> bool:
        return self._shared.closed

    @property
    def write_lock(self) -> threading.RLock:
        return self._shared.lock

    @property
    def dense(self) -> bool:
        return self.embedder.dim > 0

    def check_usable(self) -> None:
        if self._shared.closed:
            raise RememError("this Memory is closed")
        if self._shared.mismatch:
            raise EmbedderMismatchError(f"{self._shared.mismatch}; call reembed() first")

    # ------------------------------------------------------------------ records and points
    def point(self, rec: MemoryRecord, dense: list[float] | None) -> PointData:
        return PointData(id=rec.id, payload=to_payload(rec), dense=dense, sparse=indexing.sparse_vectors(rec))

    def _found(self, memory_id: Any) -> Found | None:
        if not isinstance(memory_id, str):  # a None or a number is a caller's bug, not an id that is absent
            raise TypeError(f"memory_id must be a string, got {type(memory_id).__name__}")
        try:
            uuid.UUID(str(memory_id))
        except (ValueError, AttributeError, TypeError):
            return None
        got = self.backend.retrieve([str(memory_id)])
        return got[0] if got else None

    def draft(self, text: str, *, kind: str = "note", tags: Iterable[str] | None = None,
              context: str | None = None) -> MemoryRecord:
        """The validated, redacted content of a new memory: what gets embedded before it is stored."""
        return MemoryRecord(id="", text=self.check.text(text), kind=self.check.kind(kind), scope=Scope(),
                            tags=self.check.tags(tags), context=self.check.context(context))

    def build_record(self, draft: MemoryRecord, dense: list[float] | None, *, scope: Any = None,
                     importance: int = 5, metadata: Mapping[str, Any] | None = None, source: str | None = None,
                     valid_from: Any = None, valid_until: Any = None, created_at: Any = None,
                     sources: Iterable[str] | None = None, occurred_at: Any = None, record_id: str | None = None,
                     supersedes: str | None = None) -> MemoryRecord:
        scope = self.check.scope(coerce_scope(scope))
        now = utcnow()
        created = record_time(created_at) or now
        rec = replace(draft, id=record_id or str(uuid.uuid4()), scope=scope,
                      importance=self.check.importance(importance), metadata=self.check.metadata(metadata),
                      source=self.check.source(source), created_at=created, updated_at=created,
                      valid_from=record_time(valid_from) or created, valid_until=record_time(valid_until),
                      content_hash=content_hash(draft.text, scope), embedded=dense is not None or not self.dense,
                      supersedes=supersedes, sources=self.check.sources(sources),
                      occurred_at=record_time(occurred_at))
        if rec.valid_until and rec.valid_until <= (rec.valid_from or rec.created_at):
            raise ValueError("valid_until must be after valid_from (or, without it, after created_at)")
        return rec

    def commit_new(self, rec: MemoryRecord, dense: list[float] | None, *, dedupe_: bool = True) -> MemoryRecord:
        """Store a built record (or merge it into the memory it repeats), under the write lock and the quota."""
        with self.write_lock:
            self.check_usable()
            if dedupe_:
                existing = dedupe.find_duplicate(self.backend, rec, dense, threshold=self.settings.dedupe_threshold,
                                                 rrf_k=self.settings.rrf_k)
                if existing is not None:
                    return dedupe.merge_into(self.backend, existing, rec)
            self._check_quota(rec.scope, 1)
            self.backend.upsert([self.point(rec, dense)])
            confirm_quota(self.backend, self.settings.tenant_quota, rec.scope, [rec.id])  # other processes' writes
        return rec

    def _check_quota(self, scope: Scope, adding: int) -> None:
        """Atomic with the write that follows (both under the write lock): N concurrent saves cannot overshoot."""
        check_quota(self.backend, self.settings.tenant_quota, scope, adding)

    # ------------------------------------------------------------------ add
    @planned
    def add(self, text: str, *, scope: Any = None, kind: str = "note", tags: Iterable[str] | None = None,
            importance: int = 5, metadata: Mapping[str, Any] | None = None, source: str | None = None,
            valid_from: Any = None, valid_until: Any = None, created_at: Any = None, context: str | None = None,
            dedupe: bool = True, sources: Iterable[str] | None = None, occurred_at: Any = None) -> Plan[MemoryRecord]:
        item = {"text": text, "kind": kind, "tags": tags, "importance": importance, "metadata": metadata,
                "source": source, "valid_from": valid_from, "valid_until": valid_until, "created_at": created_at,
                "context": context, "sources": sources, "occurred_at": occurred_at}
        return (yield from Engine.add_many.plan(self, [item], scope=scope, dedupe=dedupe))[0]

    @planned
    def add_many(self, items: Sequence[Mapping[str, Any]], *, scope: Any = None, dedupe: bool = True,
                 progress: Any = None, batch_size: int = 64) -> Plan[list[MemoryRecord]]:
        self.check_usable()
        check_limit("batch_size", batch_size, high=4096)
        items = threads.prepare(self, items)
        check_add_items(items)
        built = []  # every record built (its values checked) before any is stored; its thread is set below
        for it in items:
            draft = self.draft(it["text"], kind=it.get("kind", "note"), tags=it.get("tags"), context=it.get("context"))
            fields_ = {k: v for k, v in it.items() if k not in ("text", "kind", "tags", "context", "dedupe")}
            built.append(self.build_record(draft, None, **{"scope": scope, **fields_}))
        placeable = threads.placeable(self, items)  # dated notes: placed under the write lock once all are embedded
        out: list[Any] = [None] * len(built)
        kept: dict[int, Any] = {}  # vectors kept until then (a dense vector is the text's alone, placed or not)
        try:
            for start in range(0, len(built), batch_size):
                got = yield EmbedDocuments(built[start:start + batch_size], self.settings.on_embed_error == "keep")
                for k, vec in enumerate(got, start):
                    if placeable:  # nothing stored until the placed notes are checked: a bad one stores nothing
                        kept[k] = vec if vec is None else array("f", vec)  # 4 bytes a number, not 32
                    else:  # stored as embedded, each under the lock only while it is written
                        out[k] = self.commit_new(replace(built[k], embedded=vec is not None or not self.dense), vec,
                                                 dedupe_=items[k].get("dedupe", dedupe))
                if progress and not placeable:
                    progress(len(got))
            if placeable:
                out = threads.store_placed(self, items, built, kept, placeable, scope=scope, dedupe=dedupe)
                if progress:
                    progress(len(built))
        except DiskFullError as exc:  # say what is stored: calling again with dedupe on finds those as duplicates
            raise DiskFullError(f"{exc} ({len(self.backend.retrieve([r.id for r in built]))} of {len(built)} items "
                                "were stored as new memories before it)") from exc
        return out

    # ------------------------------------------------------------------ read one / update / supersede / forget
    def get(self, memory_id: str, *, scope: Any = None) -> MemoryRecord:
        self.check_usable()
        wanted = coerce_scope(scope, admin=True)
        found = self._found(memory_id)
        rec = from_payload(found.id, found.payload) if found is not None else None
        if rec is None or not in_scope(rec, wanted):
            # one answer for "no such id" and "not yours": existence in another tenant is not revealed
            raise NotFoundError(f"no memory with id {memory_id!r} in this scope")
        return rec

    @planned
    def update(self, memory_id: str, *, text: str | None = None, tags: Iterable[str] | None = None,
               importance: int | None = None, metadata: Mapping[str, Any] | None = None, kind: str | None = None,
               valid_until: Any = None, context: str | None = None, scope: Any = None,
               replace_metadata: bool = False, sources: Iterable[str] | None = None,
               occurred_at: Any = None) -> Plan[MemoryRecord]:
        self.check_usable()
        old = self.get(memory_id, scope=scope)
        new = replace(
            old,
            text=self.check.text(text) if text is not None else old.text,
            tags=self.check.tags(tags) if tags is not None else old.tags,
            importance=self.check.importance(importance) if importance is not None else old.importance,
            metadata=(old.metadata if metadata is None else self.check.metadata(metadata) if replace_metadata
                      else {**old.metadata, **self.check.metadata(metadata)}),
            kind=self.check.kind(kind) if kind is not None else old.kind,
            valid_until=record_time(valid_until) if valid_until is not None else old.valid_until,
            context=self.check.context(context) if context is not None else old.context,
            sources=self.check.sources(sources) if sources is not None else old.sources,
            occurred_at=record_time(occurred_at) if occurred_at is not None else old.occurred_at,
            updated_at=utcnow(),
        )
        new = erasure.kept_in_place(old, new)  # a message's thread, position and kind are where it was said
        if valid_until is not None and new.valid_until <= (new.valid_from or new.created_at):
            raise ValueError("valid_until must be after the memory's valid_from")
        reindex = text is not None or tags is not None or context is not None or occurred_at is not None
        # what the dense model embeds did not change (a context, a date): only what BM25 indexes is rewritten
        sparse_only = reindex and old.embedded and indexing.dense_docs(new) == indexing.dense_docs(old)
        embed = reindex and not sparse_only
        dense = (yield EmbedDocuments([new], self.settings.on_embed_error == "keep"))[0] if embed else None
        with self.write_lock:
            self.get(memory_id, scope=scope)  # still there (and still ours) after embedding
            erasure.note_removed(self, old, new)  # first: backups taken before hold what the edit drops
            if new.text != old.text:  # its neighbours' recall context holds the old words: rewritten first
                erasure.rewrite_neighbours(self, [(old, new.text)])
            if sparse_only:
                self.backend.set_vectors([self.point(new, None)])
                self.backend.set_payload([new.id], to_payload(new))
            elif reindex:
                new = replace(new, content_hash=content_hash(new.text, new.scope),
                              embedded=dense is not None or not self.dense)
                self.backend.upsert([self.point(new, dense)])
            else:
                self.backend.set_payload([new.id], to_payload(new))
        return new

    @planned
    def supersede(self, old_id: str, new: Any, *, scope: Any = None, valid_from: Any = None, kind: str | None = None,
                  tags: Iterable[str] | None = None, importance: int | None = None,
                  metadata: Mapping[str, Any] | None = None, source: str | None = None, context: str | None = None,
                  sources: Iterable[str] | None = None, occurred_at: Any = None) -> Plan[MemoryRecord]:
        self.check_usable()
        old = self.get(old_id, scope=scope)
        given = {"kind": kind, "tags": tags, "importance": importance, "metadata": metadata, "source": source,
                 "context": context, "sources": sources, "occurred_at": occurred_at}
        spec = superseding_spec(new, old, valid_from, {k: v for k, v in given.items() if v is not None})
        draft = self.draft(spec["text"], kind=spec["kind"], tags=spec["tags"], context=spec.get("context"))
        switch = spec["valid_from"]
        rec = self.build_record(draft, None, scope=old.scope, importance=spec["importance"],
                                metadata=spec["metadata"], source=spec.get("source"), valid_from=switch,
                                sources=spec.get("sources"), occurred_at=spec.get("occurred_at"), supersedes=old.id)
        dense = (yield EmbedDocuments([draft], self.settings.on_embed_error == "keep"))[0]
        with self.write_lock:
            old = self.get(old_id, scope=scope)
            if old.superseded_by:
                raise RememError(f"memory {old_id} was already superseded by {old.superseded_by}")
            if switch <= (old.valid_from or old.created_at):
                raise ValueError(f"the new memory must start after the old one became valid "
                                 f"({(old.valid_from or old.created_at).isoformat()})")
            self._check_quota(old.scope, 1)
            rec = replace(rec, embedded=dense is not None or not self.dense)
            self.backend.upsert([self.point(rec, dense)])
            confirm_quota(self.backend, self.settings.tenant_quota, old.scope, [rec.id])  # before closing the old
            self.backend.set_payload([old.id], {"valid_until_ts": switch.timestamp(), "superseded_by": rec.id,
                                                "updated_ts": time.time()})
        return rec

    def forget(self, memory_id: str | None = None, *, scope: Any = None, where: Mapping[str, Any] | None = None,
               dry_run: bool = True, kind: str | None = None, tags: Iterable[str] | None = None,
               before: Any = None) -> ForgetResult | bool:
        self.check_usable()
        if memory_id is None and scope is None:
            raise ScopeError("refusing a bulk forget without a scope: pass scope=Scope(tenant=...) (Scope() is global)")
        with self.write_lock if memory_id is not None or not dry_run else contextlib.nullcontext():
            if memory_id is not None:  # a missing id (or one of another scope) is a NotFoundError, as for get()
                gone = [self.get(memory_id, scope=scope)]
            else:
                gone = [from_payload(f.id, f.payload)
                        for f in self.scan(self.filter(scope, kind=kind, tags=tags, where=where, until=before))]
            notes = memory_id is None and derived.keeps_notes(scope, where, kind, tags, before)  # by id: as asked
            gone = derived.forget_with_derived(self, gone, dry_run=memory_id is None and dry_run, notes=notes)
        return True if memory_id is not None else ForgetResult(count=len(gone), ids=tuple(r.id for r in gone),
                                                                dry_run=dry_run)

    def after_forget(self, gone: Sequence[MemoryRecord]) -> None:
        """Called with the records a forget deleted: a layer above forgets its own copies (queued captures)."""

    # ------------------------------------------------------------------ search
    @planned
    def search(self, query: str, *, scope: Any = None, limit: int = 5, kind: Any = None,
               tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
               until: Any = None, as_of: Any = None, token_budget: int | None = None,
               reinforce: bool | None = None) -> Plan[list[SearchHit]]:
        """The recall plan (:func:`~remem.core.recall.planner.plan`: time-aware, repeats dropped) over
        :func:`~.retrieval.ranked`. Its extra searches (a time window, an anchor event) reuse the question's
        vector: they are the same question, narrowed."""
        self.check_usable()
        query = check_query(query)  # a string, of a question's size, that can be written
        check_limit("limit", limit, high=1000)
        if token_budget is not None:
            check_limit("token_budget", token_budget, low=0, high=1_000_000)
        valid_ts = finite("as_of", to_ts(as_of)) if as_of is not None else time.time()
        # now: validity is checked on the hits (retrieval's docstring says why); as_of: most records may be
        # invalid then (created later), so the filter says it
        checked = valid_ts if as_of is None else None
        base = dict(kind=kind, tags=tags, since=since, until=until, valid_ts=valid_ts if checked is None else None)
        asked = self.filter(scope, where=where, **base)  # a bad scope or filter fails before anything is embedded
        query = query.strip()
        if not query:
            return []
        entity_ident, unknown, alias_bm25 = self.entity_recall(query, scope)
        if unknown:  # the question names only what this scope never heard of: nothing is better than the nearest
            return []
        qvec = yield EmbedQuery(query)
        now_ts = time.time()

        def one(q: str, w: Mapping[str, Any] | None, n: int) -> list[SearchHit]:
            flt = asked if w is where else self.filter(scope, where=w, **base)  # the plan narrows `where` at times
            if not q.strip():  # the plan asks what happened in a time window: newest first
                newest = flt if checked is None else valid_within(flt, checked)
                return [SearchHit(record=from_payload(f.id, f.payload), relevance=0.0, score=0.0)
                        for f in self.backend.newest(newest, n)]
            return retrieval.ranked(self.backend, self.settings, q, qvec, flt, n, now_ts, checked, self._shared.drops,
                                    getattr(self.embedder, "relevance_floor", None), entity_ident, alias_bm25)

        hits = planner.plan(one, query, limit=limit, where=where, now=to_datetime(valid_ts))
        hits = fit_hits(hits, token_budget) if token_budget is not None else hits
        if hits and (self.settings.reinforce if reinforce is None else reinforce):
            self._reinforce(hits, now_ts)
        return hits

    def entity_recall(self, query: str, scope: Any) -> tuple[Any, bool, Any]:
        """Entity terms for a search, whether it names only unknown entities, and the BM25 terms of the other names
        of entities it names by an alias (LocalMemory: core.entities)."""
        return None, False, None

    def _reinforce(self, hits: Sequence[SearchHit], now_ts: float) -> None:
        """Count a recall: read and write each count under the write lock, so concurrent searches add up."""
        with self.write_lock:
            try:
                for found in self.backend.retrieve([rec.id for h in hits for rec in h.records]):
                    self.backend.set_payload([found.id], {"access_count": int(found.payload.get("access_count", 0))
                                                          + 1, "last_accessed_ts": now_ts})
            except DiskFullError:
                pass  # the search is answered; its recall goes uncounted until there is room

    @planned
    def context(self, query: str, *, scope: Any = None, token_budget: int = 800, limit: int = 20, kind: Any = None,
                tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
                until: Any = None, as_of: Any = None, reinforce: bool | None = None) -> Plan[str]:
        hits = yield from Engine.search.plan(self, query, scope=scope, limit=limit, kind=kind, tags=tags, where=where,
                                             since=since, until=until, as_of=as_of, token_budget=token_budget,
                                             reinforce=reinforce)
        return render_context(hits, token_budget)

    # ------------------------------------------------------------------ listing
    def filter(self, scope: Any, **conditions: Any) -> FilterSpec:
        """The Qdrant filter of ``scope`` (ALL_TENANTS: no tenant condition) and the given conditions."""
        wanted = coerce_scope(scope, admin=True)
        conditions["where"] = self.check.where_ids(conditions.get("where"))  # message ids as they are stored
        conditions["kind"] = self.check.kind_filter(conditions.get("kind"))  # a misspelt kind is an error
        return build_filter(None if isinstance(wanted, AllTenants) else wanted, **conditions)

    def scan(self, flt: FilterSpec, page: int = 512) -> Iterator[Found]:
        offset = None
        while True:
            found, offset = self.backend.scroll(flt, limit=page, offset=offset)
            yield from found
            if offset is None or not found:
                return

    def list(self, *, scope: Any = None, limit: int = 50, offset: int = 0, kind: Any = None,
             tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
             until: Any = None, include_superseded: bool = True) -> list[MemoryRecord]:
        self.check_usable()
        check_limit("limit", limit, high=10_000)
        check_limit("offset", offset, low=0, high=10_000_000)
        flt = self.filter(scope, kind=kind, tags=tags, where=where, since=since, until=until, notes=False)
        if not include_superseded:
            flt.must.append(Cond("valid_until_ts", gt=time.time()))
        found = self.backend.newest(flt, limit + offset)
        return [from_payload(f.id, f.payload) for f in found[offset:offset + limit]]

    def count(self, *, scope: Any = None, kind: Any = None, tags: Iterable[str] | None = None,
              where: Mapping[str, Any] | None = None) -> int:
        self.check_usable()
        return self.backend.count(self.filter(scope, kind=kind, tags=tags, where=where, notes=False))

    def stats(self, *, scope: Any = None) -> Stats:
        self.check_usable()
        return tally(self.scan(self.filter(scope, notes=False)), backend=self.backend.kind,
                     location=self.backend.location, embedder=self.embedder.name)

    def iter_records(self, scope: Any = None) -> Iterator[MemoryRecord]:
        self.check_usable()
        for f in self.scan(self.filter(scope)):
            yield from_payload(f.id, f.payload)

    def optimize(self) -> None:
        self.backend.optimize()

    def close(self) -> None:
        with self.write_lock:
            if not self._shared.closed:
                self._shared.closed = True
                self.backend.close()


__all__ = ["ALL_TENANTS", "DENSE_WEIGHT", "Engine", "FORMAT_VERSION", "MAX_TEXT_CHARS", "QuotaExceededError"]
