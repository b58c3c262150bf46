"""RememStore under a LangGraph ``index={"embed": ...}`` against LangGraph's own InMemoryStore with the same
embeddings, in one run.

The LoCoMo development conversations' turns are put as store items (``{"speaker", "text"}``, indexed field
``text``), one namespace per conversation; each question searches its conversation's namespace (limit 10).
The embeddings are remem's keyless MiniLM, as a LangChain ``Embeddings`` (the same vectors in every store):

* ``InMemoryStore``: LangGraph's reference: every item scored, exact cosine order;
* ``RememStore, index.embed``: the same embeddings through remem (hybrid recall picks the candidates,
  LangGraph's cosine orders them: the default, ``order="score"``);
* ``RememStore, index.embed, order="recall"``: the same, in remem's hybrid order;
* ``RememStore, remem's embedder``: no ``embed`` (remem's MiniLM does the dense half of its hybrid recall,
  fused order): the store as it was before LangGraph's ``embed`` was honoured.

Columns: ``evidence@10`` (share of questions with an evidence turn in the top 10), ``same top-10`` (mean share of
InMemoryStore's top 10 also returned), put ms per item (batches of 64) and search p50/p95 ms (the stores take
turns question by question, so load on the machine weighs on them alike).

    python -m remem.bench.bench_langgraph_store [--convs 2] [--data locomo10.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from rich.console import Console
from rich.table import Table

from remem.bench import locomo_remember as lr
from remem.core.providers.minilm import MiniLMEmbedder
from remem.integrations.langgraph import RememStore


class MiniLMEmbeddings(Embeddings):
    """remem's keyless MiniLM as a LangChain ``Embeddings``."""

    def __init__(self) -> None:
        self._model = MiniLMEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._model.embed_query(text)


def load(store: BaseStore, convs: list[dict[str, Any]]) -> float:
    """Put every turn; milliseconds per item."""
    ops = [PutOp(("locomo", str(ci)), t["dia_id"], {"speaker": t["speaker"], "text": lr.turn_text(t)})
           for ci, conv in enumerate(convs) for _, _, turns in lr.sessions_of(conv) for t in turns]
    start = time.perf_counter()
    for i in range(0, len(ops), 64):
        store.batch(ops[i:i + 64])
    return 1000 * (time.perf_counter() - start) / len(ops)


def ask(stores: list[BaseStore], convs: list[dict[str, Any]]) -> list[tuple[list[list[str]], list[float]]]:
    """Each question to every store in turn: (ranked keys, milliseconds) per store."""
    out: list[tuple[list[list[str]], list[float]]] = [([], []) for _ in stores]
    for ci, conv in enumerate(convs):
        for q in lr.questions_of(conv):
            for store, (ranked, took) in zip(stores, out):
                start = time.perf_counter()
                hits = store.search(("locomo", str(ci)), query=q["question"], limit=10)
                took.append(1000 * (time.perf_counter() - start))
                ranked.append([h.key for h in hits])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--convs", type=int, default=2, help="LoCoMo conversations to load (default 2)")
    ap.add_argument("--data", type=Path, default=lr.DEFAULT_DATA)
    args = ap.parse_args(argv)
    convs = json.loads(args.data.read_text())[:args.convs]
    evidence = [q["evidence"] for conv in convs for q in lr.questions_of(conv)]
    emb = MiniLMEmbeddings()
    index = {"embed": emb, "dims": 384, "fields": ["text"]}
    with tempfile.TemporaryDirectory() as tmp:
        makers: list[tuple[str, Callable[[], BaseStore]]] = [
            ("InMemoryStore (LangGraph)", lambda: InMemoryStore(index=index)),  # type: ignore[arg-type]
            ("RememStore, index.embed", lambda: RememStore(path=f"{tmp}/embed", index=index)),
            ("RememStore, index.embed, order=recall",
             lambda: RememStore(path=f"{tmp}/recall", index=index, order="recall")),
            ("RememStore, remem's embedder", lambda: RememStore(path=f"{tmp}/own", embedder="minilm",
                                                                index={"fields": ["text"]})),
        ]
        stores = [make() for _, make in makers]
        put_ms = [load(store, convs) for store in stores]
        answers = ask(stores, convs)
        reference = answers[0][0]
        rows = []
        for (name, _), put, (ranked, took) in zip(makers, put_ms, answers):
            hit = sum(bool(set(r) & ev) for r, ev in zip(ranked, evidence)) / len(ranked)
            same = statistics.mean(len(set(r) & set(ref)) / max(1, len(ref)) for r, ref in zip(ranked, reference))
            took.sort()
            rows.append((name, hit, same, put, statistics.median(took), took[int(0.95 * (len(took) - 1))]))
        for store in stores:
            if isinstance(store, RememStore):
                store.close()
    table = Table(title=f"LangGraph store search, LoCoMo {args.convs} conversation(s), {len(evidence)} questions, "
                        f"MiniLM embeddings")
    for col in ("store", "evidence@10", "same top-10", "put ms/item", "search p50 ms", "search p95 ms"):
        table.add_column(col, justify="left" if col == "store" else "right")
    for name, hit, same, put_ms, p50, p95 in rows:
        table.add_row(name, f"{hit:.3f}", f"{same:.3f}", f"{put_ms:.2f}", f"{p50:.1f}", f"{p95:.1f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
