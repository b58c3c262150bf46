"""A question's BM25 terms, expanded with the other names of the entities it names by an alias.

"How full is the events store?" shares no word with "CHouse disk usage is at 80 percent", though the store knows
both name ClickHouse (:mod:`remem.core.entities`). The entity layer says which names a question leaves out
(:func:`remem.core.entities.hooks.alias_terms`); here they join the question's BM25 vector, so the one BM25 list
Qdrant fuses with the dense and identifier lists finds the memories that use another of the entity's names,
ranked with the question's other words. A question that names no entity by an alias keeps its vector as it was.
"""

from __future__ import annotations

from ..types import SparseVec
from .lexical import bm25_query

WEIGHT = 1.0  # an added name's BM25 term counts as much as a word of the question (Qdrant's IDF weighs both)


def names_vector(names: list[str], weight: float = WEIGHT) -> SparseVec:
    """The BM25 query terms of ``names``, each weighted ``weight``."""
    idx, vals = bm25_query(" ".join(names))
    return idx, [v * weight for v in vals]


def expand(query: SparseVec, extra: SparseVec | None) -> SparseVec:
    """``query`` with the terms of ``extra`` it lacks (a term in both keeps the larger weight)."""
    if not extra or not extra[0]:
        return query
    acc = dict(zip(query[0], query[1]))
    for t, w in zip(extra[0], extra[1]):
        acc[t] = max(acc.get(t, 0.0), w)
    idx = sorted(acc)
    return idx, [acc[i] for i in idx]


__all__ = ["WEIGHT", "expand", "names_vector"]
