"""``Memory.answer()`` on LoCoMo, keyless, through the path users take: each conversation ``remember()``ed session
by session (as bench/locomo_remember.py does), then every question answered.

Per category (1-4, and 5: adversarial questions, about something the conversation does not hold):

* token F1 of the answer against the gold answer (SQuAD normalisation: lower case, no punctuation or articles);
  a not-found answer scores 0;
* cites evidence: the share of answers whose citations include one of the question's evidence turns;
* found: the share answered (for category 5 the share that should have been "not found" but was answered).

Baseline in the same run: the top hit of ``search()`` taken as the answer (what a caller had before
``answer()``), cited with its message ids; it is never "not found" unless nothing is recalled.

    python -m remem.bench.answer_locomo [--limit-convs N] [--embedder none|auto] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import string
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope
from remem.bench.locomo_remember import DEFAULT_DATA, load_remember, sessions_of
from remem.core.answer import extractive

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def normalise(text: str) -> list[str]:
    text = text.lower()
    text = "".join(c for c in text if c not in set(string.punctuation))
    return _ARTICLES.sub(" ", text).split()


def f1(prediction: str, gold: str) -> float:
    pred, ref = normalise(prediction), normalise(gold)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if not pred or not ref or not same:
        return 0.0
    p, r = same / len(pred), same / len(ref)
    return 2 * p * r / (p + r)


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    valid = {t["dia_id"] for _, _, turns in sessions_of(conv) for t in turns}
    out = []
    for q in conv["qa"]:
        cat = q.get("category")
        if cat not in CATEGORIES:
            continue
        ev = {e.strip() for ev in q.get("evidence", []) for e in re.split(r"[;,]", ev) if e.strip() in valid}
        out.append({"question": q["question"], "answer": str(q.get("answer", "")), "category": cat, "evidence": ev})
    return out


class Tally:
    def __init__(self) -> None:
        self.rows: dict[int, list[dict[str, float]]] = defaultdict(list)

    def add(self, cat: int, **row: float) -> None:
        self.rows[cat].append(row)

    def mean(self, key: str, cats: tuple[int, ...]) -> float:
        vals = [r[key] for c in cats for r in self.rows[c] if key in r]
        return statistics.fmean(vals) if vals else float("nan")


def run(mem: Memory, convs: list[dict[str, Any]], log: Callable[[str], None]) -> dict[str, Tally]:
    tallies = {"answer()": Tally(), "top search hit": Tally()}
    latency: list[float] = []
    for ci, conv in enumerate(convs):
        scope = Scope(tenant=f"locomo-{ci}")
        for q in questions(conv):
            t0 = time.perf_counter()
            ans = mem.answer(q["question"], scope=scope, llm="keyless")
            latency.append(time.perf_counter() - t0)
            hits = mem.search(q["question"], scope=scope, limit=1, reinforce=False)
            top_text = hits[0].record.text if hits else ""
            top_cites = set(hits[0].sources) | {hits[0].record.id} if hits else set()
            for name, found, text, cites in (("answer()", ans.found, ans.text, set(ans.citations)),
                                             ("top search hit", bool(hits), top_text, top_cites)):
                row = {"found": float(found)}
                if q["category"] != 5:
                    row["f1"] = f1(text, q["answer"]) if found else 0.0
                    row["cites"] = float(bool(q["evidence"] & cites)) if found else 0.0
                tallies[name].add(q["category"], **row)
        log(f"answered conversation {ci + 1}/{len(convs)}")
    latency.sort()
    p50, p95 = latency[len(latency) // 2], latency[int(len(latency) * .95)]
    log(f"answer() p50 {1000 * p50:.1f} ms, p95 {1000 * p95:.1f} ms")
    return tallies


def table(tallies: dict[str, Tally], note: str = "") -> Table:
    t = Table(title=f"LoCoMo: answer() keyless vs the top search hit (same store, same run){note}")
    t.add_column("method")
    t.add_column("metric")
    for name in ["1-4", *CATEGORIES.values()]:
        t.add_column(name, justify="right")
    answerable = (1, 2, 3, 4)
    for name, tally in tallies.items():
        for key, label in (("f1", "token F1"), ("cites", "cites evidence"), ("found", "found")):
            cells = [f"{tally.mean(key, answerable):.3f}"]
            cells += [f"{tally.mean(key, (c,)):.3f}" if tally.rows[c] and key in tally.rows[c][0] else "-"
                      for c in CATEGORIES]
            t.add_row(name, label, *cells)
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--limit-convs", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--found-at", type=float, action="append", default=None,
                    help="extractive coverage thresholds to compare (default: the shipped one)")
    args = ap.parse_args(argv)
    console = Console(width=160)
    convs = json.loads(args.data.read_text("utf-8"))[: args.limit_convs]
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "store", embedder=args.embedder, service="off")
        try:
            load_remember(mem, convs, "names", console.log)
            for found_at in args.found_at or [extractive.FOUND_AT]:
                extractive.FOUND_AT = found_at
                tallies = run(mem, convs, console.log)
                console.print(table(tallies, f" (extractive FOUND_AT {found_at})"))
        finally:
            mem.close()
    if args.json:
        report = {name: {CATEGORIES.get(c, str(c)): {k: tally.mean(k, (c,)) for k in ("f1", "cites", "found")}
                         for c in CATEGORIES} for name, tally in tallies.items()}
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
