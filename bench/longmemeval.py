"""Held-out evaluation on a LongMemEval-S sample, through the path users take: ``remember()`` by session.

For final measurement only — nothing in remem is tuned on it (the development set is LoCoMo, see
bench/locomo_remember.py); run it once the recipe is fixed. Each question gets its own tenant; each of its ~50
haystack sessions is one ``remember()`` call (distiller ``keyless``): every message keeps its role, its id
(``<session id>:<position>``) and the session date as its ``timestamp``. The question is then asked with
``search()`` and its hits are read through ``sources`` (each hit stands for at most 3 of them, as in the LoCoMo
bench):

* session recall_any@5 / recall_all@5: the hits' sources, collapsed to their sessions in rank order; at least
  one / every answer session among the first 5 sessions;
* turn recall_any@5 / recall_all@5: the evidence messages (``has_answer``) among the sources of the top 5 hits.

In the same run, for comparison: every message ``add()``ed on its own (dated with ``occurred_at``, its id in
``sources``, no ``context=``).

    python -m remem.bench.longmemeval [--data ../shared/heldout/longmemeval_s_sample28.json] [--embedder auto]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "heldout" / "longmemeval_s_sample28.json"
SOURCES_PER_HIT = 3
K = 5
DEPTH = 50  # hits read per question (sessions are collapsed from them)


def session_date(text: str) -> dt.datetime:
    return dt.datetime.strptime(text.split(" (")[0] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=dt.timezone.utc)


def sessions_of(q: dict[str, Any]) -> list[tuple[str, dt.datetime, list[dict[str, Any]]]]:
    """Each haystack session as (id, date, messages in the shape ``remember()`` takes)."""
    out = []
    for sid, date, session in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
        when = session_date(date)
        msgs = [{"role": m["role"], "content": m["content"], "id": f"{sid}:{i}", "timestamp": when.isoformat()}
                for i, m in enumerate(session) if m.get("content") and m.get("role") in ("user", "assistant")]
        out.append((sid, when, msgs))
    return out


def evidence_turns(q: dict[str, Any]) -> set[str]:
    return {f"{sid}:{i}" for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"])
            for i, m in enumerate(session) if m.get("has_answer")}


def load(mem: Memory, q: dict[str, Any], scope: Scope, method: str) -> None:
    for sid, when, msgs in sessions_of(q):
        if method == "remember":
            mem.remember(msgs, scope=scope, session=sid, distiller="keyless")
        else:
            mem.add_many([{"text": f"{m['role']}: {m['content']}"[:30_000], "occurred_at": when,
                           "sources": [m["id"]], "dedupe": False} for m in msgs], scope=scope)


def scores(hits_sources: Sequence[Sequence[str]], gold_sessions: set[str], gold_turns: set[str]) -> dict[str, float]:
    sessions: list[str] = []
    for srcs in hits_sources:
        for s in list(srcs)[:SOURCES_PER_HIT]:
            sid = s.rsplit(":", 1)[0]
            if sid not in sessions:
                sessions.append(sid)
    top_s = set(sessions[:K])
    top_t = {s for srcs in hits_sources[:K] for s in list(srcs)[:SOURCES_PER_HIT]}
    out = {"s_any": float(bool(gold_sessions & top_s)), "s_all": float(gold_sessions <= top_s)}
    if gold_turns:
        out.update({"t_any": float(bool(gold_turns & top_t)), "t_all": float(gold_turns <= top_t)})
    return out


def run(questions: list[dict[str, Any]], method: str, embedder: str, console: Console) -> dict[str, Any]:
    rows: list[dict[str, float]] = []
    by_type: dict[str, list[float]] = defaultdict(list)
    lat: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "store", embedder=embedder, service="off")
        name = mem.embedder.name
        t0 = time.perf_counter()
        n_msgs = 0
        for i, q in enumerate(questions):
            load(mem, q, Scope(tenant=f"q{i}"), method)
            n_msgs += sum(len(m) for _, _, m in sessions_of(q))
            console.log(f"{method} ({name}): question {i + 1}/{len(questions)}")
        index_s = time.perf_counter() - t0
        mem.optimize()
        for i, q in enumerate(questions):
            t1 = time.perf_counter()
            hits = mem.search(q["question"], scope=Scope(tenant=f"q{i}"), limit=DEPTH, reinforce=False)
            lat.append(1000 * (time.perf_counter() - t1))
            row = scores([h.sources for h in hits], set(q["answer_session_ids"]), evidence_turns(q))
            rows.append(row)
            by_type[q["question_type"]].append(row["s_all"])
        mem.close()
    mean = lambda key: statistics.fmean([r[key] for r in rows if key in r])  # noqa: E731
    return {"name": f"{method} ({name})", "s_any": mean("s_any"), "s_all": mean("s_all"), "t_any": mean("t_any"),
            "t_all": mean("t_all"), "n_turn_q": sum(1 for r in rows if "t_any" in r), "index_s": index_s,
            "msgs_per_s": n_msgs / index_s, "p50": statistics.median(lat),
            "by_type": {t: statistics.fmean(v) for t, v in by_type.items()}, "n_type": {t: len(v) for t, v in by_type.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", default="auto")
    ap.add_argument("--methods", default="remember,add")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    console = Console(width=170)
    questions = json.loads(args.data.read_text("utf-8"))
    results = [run(questions, m, args.embedder, console) for m in args.methods.split(",")]
    table = Table(title=f"LongMemEval-S sample ({len(questions)} questions), held out: recall@{K} through sources")
    for col in ("method", f"session any@{K}", f"session all@{K}", f"turn any@{K}", f"turn all@{K}", "index s",
                "messages/s", "search p50 ms"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(r["name"], *[f"{r[k]:.3f}" for k in ("s_any", "s_all", "t_any", "t_all")], f"{r['index_s']:.0f}",
                      f"{r['msgs_per_s']:.0f}", f"{r['p50']:.1f}")
    console.print(table)
    types = Table(title=f"session all@{K} by question type")
    types.add_column("method")
    names = sorted(results[0]["by_type"])
    for t in names:
        types.add_column(f"{t} (n={results[0]['n_type'][t]})", justify="right")
    for r in results:
        types.add_row(r["name"], *[f"{r['by_type'][t]:.2f}" for t in names])
    console.print(types)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
