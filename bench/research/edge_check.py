import shutil, time, numpy as np
from qdrant_edge import *
from common import *

convs, qs = load()
docs = doc_texts(convs, "turn")
off = offsets(convs)
bm = Bm25(Bm25Config())
path = "/tmp/edge_locomo_chk"
shutil.rmtree(path, ignore_errors=True)
cfg = EdgeConfig(vectors={}, sparse_vectors={"bm25": EdgeSparseVectorParams(modifier=Modifier.Idf)})
s = EdgeShard.create(path, cfg)
s.update(UpdateOperation.create_field_index("conv", PayloadSchemaType.Keyword))
pts = []
for ci, c in enumerate(convs):
    for i, t in enumerate(c["turns"]):
        pts.append(Point(off[ci] + i, {"bm25": bm.embed_document(docs[off[ci] + i])}, {"conv": str(ci), "i": i}))
s.update(UpdateOperation.upsert_points(pts))
ranks = []
t0 = time.time()
for q in qs:
    r = s.query(QueryRequest(limit=10, query=Query.Nearest(bm.embed_query(q["question"]), using="bm25"),
                             filter=Filter(must=[FieldCondition("conv", match=MatchValue(str(q["conv"])))]), with_payload=False))
    ranks.append([p.id - off[q["conv"]] for p in r])
print("q time", (time.time() - t0) / len(qs) * 1000, "ms")
print(fmt_row("edge bm25 default", metrics(ranks, qs)))
r = s.query(QueryRequest(limit=5, query=Query.Nearest(bm.embed_query(qs[0]["question"]), using="bm25"),
            filter=Filter(must=[FieldCondition("conv", match=MatchValue("0"))])))
print([(p.id, p.score) for p in r])
np.save("/tmp/edge_chk_ranks.npy", np.array([x + [-1] * (10 - len(x)) for x in ranks]))
