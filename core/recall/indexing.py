"""What a memory is indexed as — the recall recipe measured on LoCoMo (bench/research/, README).

Sparse ``bm25``: Qdrant BM25 of the dated text (text, tags, date words of the event time when known) plus
BM25 (b=1) of the memory's context — the conversation around it, when given — weighted by ``CONTEXT_WEIGHT``,
summed into one vector (one merged vector beat two fused ones).
Dense: embedding(text), doubled (Dot distance) so stores written when the context was embedded too
(text + context) keep the same scale. ``ident``: exact identifiers of the text (see ``lexical``).
"""

from __future__ import annotations

from typing import Sequence

from . import lexical
from ..types import SparseVec
from ..types import MemoryRecord

SPARSE_RECIPE = 3  # what a store's sparse vectors were written with (remem.json "sparse"): 1 = stems only,
# 2 = with the base forms stemming misses (lemmas.py), 3 = conversation episodes indexed with the messages after
# them too (distill/episodes.py). A store below it still works; `remem reembed` rewrites it.
CONTEXT_WEIGHT = 0.6  # what was said around a memory counts 0.6 of what it says (LoCoMo via remember(), BM25
# only: any@10 0.775 at 1.0, 0.799 at 0.6, 0.788 at 0.4): the turn itself should outrank its neighbours


def dated_text(rec: MemoryRecord) -> str:
    parts = [rec.text]
    if rec.tags:
        parts.append(" ".join(rec.tags))
    when = rec.occurred_at or rec.valid_from or rec.created_at  # event time first: "in May 2023" finds it
    parts.append(when.strftime("%d %B %Y"))
    return "\n".join(parts)


def context_text(rec: MemoryRecord) -> str:
    return rec.context or rec.text


def _sum_sparse(a: SparseVec, b: SparseVec) -> SparseVec:
    acc: dict[int, float] = dict(zip(a[0], a[1]))
    for i, v in zip(b[0], b[1]):
        acc[i] = acc.get(i, 0.0) + v
    idx = sorted(acc)
    return idx, [acc[i] for i in idx]


def sparse_vectors(rec: MemoryRecord) -> dict[str, SparseVec]:
    idx, vals = lexical.bm25_context(context_text(rec))
    bm25 = _sum_sparse(lexical.bm25_document(dated_text(rec)), (idx, [CONTEXT_WEIGHT * v for v in vals]))
    return {"bm25": bm25, "ident": lexical.ident_vector(rec.text)}


def dense_docs(rec: MemoryRecord) -> list[str]:
    """What the dense model embeds for ``rec``: its text alone. The context already reaches recall through
    BM25; embedding it too doubled the embedding work for nothing (LoCoMo via remember(), minilm: any@10 0.800
    with text + context, 0.805 text only)."""
    return [rec.text]


def combine_dense(vectors: Sequence[Sequence[float]]) -> list[float]:
    """2 x the text's vector, or the sum of two (text + context, as stores written before kept, and as
    ``bench/research/embedders.py`` still measures): every stored vector has the same scale."""
    if len(vectors) == 1:
        return [2.0 * x for x in vectors[0]]
    return [float(a) + float(b) for a, b in zip(vectors[0], vectors[1])]


def plan(recs: Sequence[MemoryRecord]) -> tuple[list[str], list[tuple[int, int]]]:
    """All documents to embed for ``recs`` (one batch) and each record's slice of them."""
    docs: list[str] = []
    spans: list[tuple[int, int]] = []
    for rec in recs:
        d = dense_docs(rec)
        spans.append((len(docs), len(d)))
        docs.extend(d)
    return docs, spans


def assemble(vectors: Sequence[Sequence[float]] | None, spans: Sequence[tuple[int, int]]) -> list[list[float] | None]:
    if vectors is None:
        return [None] * len(spans)
    return [combine_dense(vectors[s:s + n]) for s, n in spans]
