"""Entity questions through the path users take: conversations ``remember()``ed session by session, questions
answered from ``context()`` at 800 tokens and from ``about()``, with entity recall on and off in the same run.

``bench/data/entities_conversations.json`` (written for remem): a coding team, a personal assistant and a small
shop's support inbox, 3 sessions each, and questions of six kinds: profile ("tell me about X"), two-hop ("the
service Dana maintains"), what changed, alias, plain fact, and never-mentioned entities. A question is answered
when every fact phrase it lists is in the recalled text (case-insensitive); a never-mentioned question is
scored by the tokens its context spends (the fewer the better). Profile questions are also asked of
``about(name)``: the share of their facts its text holds. Two-hop and what-changed questions are also scored on
``search()``'s top hit and top 3 hits (800 tokens hold most of these small stores), with the relation hop on and off.

``bench/data/entities_heldout.json`` is a held-out set of the same kinds (a hospital ward, a research lab, a
household, an indie game studio), written apart from the code: run it with
``--data bench/data/entities_heldout.json`` only at the end of a round, and never tune on it.

    python -m remem.bench.entities_questions [--embedder none] [--data PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope
from remem.core.recall.tokens import count_tokens

DATA = Path(__file__).resolve().parent / "data" / "entities_conversations.json"
BUDGET = 800
TOP = 3


def has(text: str, fact: str) -> bool:
    return fact.casefold() in text.casefold()


def load(mem: Memory, data: dict) -> None:
    for n, conv in enumerate(data["conversations"]):
        scope = Scope(tenant=f"conv-{n}")
        for s, session in enumerate(conv["sessions"]):
            msgs = [{**m, "timestamp": session["date"], "id": f"c{n}s{s}m{i}"}
                    for i, m in enumerate(session["messages"])]
            mem.remember(msgs, scope=scope, session=f"c{n}s{s}")


def score(mem: Memory, data: dict) -> dict[str, dict[str, float]]:
    rows: dict[str, list[float]] = defaultdict(list)
    for n, conv in enumerate(data["conversations"]):
        scope = Scope(tenant=f"conv-{n}")
        for q in conv["questions"]:
            text = mem.context(q["q"], scope=scope, token_budget=BUDGET, reinforce=False)
            if q["kind"] == "never":
                rows["never: context tokens"].append(count_tokens(text) if text else 0)
                continue
            found = [has(text, f) for f in q["facts"]]
            if q["kind"] in ("two-hop", "changed"):  # stricter than 800 tokens, which hold most of a small store
                hits = [h.record.text for h in mem.search(q["q"], scope=scope, limit=TOP, reinforce=False)]
                for k in (1, TOP):
                    top = " ".join(hits[:k])
                    rows[f"{q['kind']}: all facts in the top {k} hit(s)"].append(
                        float(all(has(top, f) for f in q["facts"])))
            rows[f"{q['kind']}: fully answered"].append(float(all(found)))
            rows["all but never: facts found"].extend(float(f) for f in found)
            rows["all but never: fully answered"].append(float(all(found)))
            if q["kind"] == "profile":
                prof = mem.about(q["name"], scope=scope, token_budget=BUDGET).text
                rows["profile via about(): facts found"].extend(float(has(prof, f)) for f in q["facts"])
                rows["profile via about(): fully answered"].append(float(all(has(prof, f) for f in q["facts"])))
    return {k: {"mean": statistics.fmean(v), "n": len(v)} for k, v in rows.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text("utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "store", embedder=args.embedder, service="off")
        load(mem, data)
        variants = {"default (boost off, relation hop on)": mem,
                    "relation hop off (relation_weight=0)": mem.with_settings(relation_weight=0),
                    "boost on (entity_weight=0.5)": mem.with_settings(entity_weight=0.5),
                    "entity recall off (same store)": mem.with_settings(entity_recall=False)}
        variants["alias names off (entity_aliases=False)"] = mem.with_settings(entity_aliases=False)
        bare = Memory(path=Path(tmp) / "bare", embedder=args.embedder, service="off", entities=False)
        load(bare, data)
        variants["entities=False (own store)"] = bare
        results = {name: score(m, data) for name, m in variants.items()}
        mem.close()
        bare.close()
    table = Table(title=f"entity questions via remember() -> context() at {BUDGET} tokens ({args.embedder})")
    table.add_column("measure")
    table.add_column("n", justify="right")
    for name in results:
        table.add_column(name, justify="right")
    for key in sorted(next(iter(results.values()))):
        first = next(iter(results.values()))[key]
        fmt = (lambda v: f"{v:.0f}") if key.startswith("never") else (lambda v: f"{v:.3f}")
        table.add_row(key, str(first["n"]), *(fmt(r[key]["mean"]) for r in results.values()))
    Console(width=140).print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
