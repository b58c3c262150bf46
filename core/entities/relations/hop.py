"""The relation hop of recall: a question that names an entity and asks through a relation ("what queue does
the service Dana maintains use?", "the queue the ingest worker moved to") raises the memories linked to the
entity at the other end of a matching relation true now ("the ingest worker"). One hop, a few entities at
most, entities linked to a large share of the scope left out, fused in Qdrant as one more ``ident`` list
(``relation_weight``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ...types import Scope
from .. import hooks
from .lifecycle import index
from .patterns import asked_predicates
from .records import holds_at

if TYPE_CHECKING:
    from ...store.engine import Engine
    from ...types import SparseVec

HOP_ENTITIES = 3  # entities reached through relations, at most (the newest relations first)
SECOND_WEIGHT = 0.5  # what the reached entities' own matching relations name: a memory naming both ranks first


def hop_entities(engine: "Engine", question: str, scope: Any,
                 known: list[str] | None = None) -> tuple[list[str], list[str]]:
    """The ids of the entities one matching relation away from the entities ``question`` names, and of those
    their own matching relations name (which order the hop's list: a memory naming both comes first)."""
    preds = asked_predicates(question)
    if not preds:
        return [], []
    ridx = index(engine, create=False)
    if ridx is None:
        return [], []
    if known is None:
        known, _ = hooks.known_in_question(engine, question, scope)
    if not known:
        return [], []
    from ...scope import coerce_scope

    wanted = coerce_scope(scope, admin=True)
    sc = wanted if isinstance(wanted, Scope) else None
    eidx = hooks.index(engine)
    group = set(known)
    for f in (eidx.get(known) if eidx is not None else []):
        group |= set(f.payload.get("merged") or ())
    now = time.time()
    first = _across(ridx, sc, group, preds, now, set(group), HOP_ENTITIES)
    second = _across(ridx, sc, set(first), preds, now, group | set(first), HOP_ENTITIES) if first else []
    return first, second


def _across(ridx: Any, scope: Scope | None, group: set[str], preds: set[str], now: float, skip: set[str],
            limit: int) -> list[str]:
    """The other ends of ``group``'s relations with a predicate in ``preds`` true at ``now`` (newest first)."""
    found = [f for f in ridx.touching(scope, group) if f.payload.get("predicate") in preds and holds_at(f.payload, now)]
    found.sort(key=lambda f: -float(f.payload.get("since_ts") or 0))
    out: list[str] = []
    for f in found:
        p = f.payload
        other = p["object_id"] if p.get("subject_id") in group else p.get("subject_id")
        if other and other not in skip and other not in out:
            out.append(other)
        if len(out) >= limit:
            break
    return out


def hop_terms(engine: "Engine", question: str, scope: Any) -> "SparseVec | None":
    """The ``ident`` terms of :func:`hop_entities` (hubs left out as in entity recall), or None."""
    settings = engine.settings
    if float(getattr(settings, "relation_weight", 0.0)) <= 0:  # the hop is off (with the entity boost on or not)
        return None
    first, second = hop_entities(engine, question, scope)
    hub = float(getattr(settings, "entity_hub_share", 1.0))
    if first and hub < 1.0:
        total = engine.backend.count(engine.filter(scope))
        if total >= hooks.HUB_MIN_MEMORIES:
            first = [i for i in first if hooks._linked_count(engine, scope, [i]) <= hub * total]
            second = [i for i in second if hooks._linked_count(engine, scope, [i]) <= hub * total]
    if not first:
        return None
    weights = {**{i: SECOND_WEIGHT for i in second}, **{i: 1.0 for i in first}}
    pairs = sorted((hooks.entity_token(i), w) for i, w in weights.items())
    return [t for t, _ in pairs], [w for _, w in pairs]


def recall_with_relations(engine: "Engine", question: str, scope: Any) -> "tuple[SparseVec | None, bool]":
    """:func:`~remem.core.entities.hooks.recall_terms` with the hop's terms added: what recall fuses for the
    entities a question names and for those one matching relation away ("the service Dana maintains")."""
    terms, unknown = hooks.recall_terms(engine, question, scope)
    if unknown or not hooks.enabled(engine) or not getattr(engine.settings, "entity_recall", True):
        return terms, unknown
    try:
        hop = hop_terms(engine, question, scope)
    except Exception as exc:  # noqa: BLE001 - recall goes on without the hop
        hooks.log.warning("relation hop skipped: %s: %s", type(exc).__name__, exc)
        return terms, unknown
    if hop is None:
        return terms, unknown
    if terms is None or float(getattr(engine.settings, "entity_weight", 0.0)) <= 0:
        return hop, False
    acc = dict(zip(*terms))
    for t, w in zip(*hop):
        acc[t] = max(acc.get(t, 0.0), w)
    idx = sorted(acc)
    return (idx, [acc[i] for i in idx]), False


__all__ = ["HOP_ENTITIES", "hop_entities", "hop_terms", "recall_with_relations"]
