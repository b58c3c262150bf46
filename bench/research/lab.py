"""Numpy re-implementation of Qdrant Edge sparse(IDF) scoring + fusion, for fast ablations."""
import numpy as np, scipy.sparse as sp
from qdrant_edge import Bm25, Bm25Config
from common import *


class SparseIndex:
    def __init__(self, doc_vecs, vocab=None):
        """doc_vecs: list of SparseVector. Builds CSR matrix (docs x vocab) and IDF (Qdrant formula)."""
        self.vocab = vocab if vocab is not None else {}
        rows, cols, vals = [], [], []
        for r, v in enumerate(doc_vecs):
            for i, x in zip(v.indices, v.values):
                c = self.vocab.setdefault(i, len(self.vocab))
                rows.append(r); cols.append(c); vals.append(x)
        self.M = sp.csr_matrix((vals, (rows, cols)), shape=(len(doc_vecs), len(self.vocab)), dtype=np.float64)
        N = len(doc_vecs)
        df = np.bincount(self.M.indices, minlength=len(self.vocab)).astype(np.float64)
        self.idf = np.log((N - df + 0.5) / (df + 0.5) + 1.0)
        self.MT = self.M.T.tocsr()

    def qvec(self, v, weights=None):
        q = np.zeros(len(self.vocab))
        for j, (i, x) in enumerate(zip(v.indices, v.values)):
            c = self.vocab.get(i)
            if c is not None:
                q[c] += x if weights is None else weights[j]
        return q

    def score_all(self, Q):
        """Q: (nq x vocab) dense query weights (before idf). returns (nq x ndocs) scores."""
        Qs = sp.csr_matrix(Q * self.idf)
        return (Qs @ self.MT).toarray()


def bm25_index(texts, **cfg):
    bm = Bm25(Bm25Config(**cfg))
    return bm, SparseIndex([bm.embed_document(t) for t in texts])


def conv_slices(scores, qs, off):
    """Per-question score arrays restricted to own conversation."""
    return [scores[k, off[q["conv"]]:off[q["conv"] + 1]] for k, q in enumerate(qs)]


def rank_of(s, limit=None):
    o = np.argsort(-s, kind="stable")
    return o if limit is None else o[:limit]


def rrf(lists, k=2, weights=None, limit=10):
    """lists: list of ranked index arrays (already truncated to prefetch limit).

    Qdrant/Edge RRF: 1/((pos0 + 1)/w + k - 1)  (== 1/(pos0 + k) for w=1; a weight rescales the rank, it does
    not multiply the score -- checked against EdgeShard.query)."""
    sc = {}
    for li, L in enumerate(lists):
        w = 1.0 if weights is None else weights[li]
        for p, d in enumerate(L):
            sc[d] = sc.get(d, 0.0) + 1.0 / ((p + 1) / w + k - 1)
    return [d for d, _ in sorted(sc.items(), key=lambda x: -x[1])][:limit]


def dbsf(score_lists, limit=10):
    """score_lists: list of (idx array, score array) prefetch results. Qdrant DBSF: mean +- 3 std normalisation, sum."""
    sc = {}
    for idx, s in score_lists:
        mu, sd = s.mean(), s.std()
        lo, hi = mu - 3 * sd, mu + 3 * sd
        ns = (s - lo) / (hi - lo) if hi > lo else np.full_like(s, 0.5)
        for d, x in zip(idx, ns):
            sc[d] = sc.get(d, 0.0) + x
    return [d for d, _ in sorted(sc.items(), key=lambda x: -x[1])][:limit]
