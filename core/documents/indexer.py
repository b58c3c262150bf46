"""Keeping a scope's ``document`` memories in step with files: add what is new, keep what is unchanged, remove
what is gone.

Each chunk is a memory of kind ``document``: its text is the chunk; its ``source`` names the file, the heading
path and the lines ("docs/adr/0007.md: Queue > Why (lines 12-30)"); its recall ``context`` (indexed, not shown)
is the file's name and the heading path, so a chunk is found by where it sits as well as by what it says;
``occurred_at`` is the file's modification time. ``metadata`` holds ``document`` (the file's name), ``path``
(where it was read), ``heading``, ``lines`` and ``chunk`` (a hash of name, heading and text).

A chunk whose hash is already stored is not written or embedded again; if only its lines moved (an edit above
it), its source and lines are rewritten in place, without re-embedding. An edited file's chunks that are no
longer in it are forgotten, so a file is recalled as it is now. With ``prune``, the chunks of files that are
gone from a folder indexed (deleted, renamed, or now ignored) are forgotten too. Redaction applies as to any
write: a key in a runbook is stored as ``[REDACTED:...]``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from ..types import MemoryRecord
from .chunking import Chunk, chunks
from .files import Found, walk
from .result import DOCUMENT_KIND, IndexResult

PathsArg = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
BATCH = 64  # new chunks embedded and written together


SOURCE_HEADING_CHARS = 200


def source_of(name: str, chunk: Chunk) -> str:
    heading = chunk.heading
    if len(heading) > SOURCE_HEADING_CHARS:
        heading = "… " + heading[-SOURCE_HEADING_CHARS:]
    where = f": {heading}" if heading else ""
    return f"{name}{where} (lines {chunk.start}-{chunk.end})"


def chunk_hash(name: str, chunk: Chunk) -> str:
    return hashlib.sha256(f"{name}\0{chunk.heading}\0{chunk.text}".encode("utf-8", "replace")).hexdigest()[:32]


def _stored(engine: Any, scope: Any) -> dict[str, list[MemoryRecord]]:
    """The scope's document memories, by file name."""
    from ..store.records import from_payload

    out: dict[str, list[MemoryRecord]] = {}
    for f in engine.scan(engine.filter(scope, kind=DOCUMENT_KIND)):
        rec = from_payload(f.id, f.payload)
        out.setdefault(str(rec.metadata.get("document") or ""), []).append(rec)
    return out


def _as_paths(paths: PathsArg) -> list[str | os.PathLike[str]]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    out = list(paths)
    if not out:
        raise ValueError("index() needs at least one file or folder")
    return out


def index(engine: Any, paths: PathsArg, *, scope: Any = None, prune: bool = True,
          progress: Callable[[int], None] | None = None) -> IndexResult:
    """See :meth:`remem.Memory.index`. ``engine``: the in-process store (``add_many``, ``forget``, ``scan``)."""
    files, skipped, folders = walk(_as_paths(paths))
    result = IndexResult(skipped=skipped)
    stored = _stored(engine, scope)
    batch = _Batch(engine, scope, result)
    for found in files:
        _index_file(found, stored.pop(found.name, []), batch)
        result.files += 1
        if len(batch.items) >= BATCH:
            batch.write()
        if progress is not None:
            progress(1)
    batch.write()
    if prune:
        for name, recs in stored.items():
            gone = [r for r in recs if _under(str(r.metadata.get("path") or ""), folders)]
            for rec in gone:
                result.removed += bool(engine.forget(rec.id, scope=scope))
    return result


def _under(path: str, folders: list[Path]) -> bool:
    """Whether a stored chunk's file was in what was just indexed (a folder walked), so its absence means it
    is gone."""
    if not path:
        return False
    p = Path(path)
    return any(p == f or p.is_relative_to(f) for f in folders)


class _Batch:
    """New chunks of several files, embedded together (the embedder is faster in batches), and the chunks they
    replace, forgotten once the new ones are written."""

    def __init__(self, engine: Any, scope: Any, result: IndexResult) -> None:
        self.engine, self.scope, self.result = engine, scope, result
        self.items: list[dict[str, Any]] = []
        self.gone: list[str] = []

    def write(self) -> None:
        if self.items:
            self.result.added += len(self.engine.add_many(self.items, scope=self.scope, dedupe=False))
        for memory_id in self.gone:  # an edited file is read as it is now: its chunks no longer in it go
            self.result.removed += bool(self.engine.forget(memory_id, scope=self.scope))
        self.items, self.gone = [], []


def _index_file(found: Found, old: list[MemoryRecord], batch: _Batch) -> None:
    result = batch.result
    try:
        text = found.path.read_text("utf-8", errors="replace")
        mtime = _dt.datetime.fromtimestamp(found.path.stat().st_mtime, _dt.timezone.utc)
    except OSError as exc:
        result.skipped[str(found.path)] = f"unreadable ({exc.strerror or type(exc).__name__})"
        return
    by_hash = {str(r.metadata.get("chunk")): r for r in old}
    keep: set[str] = set()
    for chunk in chunks(text, found.path.suffix):
        digest = chunk_hash(found.name, chunk)
        meta = {"document": found.name, "path": str(found.path), "heading": chunk.heading,
                "lines": [chunk.start, chunk.end], "chunk": digest}
        have = by_hash.get(digest)
        if have is not None and have.id not in keep:
            keep.add(have.id)
            result.unchanged += 1
            if have.source != source_of(found.name, chunk) or have.metadata.get("path") != str(found.path):
                _move(batch.engine, have, source_of(found.name, chunk), meta)
            continue
        batch.items.append({"text": chunk.text, "kind": DOCUMENT_KIND, "source": source_of(found.name, chunk),
                            "context": f"{found.name} {chunk.heading}".strip(), "metadata": meta,
                            "occurred_at": mtime, "importance": 5})
    batch.gone.extend(rec.id for rec in old if rec.id not in keep)


def _move(engine: Any, rec: MemoryRecord, source: str, meta: dict[str, Any]) -> None:
    """The same chunk at other lines: its source and lines rewritten in place (nothing re-embedded)."""
    with engine.write_lock:
        engine.backend.set_payload([rec.id], {"source": engine.check.source(source),
                                              "meta": {**rec.metadata, **engine.check.metadata(meta)}})


__all__ = ["chunk_hash", "index", "source_of"]
