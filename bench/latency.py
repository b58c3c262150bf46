"""Search latency and write throughput: remem on Qdrant Edge vs qdrant-client's local mode (mem0's default store).

Synthetic but realistic memories (preferences, decisions, incidents with identifiers) in 20 tenants; searches are
scoped to one tenant, as every remem search is. Dense vectors come from the local embedder for a pool of distinct
texts and are reused (with a little noise) beyond the pool, since embedding 100k texts would measure the embedder,
not the store. Reported: medians and p95 over the queries, and ratios against Edge in the same process. They are
measured after a first pass of other queries, which is reported too: a store just loaded is cold (its files were
just written), as a service is on its first searches.

    python -m remem.bench.latency [--sizes 1000 10000 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

from remem import Memory, MemoryRecord, Scope
from remem.core.store.backends.base import PointData
from remem.core.providers.embedders import resolve_embedder

SUBJECTS = ["Alice", "Bob", "the checkout team", "Maya", "the platform group", "our CI", "the billing service",
            "Jonas", "the mobile app", "the data pipeline"]
VERBS = ["prefers", "decided to use", "migrated to", "rolled back", "pinned", "deprecated", "benchmarked",
         "reported a bug in", "wants to avoid", "documented"]
OBJECTS = ["Postgres 16", "stripe-python v7.4.0", "Redis streams", "the retry queue", "dark mode", "GitHub Actions",
           "Kubernetes 1.31", "the FEATURE_NEW_CHECKOUT flag", "src/payments/webhook.py", "issue #481",
           "green tea", "weekly deploys on Tuesday", "OpenTelemetry tracing", "the nightly export job"]
REASONS = ["because latency doubled", "after the outage in March", "to cut cloud costs", "since tests were flaky",
           "as requested by security", "to simplify onboarding", "because v8 broke idempotency keys", ""]


def synth_text(rng: random.Random, i: int) -> str:
    reason = rng.choice(REASONS)
    return (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {reason} "
            f"(ticket OPS-{rng.randint(100, 9999)}, note {i})").replace("  ", " ")


def fill(mem: Memory, n: int, pool: list[tuple[str, list[float] | None]], rng: random.Random) -> float:
    """Bulk-load n memories straight into the backend (no embedding cost); returns seconds."""
    started = time.perf_counter()
    batch: list[PointData] = []
    for i in range(n):
        text, vec = pool[i % len(pool)]
        if i >= len(pool):
            text = synth_text(rng, i)
            vec = [x + rng.gauss(0, 0.01) for x in vec] if vec else None
        rec = MemoryRecord(id=str(uuid.uuid4()), text=text, kind=rng.choice(["fact", "decision", "preference"]),
                           scope=Scope(tenant=f"t{i % 20}"), content_hash=f"h{i}")
        batch.append(mem._connection.local.point(rec, vec))
        if len(batch) == 1000:
            mem.backend.upsert(batch)
            batch = []
    mem.backend.upsert(batch)
    mem.optimize()
    return time.perf_counter() - started


class QueryVectors:
    """The embedder with every benchmark query embedded beforehand: search time without the query embedding
    (the issue's target reads "query embedding excluded"); documents still go through the real model."""

    def __init__(self, inner: Any, queries: list[str]) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.vectors = {q: inner.embed_query(q) for q in queries} if inner.dim else {}

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text] if text in self.vectors else self.inner.embed_query(text)


def embed_query_ms(embedder: Any, queries: list[str]) -> float:
    """Median time to embed one query (0 without a dense model): what a search adds on top of the table."""
    if not embedder.dim:
        return 0.0
    out = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed_query(q)
        out.append(1000 * (time.perf_counter() - t0))
    return statistics.median(out)


def time_searches(mem: Memory, queries: list[str], rng: random.Random) -> list[float]:
    out = []
    for q in queries:
        scope = Scope(tenant=f"t{rng.randrange(20)}")
        t0 = time.perf_counter()
        mem.search(q, scope=scope, limit=10, reinforce=False)
        out.append(1000 * (time.perf_counter() - t0))
    return out


def write_rate(mem: Memory, n: int, rng: random.Random) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        mem.add(synth_text(rng, 10_000_000 + i), scope=Scope(tenant="writes"), dedupe=True)
    return n / (time.perf_counter() - t0)


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--local-mode-max", type=int, default=100_000, help="largest size also run on local mode")
    ap.add_argument("--writes", type=int, default=300)
    args = ap.parse_args(argv)
    console = Console(width=150)
    rng = random.Random(7)
    # two sets: the first pass right after loading (cold: the store's files just written), then the table's
    queries = [f"why did {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}?"
               for _ in range(2 * args.queries)]
    embedders = ["none"] + (["auto"] if resolve_embedder("auto").dim else [])  # auto: the default local model
    pool_size = 2000
    pools: dict[str, list[tuple[str, list[float] | None]]] = {}
    for emb in embedders:
        texts = [synth_text(random.Random(i), i) for i in range(pool_size)]
        e = resolve_embedder(emb)
        t0 = time.perf_counter()
        vecs = e.embed_documents(texts) if e.dim else [None] * len(texts)
        console.log(f"pool for {emb}: {pool_size} texts embedded in {time.perf_counter() - t0:.1f} s")
        pools[emb] = list(zip(texts, vecs))

    models = {emb: QueryVectors(resolve_embedder(emb), queries) for emb in embedders}
    query_ms = {emb: embed_query_ms(model.inner, queries[:30]) for emb, model in models.items()}
    table = Table(title="remem search latency (ms, one tenant of 20, limit 10, query embedding excluded) and writes")
    for col in ("store", "embedder", "memories", "search p50", "search p95", "vs Edge p50", "first pass p50 / p95",
                "load s", "writes/s", "+ query embedding ms"):
        table.add_column(col, justify="right")
    for emb in embedders:
        for n in args.sizes:
            results: dict[str, tuple[float, float, float, float | None, str]] = {}
            for store in ("edge", "qdrant-local"):
                if store == "qdrant-local" and n > args.local_mode_max:
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    mem = (Memory(path=Path(tmp) / "s", embedder=models[emb], service="off") if store == "edge"
                           else Memory(url=":memory:", embedder=models[emb]))
                    load = fill(mem, n, pools[emb], random.Random(n))
                    qn = args.queries if store == "edge" or n <= 10_000 else max(20, args.queries // 10)
                    first = time_searches(mem, queries[args.queries:args.queries + qn], random.Random(2))
                    lat = time_searches(mem, queries[:qn], random.Random(1))
                    wr = write_rate(mem, args.writes, rng) if n == args.sizes[0] else None
                    results[store] = (statistics.median(lat), p(lat, 0.95), load, wr,
                                      f"{statistics.median(first):.2f} / {p(first, 0.95):.2f}")
                    mem.close()
                console.log(f"{emb} {store} {n}: p50 {results[store][0]:.2f} ms")
            base = results["edge"][0]
            for store, (p50, p95, load, wr, cold) in results.items():
                table.add_row(store, models[emb].name, f"{n:,}", f"{p50:.2f}", f"{p95:.2f}", f"{p50 / base:.1f}x",
                              cold, f"{load:.1f}", f"{wr:.0f}" if wr else "", f"{query_ms[emb]:.1f}")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
