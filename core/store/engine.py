"""The in-process memory engine: every public operation, on one backend, with one embedder.

``Memory`` (the public facade) and the local service both run this. Operations that need embeddings take
precomputed vectors in their ``_``-prefixed forms so :class:`~remem.core.aio.AsyncMemory` can embed with
native async I/O and only hand the (sub-millisecond) store work to a thread.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import re
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

from ..recall import lexical
from .backends.base import Backend, Cond, FilterSpec, Found, PointData, PrefetchSpec
from ..recall.decay import DecayPolicy
from ..providers.embedders import Embedder, NoEmbedder
from ..recall.rendering import fit_hits, render_context
from ..recall import indexing
from .records import build_filter, content_hash, from_payload, normalize_text, scope_conditions, to_payload
from ..types import (KINDS, EmbedderMismatchError, ForgetResult, MemoryRecord, NotFoundError, ProviderError,
                    RememError, Scope, ScopeError, SearchHit, Stats, to_datetime, to_ts, utcnow)

FORMAT_VERSION = 1
DENSE_WEIGHT = 0.5  # BM25 over text+context leads; the dense list refines (LoCoMo: +0.004 R@10, steadier MRR)
MAX_TEXT_CHARS = 32_000
_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_NEGATIONS = re.compile(r"\b(not|no|never|don't|doesn't|didn't|isn't|wasn't|won't|can't|cannot|without|stopped|"
                        r"dislikes?|hates?)\b", re.I)
_NUMBER_RE = re.compile(
    r"\d+(?:[.,:]\d+)*|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|first|second|"
    r"third|fourth|fifth|last|next|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|"
    r"march|april|may|june|july|august|september|october|november|december)s?\b", re.I)
_PROPER_RE = re.compile(r"(?<=[\w,;:] )[A-Z][\w-]+")
_WORD_RE = re.compile(r"[a-z0-9]+")


class Engine:
    """Memory operations over a :class:`Backend`. Thread-safe; one instance owns its backend."""

    def __init__(
        self,
        backend: Backend,
        embedder: Embedder | None = None,
        *,
        rrf_k: int = 5,
        prefetch: int = 50,
        dedupe_threshold: float = 0.95,
        decay: DecayPolicy | None = None,
        on_embed_error: Literal["keep", "refuse"] = "keep",
        on_embedder_mismatch: Literal["error", "allow"] = "error",
        reinforce: bool = True,
        redact: bool = True,
        pii: bool = False,
    ) -> None:
        self.backend = backend
        self.redactor = _make_redactor(pii) if redact else None
        self.embedder: Embedder = embedder or NoEmbedder()
        self.rrf_k = rrf_k
        self.prefetch = prefetch
        self.dedupe_threshold = dedupe_threshold
        self.decay = decay or DecayPolicy()
        self.on_embed_error = on_embed_error
        self.reinforce = reinforce
        self._write_lock = threading.RLock()
        self._closed = False
        self.mismatch: str | None = None
        self._open(on_embedder_mismatch)

    # ------------------------------------------------------------------ opening and the embedder fingerprint
    def _fingerprint(self) -> dict[str, Any]:
        return {"embedder": self.embedder.name, "dim": int(self.embedder.dim)}

    def _open(self, on_mismatch: str) -> None:
        meta = self.backend.read_meta()
        fp = self._fingerprint()
        if meta is None:
            self.backend.ensure(fp["dim"])
            self.backend.write_meta({"format": FORMAT_VERSION, **fp, "created_at": utcnow().isoformat()})
            return
        if meta.get("format", 1) > FORMAT_VERSION:
            raise RememError(f"store format {meta.get('format')} is newer than this remem ({FORMAT_VERSION}); upgrade remem")
        if (meta.get("embedder"), int(meta.get("dim", 0))) != (fp["embedder"], fp["dim"]):
            self.mismatch = (f"store at {self.backend.location} was built with embedder {meta.get('embedder')!r} "
                             f"(dim {meta.get('dim')}), but {fp['embedder']!r} (dim {fp['dim']}) is configured")
            if on_mismatch == "error":
                raise EmbedderMismatchError(
                    f"{self.mismatch}. Run `remem reembed` (or open with on_embedder_mismatch='allow' and call "
                    f"mem.reembed()) to migrate the store in place, or configure REMEM_EMBEDDER="
                    f"{meta.get('embedder')} to keep using it.")
            self.backend.ensure(int(meta.get("dim", 0)))
            return
        self.backend.ensure(fp["dim"])

    def _check_usable(self) -> None:
        if self._closed:
            raise RememError("this Memory is closed")
        if self.mismatch:
            raise EmbedderMismatchError(f"{self.mismatch}; call reembed() first")

    # ------------------------------------------------------------------ embedding helpers
    @property
    def dense(self) -> bool:
        return self.embedder.dim > 0

    def vectors_for(self, recs: Sequence[MemoryRecord]) -> list[list[float] | None]:
        """Dense vectors for ``recs`` (one embedding batch); with ``on_embed_error='keep'`` a provider failure
        yields None for each (stored as pending, fixed by ``reembed(pending_only=True)``)."""
        if not self.dense or not recs:
            return [None] * len(recs)
        docs, spans = indexing.plan(recs)
        try:
            vectors = list(self.embedder.embed_documents(docs))
        except ProviderError:
            if self.on_embed_error == "refuse":
                raise
            return [None] * len(recs)
        return indexing.assemble(vectors, spans)

    def embed_query(self, text: str) -> list[float] | None:
        return self.embedder.embed_query(text) if self.dense else None

    # ------------------------------------------------------------------ validation
    def _check_text(self, text: Any) -> str:
        """Validated and redacted: no secret (or PII, when enabled) reaches the store or an embedding API."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        stripped = text.strip()
        if not stripped:
            raise ValueError("text is empty")
        if len(stripped) > MAX_TEXT_CHARS:
            raise ValueError(f"text is {len(stripped)} characters; the limit is {MAX_TEXT_CHARS} "
                             f"(distil long content with remember(), or split it)")
        if self.redactor is not None:
            stripped = self.redactor.redact(stripped).text
        return stripped

    def _check_context(self, context: Any) -> str | None:
        if context is None:
            return None
        if not isinstance(context, str):
            raise TypeError(f"context must be a string, got {type(context).__name__}")
        context = " ".join(context.split())[: 4 * MAX_TEXT_CHARS]
        if not context:
            return None
        return self._redact(context)

    @staticmethod
    def _check_kind(kind: str) -> str:
        if not isinstance(kind, str) or not _KIND_RE.match(kind):
            raise ValueError(f"kind must be a short lowercase identifier like {', '.join(KINDS)}; got {kind!r}")
        return kind

    @staticmethod
    def _check_importance(importance: int) -> int:
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 1 <= importance <= 10:
            raise ValueError(f"importance must be a number from 1 to 10, got {importance!r}")
        return int(round(importance))

    def _check_tags(self, tags: Iterable[str] | None) -> tuple[str, ...]:
        if tags is None:
            return ()
        if isinstance(tags, str):
            tags = [tags]
        out: list[str] = []
        for tag in tags:
            if not isinstance(tag, str) or not tag.strip():
                raise ValueError(f"tags must be non-empty strings, got {tag!r}")
            tag = self._redact(tag.strip())
            if tag not in out:
                out.append(tag)
        return tuple(out)

    def _redact(self, text: str | None) -> str | None:
        return self.redactor.redact(text).text if self.redactor is not None and text else text

    def _check_metadata(self, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        if metadata is None:
            return {}
        if not isinstance(metadata, Mapping):
            raise TypeError("metadata must be a mapping")
        try:
            clean = json.loads(json.dumps(dict(metadata), default=str))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata must be JSON-serialisable: {exc}") from exc
        return self.redactor.redact_data(clean)[0] if self.redactor is not None else clean

    # ------------------------------------------------------------------ points
    def _point(self, rec: MemoryRecord, dense: list[float] | None) -> PointData:
        return PointData(id=rec.id, payload=to_payload(rec), dense=dense, sparse=indexing.sparse_vectors(rec))

    def _get_found(self, memory_id: str) -> Found | None:
        try:
            uuid.UUID(str(memory_id))
        except (ValueError, AttributeError, TypeError):
            return None
        got = self.backend.retrieve([str(memory_id)])
        return got[0] if got else None

    # ------------------------------------------------------------------ add
    def draft(self, text: str, *, kind: str = "note", tags: Iterable[str] | None = None,
              context: str | None = None, **_: Any) -> MemoryRecord:
        """The validated, redacted content of a new memory: what gets embedded before it is stored."""
        return MemoryRecord(id="", text=self._check_text(text), kind=kind, scope=Scope(),
                            tags=self._check_tags(tags), context=self._check_context(context))

    def add(self, text: str, *, scope: Scope | Mapping[str, Any] | None = None, kind: str = "note",
            tags: Iterable[str] | None = None, importance: int = 5, metadata: Mapping[str, Any] | None = None,
            source: str | None = None, valid_from: Any = None, valid_until: Any = None, created_at: Any = None,
            context: str | None = None, dedupe: bool = True, sources: Iterable[str] | None = None,
            occurred_at: Any = None) -> MemoryRecord:
        """Store one memory. ``context`` (e.g. the conversation around it) is indexed for recall, not shown.
        The same text in the same scope is stored once; a near-duplicate is merged into the existing memory."""
        dense = self.vectors_for([self.draft(text, kind=kind, tags=tags, context=context)])[0]
        return self._add(text, dense, scope=scope, kind=kind, tags=tags, importance=importance, metadata=metadata,
                         source=source, valid_from=valid_from, valid_until=valid_until, created_at=created_at,
                         context=context, dedupe=dedupe, sources=sources, occurred_at=occurred_at)

    def _add(self, text: str, dense: list[float] | None, *, scope: Any = None, kind: str = "note",
             tags: Iterable[str] | None = None, importance: int = 5, metadata: Mapping[str, Any] | None = None,
             source: str | None = None, valid_from: Any = None, valid_until: Any = None, created_at: Any = None,
             context: str | None = None, dedupe: bool = True, record_id: str | None = None,
             supersedes: str | None = None, sources: Iterable[str] | None = None,
             occurred_at: Any = None) -> MemoryRecord:
        self._check_usable()
        text = self._check_text(text)
        scope = Scope.coerce(scope)
        now = utcnow()
        rec = MemoryRecord(
            id=record_id or str(uuid.uuid4()), text=text, kind=self._check_kind(kind), scope=scope,
            tags=self._check_tags(tags), importance=self._check_importance(importance),
            metadata=self._check_metadata(metadata), source=self._redact(source),
            created_at=to_datetime(created_at) or now, updated_at=to_datetime(created_at) or now,
            valid_from=to_datetime(valid_from), valid_until=to_datetime(valid_until),
            content_hash=content_hash(text, scope), embedded=dense is not None or not self.dense,
            supersedes=supersedes, context=self._check_context(context), sources=_check_sources(sources),
            occurred_at=to_datetime(occurred_at),
        )
        if rec.valid_from and rec.valid_until and rec.valid_until <= rec.valid_from:
            raise ValueError("valid_until must be after valid_from")
        with self._write_lock:
            if dedupe:
                existing = self._find_duplicate(rec, dense)
                if existing is not None:
                    return self._merge_into(existing, rec)
            self.backend.upsert([self._point(rec, dense)])
        return rec

    def _find_duplicate(self, rec: MemoryRecord, dense: list[float] | None) -> MemoryRecord | None:
        now_ts = time.time()
        flt = build_filter(rec.scope, kind=rec.kind, valid_ts=now_ts)  # a superseded memory is never revived
        flt.must.append(Cond("content_hash", eq=rec.content_hash))
        for f in self.backend.scroll(flt, limit=5)[0]:
            same = from_payload(f.id, f.payload)
            if not _conflicting(same.metadata, rec.metadata):
                return same
        # near duplicates: same scope, current, and either very close in meaning or near-identical in words
        flt = build_filter(rec.scope, kind=rec.kind, valid_ts=now_ts)
        if dense is not None:
            # stored vectors are text+context sums (Dot); relative to the new one's squared norm the score is the
            # cosine for memories without context, and the mean similarity to text and context otherwise
            norm2 = sum(x * x for x in dense) or 1.0
            cands = [replace(c, score=c.score / norm2)
                     for c in self.backend.query([PrefetchSpec("dense", dense, 5)], flt, 5, self.rrf_k)]
            threshold = self.dedupe_threshold
        else:
            cands = self.backend.query([PrefetchSpec("bm25", lexical.bm25_query(rec.text), 5)], flt, 5, self.rrf_k)
            threshold = None
        for cand in cands:
            other = from_payload(cand.id, cand.payload)
            if other.scope != rec.scope or _conflicting(other.metadata, rec.metadata):
                continue
            if same_meaning(rec.text, other.text, cand.score if threshold is not None else None, threshold):
                return other
        return None

    def _merge_into(self, existing: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        merged_tags = tuple(dict.fromkeys([*existing.tags, *new.tags]))
        meta = {**new.metadata, **existing.metadata}
        sources = tuple(dict.fromkeys([*existing.sources, *new.sources]))[:64]  # provenance accumulates
        update = {
            "tags": list(merged_tags),
            "sources": list(sources),
            "importance": max(existing.importance, new.importance),
            "meta": meta,
            "merged_count": existing.merged_count + 1,
            "updated_ts": time.time(),
        }
        self.backend.set_payload([existing.id], update)
        return replace(existing, tags=merged_tags, importance=update["importance"], metadata=meta, sources=sources,
                       merged_count=update["merged_count"], updated_at=utcnow())

    def add_many(self, items: Sequence[Mapping[str, Any]], *, scope: Any = None, dedupe: bool = True,
                 progress: Callable[[int], None] | None = None, batch_size: int = 64) -> list[MemoryRecord]:
        """Bulk add (import, benchmarks): embeds in batches; each item takes the keyword arguments of ``add``."""
        out: list[MemoryRecord] = []
        for start in range(0, len(items), batch_size):
            batch = items[start:start + batch_size]
            vectors = self.vectors_for([self.draft(it["text"], kind=it.get("kind", "note"), tags=it.get("tags"),
                                                   context=it.get("context")) for it in batch])
            for it, vec in zip(batch, vectors):
                kwargs = {k: v for k, v in it.items() if k != "text"}
                kwargs.setdefault("scope", scope)
                kwargs.setdefault("dedupe", dedupe)
                out.append(self._add(it["text"], vec, **kwargs))
            if progress:
                progress(len(batch))
        return out

    # ------------------------------------------------------------------ read one / update / supersede / forget
    def get(self, memory_id: str, *, scope: Any = None) -> MemoryRecord:
        self._check_usable()
        found = self._get_found(memory_id)
        if found is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        rec = from_payload(found.id, found.payload)
        if scope is not None and not _in_scope(rec, Scope.coerce(scope)):
            raise NotFoundError(f"no memory with id {memory_id!r} in this scope")
        return rec

    def update(self, memory_id: str, *, text: str | None = None, tags: Iterable[str] | None = None,
               importance: int | None = None, metadata: Mapping[str, Any] | None = None, kind: str | None = None,
               valid_until: Any = None, context: str | None = None, scope: Any = None,
               replace_metadata: bool = False) -> MemoryRecord:
        """Change a memory in place. ``metadata`` is merged into the existing one unless ``replace_metadata``."""
        dense = None
        if text is not None or context is not None or tags is not None:  # the point is rewritten: new vectors
            dense = self.vectors_for([self.revised(memory_id, text=text, context=context, scope=scope)])[0]
        return self._update(memory_id, dense, text=text, tags=tags, importance=importance, metadata=metadata,
                            kind=kind, valid_until=valid_until, context=context, scope=scope,
                            replace_metadata=replace_metadata)

    def revised(self, memory_id: str, *, text: str | None = None, context: str | None = None,
                scope: Any = None) -> MemoryRecord:
        """The record as an update of its text/context would index it (what gets re-embedded)."""
        old = self.get(memory_id, scope=scope)
        return replace(old, text=self._check_text(text) if text is not None else old.text,
                       context=self._check_context(context) if context is not None else old.context)

    def _update(self, memory_id: str, dense: list[float] | None, *, text: str | None = None,
                tags: Iterable[str] | None = None, importance: int | None = None,
                metadata: Mapping[str, Any] | None = None, kind: str | None = None, valid_until: Any = None,
                context: str | None = None, scope: Any = None, replace_metadata: bool = False) -> MemoryRecord:
        with self._write_lock:
            old = self.get(memory_id, scope=scope)
            new = replace(
                old,
                text=self._check_text(text) if text is not None else old.text,
                tags=self._check_tags(tags) if tags is not None else old.tags,
                importance=self._check_importance(importance) if importance is not None else old.importance,
                metadata=(old.metadata if metadata is None else self._check_metadata(metadata) if replace_metadata
                          else {**old.metadata, **self._check_metadata(metadata)}),
                kind=self._check_kind(kind) if kind is not None else old.kind,
                valid_until=to_datetime(valid_until) if valid_until is not None else old.valid_until,
                context=self._check_context(context) if context is not None else old.context,
                updated_at=utcnow(),
            )
            if new.valid_until is not None and new.valid_until <= (new.valid_from or new.created_at):
                raise ValueError("valid_until must be after the memory's valid_from")
            if text is not None or tags is not None or context is not None:
                new = replace(new, content_hash=content_hash(new.text, new.scope),
                              embedded=dense is not None or not self.dense)
                self.backend.upsert([self._point(new, dense)])
            else:
                self.backend.set_payload([new.id], to_payload(new))
            return new

    def supersede(self, old_id: str, new: str | MemoryRecord | Mapping[str, Any], *, scope: Any = None,
                  valid_from: Any = None, **fields: Any) -> MemoryRecord:
        """Replace a memory that stopped being true: the old one is closed at ``valid_from`` (default now),
        never deleted, and both are linked, so ``search(as_of=...)`` still sees what was true before."""
        spec, draft = self.prepare_supersede(old_id, new, scope=scope, valid_from=valid_from, **fields)
        return self._supersede(old_id, self.vectors_for([draft])[0], spec, scope=scope)

    def _supersede(self, old_id: str, dense: list[float] | None, spec: Mapping[str, Any], *,
                   scope: Any = None) -> MemoryRecord:
        with self._write_lock:
            old = self.get(old_id, scope=scope)
            if old.superseded_by:
                raise RememError(f"memory {old_id} was already superseded by {old.superseded_by}")
            switch = to_datetime(spec["valid_from"])
            if switch <= (old.valid_from or old.created_at):
                raise ValueError(f"the new memory must start after the old one became valid "
                                 f"({(old.valid_from or old.created_at).isoformat()})")
            new_id = str(uuid.uuid4())
            rec = self._add(spec["text"], dense, scope=old.scope, kind=spec["kind"], tags=spec["tags"],
                            importance=spec["importance"], metadata=spec["metadata"], source=spec.get("source"),
                            context=spec.get("context"), valid_from=switch, dedupe=False, record_id=new_id,
                            supersedes=old.id)
            self.backend.set_payload([old.id], {"valid_until_ts": switch.timestamp(), "superseded_by": rec.id,
                                                "updated_ts": time.time()})
            return rec

    def prepare_supersede(self, old_id: str, new: Any, *, scope: Any = None, valid_from: Any = None,
                          **fields: Any) -> tuple[dict[str, Any], MemoryRecord]:
        """The new memory's fields and the draft to embed (the async twin embeds it natively)."""
        old = self.get(old_id, scope=scope)
        spec = _new_spec(new, old, valid_from, fields)
        return spec, self.draft(spec["text"], kind=spec["kind"], tags=spec["tags"], context=spec.get("context"))

    def forget(self, memory_id: str | None = None, *, scope: Any = None, where: Mapping[str, Any] | None = None,
               dry_run: bool = True, kind: str | None = None, tags: Iterable[str] | None = None,
               before: Any = None) -> ForgetResult | bool:
        """``forget(id)`` deletes one memory (returns whether it existed). ``forget(scope=..., ...)`` deletes
        many, as a dry run unless ``dry_run=False``; it refuses to run without a scope."""
        self._check_usable()
        if memory_id is not None:
            with self._write_lock:
                try:
                    rec = self.get(memory_id, scope=scope)
                except NotFoundError:
                    return False
                self.backend.delete([rec.id])
                return True
        if scope is None:
            raise ScopeError("refusing a bulk forget without a scope: pass scope=Scope(tenant=...) "
                             "(Scope() means the global space)")
        flt = build_filter(Scope.coerce(scope), kind=kind, tags=tags, where=where, until=before)
        ids = [f.id for f in self._scan(flt)]
        if not dry_run and ids:
            with self._write_lock:
                for start in range(0, len(ids), 512):
                    self.backend.delete(ids[start:start + 512])
        return ForgetResult(count=len(ids), ids=tuple(ids), dry_run=dry_run)

    def _scan(self, flt: FilterSpec, page: int = 512) -> Iterator[Found]:
        offset = None
        while True:
            found, offset = self.backend.scroll(flt, limit=page, offset=offset)
            yield from found
            if offset is None or not found:
                return

    # ------------------------------------------------------------------ search
    def search(self, query: str, *, scope: Any = None, limit: int = 5, kind: Any = None,
               tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
               until: Any = None, as_of: Any = None, token_budget: int | None = None,
               reinforce: bool | None = None) -> list[SearchHit]:
        qvec = self.embed_query(query) if self.dense and isinstance(query, str) and query.strip() else None
        return self._search(query, qvec, scope=scope, limit=limit, kind=kind, tags=tags, where=where, since=since,
                            until=until, as_of=as_of, token_budget=token_budget, reinforce=reinforce)

    def _search(self, query: str, qvec: list[float] | None, *, scope: Any = None, limit: int = 5, kind: Any = None,
                tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
                until: Any = None, as_of: Any = None, token_budget: int | None = None,
                reinforce: bool | None = None) -> list[SearchHit]:
        self._check_usable()
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if not _is_int(limit) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        if token_budget is not None and token_budget < 0:
            raise ValueError("token_budget must be >= 0")
        query = query.strip()
        if not query:
            return []
        scope = Scope.coerce(scope)
        now_ts = time.time()
        valid_ts = to_ts(as_of) if as_of is not None else now_ts
        flt = build_filter(scope, kind=kind, tags=tags, where=where, since=since, until=until, valid_ts=valid_ts)
        depth = max(self.prefetch, limit * 3)
        prefetches = [PrefetchSpec("bm25", lexical.bm25_query(query), depth)]
        if qvec:
            prefetches.append(PrefetchSpec("dense", qvec, depth, weight=DENSE_WEIGHT))
        ident = lexical.ident_vector(query)
        if ident[0]:
            prefetches.append(PrefetchSpec("ident", ident, depth))
        prefetches = [p for p in prefetches if not isinstance(p.vector, tuple) or p.vector[0]]
        if not prefetches:
            return []
        found = self.backend.query(prefetches, flt, max(limit * 3, 20), self.rrf_k)
        hits = [SearchHit(record=(rec := from_payload(f.id, f.payload)), relevance=f.score,
                          score=self.decay.score(f.score, rec, now_ts)) for f in found]
        hits.sort(key=lambda h: h.score, reverse=True)
        hits = fit_hits(hits[:limit], token_budget) if token_budget is not None else hits[:limit]
        if hits and (self.reinforce if reinforce is None else reinforce):
            self._reinforce(hits, now_ts)
        return hits

    def _reinforce(self, hits: Sequence[SearchHit], now_ts: float) -> None:
        with self._write_lock:
            for hit in hits:
                self.backend.set_payload([hit.record.id], {"access_count": hit.record.access_count + 1,
                                                           "last_accessed_ts": now_ts})

    def context(self, query: str, *, scope: Any = None, token_budget: int = 800, limit: int = 20,
                **filters: Any) -> str:
        hits = self.search(query, scope=scope, limit=limit, token_budget=token_budget, **filters)
        return render_context(hits, token_budget)

    # ------------------------------------------------------------------ listing and admin
    def list(self, *, scope: Any = None, limit: int = 50, offset: int = 0, kind: Any = None,
             tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
             until: Any = None, include_superseded: bool = True) -> list[MemoryRecord]:
        """Newest first. ``scope=None`` lists the global space, never every tenant."""
        self._check_usable()
        if not _is_int(limit) or not _is_int(offset) or limit < 1 or offset < 0:
            raise ValueError(f"limit must be an integer >= 1 and offset >= 0, got {limit!r}, {offset!r}")
        flt = build_filter(Scope.coerce(scope), kind=kind, tags=tags, where=where, since=since, until=until)
        if not include_superseded:
            flt.must.append(Cond("valid_until_ts", gt=time.time()))
        found = self.backend.newest(flt, limit + offset)
        return [from_payload(f.id, f.payload) for f in found[offset:offset + limit]]

    def count(self, *, scope: Any = None, kind: Any = None, tags: Iterable[str] | None = None,
              where: Mapping[str, Any] | None = None) -> int:
        """How many memories match, counted by Qdrant (no scan): cheap enough for quotas and dashboards."""
        self._check_usable()
        return self.backend.count(build_filter(Scope.coerce(scope), kind=kind, tags=tags, where=where))

    def stats(self, *, scope: Any = None) -> Stats:
        self._check_usable()
        flt = _scope_filter(scope)
        by_kind: dict[str, int] = {}
        pending = 0
        oldest = newest = None
        total = 0
        for f in self._scan(flt):
            total += 1
            kind = f.payload.get("kind", "note")
            by_kind[kind] = by_kind.get(kind, 0) + 1
            pending += 0 if f.payload.get("embedded", True) else 1
            ts = f.payload.get("created_ts")
            if ts is not None:
                oldest = ts if oldest is None else min(oldest, ts)
                newest = ts if newest is None else max(newest, ts)
        conv = lambda ts: None if ts is None else _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc)  # noqa: E731
        return Stats(count=total, by_kind=dict(sorted(by_kind.items())), pending_embeddings=pending,
                     oldest=conv(oldest), newest=conv(newest), backend=self.backend.kind,
                     location=self.backend.location, embedder=self.embedder.name)

    def iter_records(self, scope: Any = None) -> Iterator[MemoryRecord]:
        flt = _scope_filter(scope)
        for f in self._scan(flt):
            yield from_payload(f.id, f.payload)

    def export(self, path: str | os.PathLike[str], *, scope: Any = None) -> int:
        """JSONL (gzip when the name ends in .gz): a header with the embedder fingerprint, then one record a line."""
        self._check_usable()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        opener = gzip.open if path.suffix == ".gz" else open
        n = 0
        with opener(tmp, "wt", encoding="utf-8") as fh:  # type: ignore[operator]
            fh.write(json.dumps({"remem_export": FORMAT_VERSION, **self._fingerprint(),
                                 "exported_at": utcnow().isoformat()}) + "\n")
            for rec in self.iter_records(scope):
                fh.write(json.dumps(rec.as_dict(), ensure_ascii=False) + "\n")
                n += 1
        os.replace(tmp, path)
        return n

    def import_(self, path: str | os.PathLike[str], *, progress: Callable[[int], None] | None = None) -> int:
        """Load an export; ids, times and supersede links are kept, and vectors are rebuilt by this embedder.
        Importing the same file twice changes nothing."""
        self._check_usable()
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        batch: list[MemoryRecord] = []
        n = 0
        with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            for lineno, line in enumerate(fh, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from exc
                if lineno == 1 and "remem_export" in data:
                    continue
                try:
                    batch.append(MemoryRecord.from_dict(data))
                except (KeyError, ValueError, TypeError) as exc:
                    raise ValueError(f"{path}:{lineno}: not a remem record ({exc})") from exc
                if len(batch) >= 64:
                    n += self._write_records(batch)
                    if progress:
                        progress(len(batch))
                    batch = []
        if batch:
            n += self._write_records(batch)
            if progress:
                progress(len(batch))
        return n

    def _write_records(self, recs: Sequence[MemoryRecord]) -> int:
        """Imported records pass the same validation and redaction as new ones (an export may predate a rule)."""
        recs = [replace(r, text=self._check_text(r.text), kind=self._check_kind(r.kind), tags=self._check_tags(r.tags),
                        importance=self._check_importance(r.importance), metadata=self._check_metadata(r.metadata),
                        source=self._redact(r.source), context=self._check_context(r.context))
                for r in recs]
        recs = [replace(r, content_hash=content_hash(r.text, r.scope)) for r in recs]
        vectors = self.vectors_for(recs)
        points = [self._point(replace(r, embedded=v is not None or not self.dense), v) for r, v in zip(recs, vectors)]
        with self._write_lock:
            self.backend.upsert(points)
        return len(points)

    def backup(self, directory: str | os.PathLike[str] | None = None, *, keep: int = 10) -> Path:
        """A timestamped, gzipped export next to the store (or in ``directory``); keeps the newest ``keep``."""
        base = Path(directory) if directory else _default_backup_dir(self.backend)
        stamp = utcnow().strftime("%Y%m%dT%H%M%S%fZ")
        path = base / f"remem-{stamp}.jsonl.gz"
        self.export(path)
        olds = sorted(base.glob("remem-*.jsonl.gz"))
        for stale in olds[:-keep] if keep > 0 else []:
            stale.unlink(missing_ok=True)
        return path

    def reembed(self, *, pending_only: bool = False, progress: Callable[[int], None] | None = None) -> int:
        """Rebuild dense vectors with the configured embedder, in place; ``pending_only`` fixes only the records
        a failing provider left without a vector. A full migration writes a backup first."""
        if self._closed:
            raise RememError("this Memory is closed")
        with self._write_lock:
            if pending_only and not self.mismatch:
                # filtered here, not in Qdrant: Edge matches booleans only on indexed fields
                recs = [from_payload(f.id, f.payload) for f in self._scan(FilterSpec())
                        if f.payload.get("embedded") is False]
                done = 0
                for start in range(0, len(recs), 64):
                    chunk = recs[start:start + 64]
                    vecs = self._strict_vectors(chunk)
                    self.backend.upsert([self._point(replace(r, embedded=True), v) for r, v in zip(chunk, vecs)])
                    done += len(chunk)
                    if progress:
                        progress(len(chunk))
                return done
            recs = [from_payload(f.id, f.payload) for f in self._scan(FilterSpec())]
            if recs:
                self.mismatch, saved = None, self.mismatch
                try:
                    self.backup()
                finally:
                    self.mismatch = saved
            vectors: list[list[float] | None] = []
            for start in range(0, len(recs), 64):  # embed everything before touching the store
                chunk = recs[start:start + 64]
                vectors.extend(self._strict_vectors(chunk))
            self.backend.recreate(self.embedder.dim)
            for start in range(0, len(recs), 256):
                self.backend.upsert([self._point(replace(r, embedded=True), v)
                                     for r, v in zip(recs[start:start + 256], vectors[start:start + 256])])
                if progress:
                    progress(len(recs[start:start + 256]))
            self.backend.write_meta({"format": FORMAT_VERSION, **self._fingerprint(),
                                     "created_at": utcnow().isoformat()})
            self.mismatch = None
            return len(recs)

    def remember(self, messages: Sequence[Mapping[str, Any]] | str, *, scope: Any = None,
                 session: str | None = None, **kwargs: Any) -> Any:
        """Distil a conversation into memories (facts, preferences, decisions, lessons, a session summary).

        See :func:`remem.core.distill.pipeline.remember`; redaction runs before anything is stored or sent to an LLM.
        """
        from ..distill.pipeline import remember as _remember

        return _remember(self, messages, scope=scope, session=session, **kwargs)

    def audit(self, *, scope: Any = None) -> dict[str, Any]:
        """Duplicates, junk and stale memories (see :func:`remem.core.distill.pipeline.audit`), as a JSON-ready dict."""
        from ..distill.pipeline import audit as _audit

        return _audit(self, scope=scope).as_dict()

    def usage(self) -> dict[str, Any]:
        """LLM token usage of every capture so far (the cost of memory), and captures waiting to be distilled."""
        from ..distill.pipeline import pending_count, usage_totals

        return {**usage_totals(self), "pending_captures": pending_count(self)}

    def drain_pending(self) -> int:
        """Distil the captures queued while the LLM was failing (``remem distill --pending``)."""
        from ..distill.pipeline import drain_pending as _drain

        return _drain(self)

    def rescan_redactions(self, *, scope: Any = None, pii: bool = False, dry_run: bool = True) -> dict[str, Any]:
        """Re-scan stored memories with today's redaction rules and rewrite what they catch (``remem redact
        --store``); a dry run only counts. Values are never returned."""
        from ..redact.redactor import configured
        from ..redact.rescan import redact_store

        with self._write_lock:
            return redact_store(self, configured(pii), scope=scope, dry_run=dry_run)

    def _strict_vectors(self, recs: Sequence[MemoryRecord]) -> list[list[float] | None]:
        """Like vectors_for, but a provider failure raises: a migration must not store vector-less copies."""
        if not self.dense:
            return [None] * len(recs)
        docs, spans = indexing.plan(recs)
        return indexing.assemble(self.embedder.embed_documents(docs), spans)

    def optimize(self) -> None:
        self.backend.optimize()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.backend.close()


# ---------------------------------------------------------------------- helpers
def _check_sources(sources: Iterable[str] | None) -> tuple[str, ...]:
    """Provenance ids: short strings, at most 64 (a memory comes from a few messages, not a whole log)."""
    if sources is None:
        return ()
    if isinstance(sources, str):
        sources = [sources]
    out = tuple(dict.fromkeys(str(s) for s in sources))
    if len(out) > 64 or any(not s or len(s) > 200 for s in out):
        raise ValueError("sources must be at most 64 non-empty ids of at most 200 characters")
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _make_redactor(pii: bool) -> Any:
    from ..redact.redactor import configured

    return configured(pii)


def _scope_filter(scope: Any) -> FilterSpec:
    """Everything in ``scope``; ``None`` here means the whole store (admin scans: stats, export)."""
    return FilterSpec(must=scope_conditions(Scope.coerce(scope))) if scope is not None else FilterSpec()


def _in_scope(rec: MemoryRecord, scope: Scope) -> bool:
    if rec.scope.stored_tenant != scope.stored_tenant:
        return False
    return all(getattr(scope, k) is None or getattr(scope, k) == getattr(rec.scope, k)
               for k in ("user", "agent", "session"))


def _default_backup_dir(backend: Backend) -> Path:
    folder = getattr(backend, "folder", None)
    if folder is not None:
        return Path(folder) / "backups"
    home = Path(os.environ.get("REMEM_HOME", "~/.remem")).expanduser()
    return home / "backups"


def _new_spec(new: Any, old: MemoryRecord, valid_from: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(new, MemoryRecord):
        base: dict[str, Any] = {"text": new.text, "kind": new.kind, "tags": list(new.tags),
                                "importance": new.importance, "metadata": dict(new.metadata), "source": new.source}
    elif isinstance(new, Mapping):
        base = dict(new)
    elif isinstance(new, str):
        base = {"text": new}
    else:
        raise TypeError("new must be the new text, a MemoryRecord or a mapping of add() fields")
    base.update(fields)
    if "text" not in base:
        raise ValueError("the superseding memory needs a text")
    base.setdefault("kind", old.kind)
    base.setdefault("tags", list(old.tags))
    base.setdefault("importance", old.importance)
    base.setdefault("metadata", dict(old.metadata))
    base["valid_from"] = to_datetime(valid_from or base.get("valid_from")) or utcnow()
    return base


def _conflicting(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return any(k in b and b[k] != v for k, v in a.items())


def same_meaning(a: str, b: str, cosine: float | None, threshold: float | None) -> bool:
    """Near-duplicate test: close in meaning (or in words, without vectors), with the same numbers,
    identifiers and polarity, so "v1.6" vs "v1.7" or "likes" vs "doesn't like" are never merged."""
    if [n.lower() for n in _NUMBER_RE.findall(a)] != [n.lower() for n in _NUMBER_RE.findall(b)]:
        return False
    if set(_PROPER_RE.findall(a)) != set(_PROPER_RE.findall(b)):
        return False
    if set(lexical.identifiers(a)) != set(lexical.identifiers(b)):
        return False
    if bool(_NEGATIONS.search(a)) != bool(_NEGATIONS.search(b)):
        return False
    wa, wb = set(_WORD_RE.findall(normalize_text(a))), set(_WORD_RE.findall(normalize_text(b)))
    jaccard = len(wa & wb) / max(1, len(wa | wb))
    if cosine is not None and threshold is not None:
        return cosine >= threshold and jaccard >= 0.5
    return jaccard >= 0.8
