"""LoCoMo evidence retrieval: remem's recall vs a plain BM25 baseline (rank-bm25), in one run.

Every turn of each conversation becomes one memory (``speaker: text`` plus the image caption, dated with its
session), each conversation in its own tenant of one store. Each question of categories 1-4 searches its own
conversation's tenant; Recall@k is the share of its evidence turns in the top k, MRR the reciprocal rank of the
first evidence turn. Also: tokens of remem's recalled context at the default budget vs the whole conversation.

    python -m remem.bench.locomo [--data ../shared/data/locomo10.json] [--embedder auto|none] [--limit-convs N]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope
from remem.bench.locomo_remember import CATEGORIES, DEFAULT_DATA, Scores, session_date
from remem.core.recall.tokens import count_tokens

WINDOW = 2  # turns of context on each side (bench/research: ±2 within the session was best)


def turns_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    c = conv["conversation"]
    out = []
    n = 1
    while f"session_{n}" in c:
        when = session_date(c[f"session_{n}_date_time"])
        session = []
        for t in c[f"session_{n}"]:
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shared an image: {t['blip_caption']}]"
            session.append({"dia_id": t["dia_id"], "text": text, "when": when})
        for i, turn in enumerate(session):  # the conversation around each turn, within its session
            turn["context"] = " ".join(t["text"] for t in session[max(0, i - WINDOW): i + WINDOW + 1])
        out.extend(session)
        n += 1
    return out


def questions_of(conv: dict[str, Any], valid_ids: set[str]) -> list[dict[str, Any]]:
    qs = []
    for q in conv["qa"]:
        if q.get("category") not in CATEGORIES:
            continue
        ev = [e.strip() for ev in q.get("evidence", []) for e in re.split(r"[;,]", ev) if e.strip() in valid_ids]
        if ev:
            qs.append({"question": q["question"], "evidence": set(ev), "category": q["category"]})
    return qs


def score(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    def recall(k: int) -> float:
        return len(evidence & set(ranked[:k])) / len(evidence)

    rr = next((1.0 / (i + 1) for i, d in enumerate(ranked) if d in evidence), 0.0)
    return {"r5": recall(5), "r10": recall(10), "mrr": rr}


def run_bm25_baseline(convs: list[dict[str, Any]]) -> Scores:
    from rank_bm25 import BM25Okapi

    tok = re.compile(r"\w+")
    scores = Scores()
    for conv in convs:
        turns = turns_of(conv)
        ids = [t["dia_id"] for t in turns]
        bm = BM25Okapi([tok.findall(f"{t['text']} {t['when']:%d %B %Y}".lower()) for t in turns])
        for q in questions_of(conv, set(ids)):
            s = bm.get_scores(tok.findall(q["question"].lower()))
            ranked = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -s[i])[:10]]
            scores.add(q["category"], score(ranked, q["evidence"]))
    return scores


def load_store(mem: Memory, convs: list[dict[str, Any]], progress: Callable[[str], None],
               use_context: bool = True) -> float:
    started = time.perf_counter()
    for ci, conv in enumerate(convs):
        items = [{"text": t["text"], "kind": "event", "valid_from": t["when"], "created_at": t["when"],
                  "metadata": {"dia_id": t["dia_id"]}, "dedupe": False,
                  **({"context": t["context"]} if use_context else {})} for t in turns_of(conv)]
        mem.add_many(items, scope=Scope(tenant=f"locomo-{ci}"))
        progress(f"indexed conversation {ci + 1}/{len(convs)} ({len(items)} turns)")
    mem.optimize()
    return time.perf_counter() - started


def run_remem(mem: Memory, convs: list[dict[str, Any]], token_budget: int = 800) -> tuple[Scores, dict[str, Any]]:
    scores = Scores()
    latencies: list[float] = []
    ctx_tokens: list[int] = []
    conv_tokens: list[int] = []
    for ci, conv in enumerate(convs):
        scope = Scope(tenant=f"locomo-{ci}")
        turns = turns_of(conv)
        whole = count_tokens("\n".join(f"[{t['when']:%Y-%m-%d}] {t['text']}" for t in turns))
        for q in questions_of(conv, {t["dia_id"] for t in turns}):
            t0 = time.perf_counter()
            hits = mem.search(q["question"], scope=scope, limit=10, reinforce=False)
            latencies.append(time.perf_counter() - t0)
            scores.add(q["category"], score([h.record.metadata.get("dia_id") for h in hits], q["evidence"]))
            ctx_tokens.append(count_tokens(mem.context(q["question"], scope=scope, token_budget=token_budget,
                                                       reinforce=False)))
            conv_tokens.append(whole)
    latencies.sort()
    extra = {
        "search_p50_ms": 1000 * latencies[len(latencies) // 2],
        "search_p95_ms": 1000 * latencies[int(len(latencies) * 0.95)],
        "context_tokens_median": statistics.median(ctx_tokens),
        "conversation_tokens_median": statistics.median(conv_tokens),
    }
    return scores, extra


def table(rows: Iterable[tuple[str, Scores]]) -> Table:
    t = Table(title="LoCoMo evidence retrieval (categories 1-4)")
    t.add_column("method")
    for col in ("R@5", "R@10", "MRR", *[f"R@10 {name}" for name in CATEGORIES.values()]):
        t.add_column(col, justify="right")
    for name, s in rows:
        t.add_row(name, f"{s.mean('r5'):.3f}", f"{s.mean('r10'):.3f}", f"{s.mean('mrr'):.3f}",
                  *[f"{s.mean('r10', c):.3f}" for c in CATEGORIES])
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", action="append", help="remem embedders to run (default: auto and none)")
    ap.add_argument("--limit-convs", type=int, default=None)
    ap.add_argument("--no-context", action="store_true", help="index each turn alone, without its neighbours")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args(argv)
    console = Console(width=150)
    convs = json.loads(args.data.read_text("utf-8"))[: args.limit_convs]
    rows: list[tuple[str, Scores]] = [("rank-bm25 (BM25Okapi, +date)", run_bm25_baseline(convs))]
    report: dict[str, Any] = {}
    for emb in args.embedder or ["auto", "none"]:
        with tempfile.TemporaryDirectory() as tmp:
            mem = Memory(path=Path(tmp) / "store", embedder=emb, service="off")
            secs = load_store(mem, convs, lambda m: console.log(m), use_context=not args.no_context)
            s, extra = run_remem(mem, convs)
            name = f"remem ({mem.embedder.name}{', turn only' if args.no_context else ', turn + context'})"
            rows.append((name, s))
            report[name] = {"r5": s.mean("r5"), "r10": s.mean("r10"), "mrr": s.mean("mrr"), "index_s": secs,
                            "n_questions": s.n, **{f"r10_{v}": s.mean("r10", k) for k, v in CATEGORIES.items()},
                            **extra}
            mem.close()
    console.print(table(rows))
    stats = Table(title="remem cost per configuration")
    for col in ("method", "index s", "search p50 ms", "search p95 ms", "context tokens (median, budget 800)",
                "whole conversation tokens (median)", "saving"):
        stats.add_column(col, justify="right")
    for name, r in report.items():
        stats.add_row(name, f"{r['index_s']:.1f}", f"{r['search_p50_ms']:.2f}", f"{r['search_p95_ms']:.2f}",
                      f"{r['context_tokens_median']:.0f}", f"{r['conversation_tokens_median']:.0f}",
                      f"{r['conversation_tokens_median'] / max(1, r['context_tokens_median']):.0f}x")
    console.print(stats)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
