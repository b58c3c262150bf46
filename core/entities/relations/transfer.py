"""Relations in export files: one ``{"remem_relation": {...}}`` line per relation, after the memories, by its
entities' names and types (ids are the store's own), with its validity window and the memories that say it. An
import records each again for the imported memories among its sources (a relation an LLM distiller handed over
cannot be found again in the text, so the file carries it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ...scope import AllTenants, coerce_scope, in_scope
from ...store.backends.base import FilterSpec
from ...types import Scope
from .. import hooks
from ..store import scope_filter
from ..types import RelationClaim
from .lifecycle import index, record_claims
from .records import _dt_of

if TYPE_CHECKING:
    from ...store.engine import Engine

KEY = "remem_relation"


def export_lines(engine: "Engine", scope: Any) -> Iterator[dict[str, Any]]:
    """The relations visible from ``scope`` (every tenant's for ``ALL_TENANTS``) as export lines."""
    ridx, eidx = index(engine, create=False), hooks.index(engine)
    if ridx is None or eidx is None:
        return
    wanted = coerce_scope(scope, admin=True)
    flt = FilterSpec() if isinstance(wanted, AllTenants) else scope_filter(wanted if isinstance(wanted, Scope) else None)
    found = list(ridx.scan(flt))
    ends = sorted({f.payload.get(k) for f in found for k in ("subject_id", "object_id")} - {None})
    ent = {e.id: e.payload for e in eidx.get(ends)}
    for f in found:
        p = f.payload
        s, o = ent.get(p.get("subject_id")), ent.get(p.get("object_id"))
        if s is None or o is None:
            continue
        yield {KEY: {"subject": s.get("name"), "subject_kind": s.get("kind"), "predicate": p.get("predicate"),
                     "object": o.get("name"), "object_kind": o.get("kind"), "since": p.get("since_ts"),
                     "until": p.get("until_ts"), "sources": list(p.get("sources") or ())}}


def import_lines(engine: "Engine", lines: Iterable[dict[str, Any]], scope: Any) -> int:
    """Record the relations of export ``lines`` for their sources that are stored memories within ``scope``;
    returns how many relations were recorded or confirmed."""
    from ...store.records import from_payload

    wanted = coerce_scope(scope, admin=True)
    n = 0
    for line in lines:
        try:
            claim = RelationClaim(subject=str(line["subject"]), predicate=str(line["predicate"]),
                                  object=str(line["object"]), subject_kind=line.get("subject_kind"),
                                  object_kind=line.get("object_kind"), since=_dt_of(line.get("since")))
            sources = [str(s) for s in line.get("sources") or ()][:1000]
        except (KeyError, TypeError, ValueError, OverflowError):
            continue  # a line this remem cannot read: the memories are imported, their text relinks what it says
        for f in engine.backend.retrieve(sources):
            rec = from_payload(f.id, f.payload)
            if in_scope(rec, wanted):
                n += len(record_claims(engine, rec.scope, [claim], rec.id, until=line.get("until")))
    return n


__all__ = ["KEY", "export_lines", "import_lines"]
