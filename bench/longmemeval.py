"""Held-out evaluation on a LongMemEval-S sample: session recall of remem's default recipe.

For final measurement only — nothing in remem is tuned on it (the development set is LoCoMo). Each question
gets its own tenant holding its ~50 haystack sessions; every message is a memory dated with its session, with the
two messages on each side as context (as in the LoCoMo bench). A question's ranked memories are collapsed to
their sessions in order; recall_any@k = at least one answer session in the top k sessions, recall_all@k = all.

    python -m remem.bench.longmemeval [--data ../shared/heldout/longmemeval_s_sample28.json] [--embedder auto]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "heldout" / "longmemeval_s_sample28.json"
WINDOW = 2
KS = (1, 5, 10)


def session_date(text: str) -> dt.datetime:
    return dt.datetime.strptime(text.split(" (")[0] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=dt.timezone.utc)


def items_for(q: dict[str, Any]) -> list[dict[str, Any]]:
    items = []
    for sid, date, session in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
        when = session_date(date)
        texts = [f"{m['role']}: {m['content']}" for m in session if m.get("content")]
        for i, text in enumerate(texts):
            items.append({"text": text[:8000], "kind": "event", "valid_from": when, "created_at": when,
                          "metadata": {"session_id": sid}, "dedupe": False,
                          "context": " ".join(texts[max(0, i - WINDOW): i + WINDOW + 1])[:16000]})
    return items


def ranked_sessions(mem: Memory, q: dict[str, Any], scope: Scope) -> list[str]:
    hits = mem.search(q["question"], scope=scope, limit=100, reinforce=False)
    out: list[str] = []
    for h in hits:
        sid = h.record.metadata.get("session_id")
        if sid not in out:
            out.append(sid)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", action="append", help="embedders to run (default: auto and none)")
    args = ap.parse_args(argv)
    console = Console(width=150)
    questions = json.loads(args.data.read_text("utf-8"))
    table = Table(title=f"LongMemEval-S sample ({len(questions)} questions): session recall")
    for col in ("embedder", *[f"any@{k}" for k in KS], *[f"all@{k}" for k in KS], "index s", "search p50 ms"):
        table.add_column(col, justify="right")
    per_type: dict[str, dict[str, list[float]]] = {}
    for emb in args.embedder or ["auto", "none"]:
        scores: dict[str, list[float]] = defaultdict(list)
        by_type: dict[str, list[float]] = defaultdict(list)
        latencies: list[float] = []
        with tempfile.TemporaryDirectory() as tmp:
            mem = Memory(path=Path(tmp) / "store", embedder=emb, service="off")
            t0 = time.perf_counter()
            for i, q in enumerate(questions):
                mem.add_many(items_for(q), scope=Scope(tenant=f"q{i}"))
                console.log(f"{mem.embedder.name}: indexed question {i + 1}/{len(questions)}")
            index_s = time.perf_counter() - t0
            for i, q in enumerate(questions):
                t1 = time.perf_counter()
                ranked = ranked_sessions(mem, q, Scope(tenant=f"q{i}"))
                latencies.append(1000 * (time.perf_counter() - t1))
                gold = set(q["answer_session_ids"])
                for k in KS:
                    top = set(ranked[:k])
                    scores[f"any@{k}"].append(float(bool(gold & top)))
                    scores[f"all@{k}"].append(float(gold <= top))
                by_type[q["question_type"]].append(float(bool(gold & set(ranked[:5]))))
            name = mem.embedder.name
            mem.close()
        latencies.sort()
        table.add_row(name, *[f"{sum(scores[f'any@{k}']) / len(questions):.3f}" for k in KS],
                      *[f"{sum(scores[f'all@{k}']) / len(questions):.3f}" for k in KS],
                      f"{index_s:.0f}", f"{latencies[len(latencies) // 2]:.1f}")
        per_type[name] = by_type
    console.print(table)
    types = Table(title="any@5 by question type")
    types.add_column("embedder")
    names = sorted({t for bt in per_type.values() for t in bt})
    for t in names:
        types.add_column(f"{t} (n={len(next(iter(per_type.values()))[t])})", justify="right")
    for name, bt in per_type.items():
        types.add_row(name, *[f"{sum(bt[t]) / len(bt[t]):.2f}" for t in names])
    console.print(types)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
