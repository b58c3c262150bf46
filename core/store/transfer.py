"""Export and import: JSONL (gzip when the name ends in .gz), a header with the embedder fingerprint,
then one record a line. Files are written 0600 through a temporary file and renamed into place.

An import writes only into the scope it was given (``ALL_TENANTS`` restores every tenant), passes every record
through the same validation and redaction as a new one (an export may predate a rule), and never lets a line
reuse the id of a memory in another tenant: a crafted file cannot move someone else's record.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ..scope import coerce_scope
from ..types import MemoryRecord, ScopeError, record_time, utcnow
from .plan import EmbedDocuments, Plan
from ..recall.fencing import clean_tag
from .records import content_hash, from_payload
from .quota import QuotaExceededError, confirm_quota

if TYPE_CHECKING:
    from .engine import Engine

BATCH = 64


EXTRA_KEYS = ("remem_relation",)  # lines that carry more than memories (relations: remem.core.entities)


def export(engine: "Engine", path: str | os.PathLike[str], *, scope: Any = None,
           extra: Callable[[], Iterator[dict[str, Any]]] | None = None) -> int:
    from .engine import FORMAT_VERSION

    engine.check_usable()
    path = Path(path)
    if not path.parent.is_dir():  # a mistyped folder is an error, not a new folder somewhere
        raise FileNotFoundError(f"no folder {path.parent} to export into: create it first")
    # a new file no one else can have planted (a random name, created exclusively, 0600), renamed into place
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    n = 0
    try:
        with os.fdopen(fd, "wb") as raw:
            text = io.TextIOWrapper(gzip.GzipFile(fileobj=raw, mode="wb") if path.suffix == ".gz" else raw,
                                    encoding="utf-8")
            with text as fh:
                fh.write(json.dumps({"remem_export": FORMAT_VERSION, **engine.fingerprint(),
                                     "exported_at": utcnow().isoformat()}) + "\n")
                for rec in engine.iter_records(scope):
                    fh.write(json.dumps(rec.as_dict(), ensure_ascii=False) + "\n")
                    n += 1
                for line in (extra() if extra is not None else ()):  # after the memories they depend on
                    fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return n


def read_export(path: str | os.PathLike[str]) -> Iterator[MemoryRecord]:
    """The records of an export file, with a clear error naming the line that is not one."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from exc
            if lineno == 1 and isinstance(data, dict) and "remem_export" in data:
                continue
            if isinstance(data, dict) and any(k in data for k in EXTRA_KEYS):
                continue  # read by read_extra()
            try:
                yield MemoryRecord.from_dict(data)
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a remem record ({exc})") from exc


def read_extra(path: str | os.PathLike[str], key: str) -> Iterator[dict[str, Any]]:
    """The ``key`` lines of an export file (``remem_relation``: a relation, by its entities' names)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        for line in fh:
            if key in line:
                try:
                    data = json.loads(line)
                except json.JSONDecodeError:
                    continue  # read_export() names the bad line
                if isinstance(data, dict) and isinstance(data.get(key), dict):
                    yield data[key]


def import_plan(engine: "Engine", path: str | os.PathLike[str], *, scope: Any = None,
                progress: Callable[[int], None] | None = None) -> Plan[int]:
    """Load an export into ``scope``; ids, times and supersede links are kept, vectors rebuilt by this embedder.
    The whole file is checked before anything is written, so a bad line loses nothing and writes nothing."""
    from ..scope import in_scope

    engine.check_usable()
    wanted = coerce_scope(scope, admin=True)
    records = list(read_export(path))
    for rec in records:
        if not in_scope(rec, wanted):
            raise ScopeError(f"record {rec.id} belongs to {rec.scope}, outside the scope of this import "
                             f"({wanted}); import with that scope, or into every tenant to restore them all "
                             "(scope=ALL_TENANTS; remem import --all-tenants)")
    _refuse_moves(engine, records)  # before anything is written (and again, under the write lock, per batch)
    records = [_checked(engine, r) for r in records]  # every value checked before the first batch is written
    n = 0
    for start in range(0, len(records), BATCH):
        batch = records[start:start + BATCH]
        vectors = yield EmbedDocuments(batch, engine.settings.on_embed_error == "keep")
        n += _write(engine, batch, vectors)
        if progress:
            progress(len(batch))
    return n


def _checked(engine: "Engine", r: MemoryRecord) -> MemoryRecord:
    check = engine.check
    check.scope(r.scope)
    for name in ("occurred_at", "created_at"):  # what add() refuses, an import refuses too
        record_time(getattr(r, name))
    # tags of a store written before they were checked: made one line, as every reader shows them (not refused)
    r = replace(r, text=check.text(r.text), kind=check.kind(r.kind), tags=check.tags([t for t in map(clean_tag, r.tags) if t]),
                importance=check.importance(r.importance), metadata=check.metadata(r.metadata),
                source=check.source(r.source), context=check.context(r.context), sources=check.sources(r.sources))
    return replace(r, content_hash=content_hash(r.text, r.scope))


def _refuse_moves(engine: "Engine", recs: Sequence[MemoryRecord]) -> dict[str, Any]:
    """The scopes of the ``recs`` ids stored already; a ScopeError if one is stored in another scope (an id
    names one record in one scope: an import rewrites it there, never moves it, not even between the users of
    one tenant)."""
    existing: dict[str, Any] = {}
    for start in range(0, len(recs), BATCH):
        chunk = recs[start:start + BATCH]
        existing.update((f.id, from_payload(f.id, f.payload).scope)
                        for f in engine.backend.retrieve([r.id for r in chunk]))
    for r in recs:
        was = existing.get(r.id)
        if was is not None and was.stored_tenant != r.scope.stored_tenant:
            raise ScopeError(f"record {r.id} already exists in another tenant; an import cannot move it")
        if was is not None and was != r.scope:
            raise ScopeError(f"record {r.id} already exists in another scope of this tenant; an import cannot "
                             "move it")
    return existing


def _write(engine: "Engine", recs: Sequence[MemoryRecord], vectors: Sequence[list[float] | None]) -> int:
    with engine.write_lock:
        engine.check_usable()
        existing = _refuse_moves(engine, recs)
        by_tenant: dict[Any, tuple[Any, int]] = {}  # the quota is the tenant's: its users' records add up
        for r in recs:
            if r.id not in existing:
                sc, adding = by_tenant.get(r.scope.stored_tenant, (r.scope, 0))
                by_tenant[r.scope.stored_tenant] = (sc, adding + 1)
        for sc, adding in by_tenant.values():
            engine._check_quota(sc, adding)
        points = [engine.point(replace(r, embedded=v is not None or not engine.dense), v) for r, v in zip(recs, vectors)]
        engine.backend.upsert(points)
        new = [r for r in recs if r.id not in existing]
        for tenant, (sc, _) in by_tenant.items():  # another process may have filled the tenant meanwhile
            try:
                confirm_quota(engine.backend, engine.settings.tenant_quota, sc,
                              [r.id for r in new if r.scope.stored_tenant == tenant])
            except QuotaExceededError:
                engine.backend.delete([r.id for r in new])  # the batch goes as one: none of its new records stay
                raise
    return len(points)


__all__ = ["export", "import_plan", "read_export"]
