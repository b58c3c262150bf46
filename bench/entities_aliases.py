"""Entity resolution on a labelled alias set: merge precision and recall over mention pairs.

``bench/data/entities_aliases.jsonl`` (written for remem): each line is one scope with mentions in the order
they are seen, each with its gold entity; what should merge (case, spacing, accents, a typo, a legal suffix, a
first name and the one full name, an alias said once, articles) and what must not (product models, near names
of different people, places, companies, services, identifiers, the same name typed twice). Each mention goes
through the shipped path (``EntityIndex.link``: lookup keys, the resolution rules, the record update) on a
qdrant-client in-memory store, one tenant per case; every pair of mentions in a case is then a merge
decision, scored against the gold labels.

    python -m remem.bench.entities_aliases [--show-errors]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem.core.entities.extract import Mention
from remem.core.entities.names import key
from remem.core.entities.resolve import IDENTIFIER_KINDS
from remem.core.entities.store import EntityIndex
from remem.core.store.backends.qdrant import QdrantClientBackend
from remem.core.types import Scope

DATA = Path(__file__).resolve().parent / "data" / "entities_aliases.jsonl"


def mention(m: dict) -> Mention:
    kind = m["kind"]
    k = m["name"].casefold() if kind in IDENTIFIER_KINDS else key(m["name"])
    return Mention(name=m["name"], kind=kind, key=k, guessed=m.get("guessed", kind == "person"),
                   aliases=tuple(m.get("aliases", ())))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--show-errors", action="store_true")
    args = ap.parse_args(argv)
    cases = [json.loads(line) for line in args.data.read_text("utf-8").splitlines() if line.strip()]
    backend = QdrantClientBackend(":memory:", collection="aliases")
    backend.ensure(0)
    idx = EntityIndex(backend)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # tp, fp, fn, tn
    errors = []
    for n, case in enumerate(cases):
        scope = Scope(tenant=f"case-{n}")
        ids = []
        for i, m in enumerate(case["mentions"]):
            got = idx.link(scope, [mention(m)], float(i))
            ids.append(got[0] if got else None)
        for (a, ia), (b, ib) in combinations(list(zip(case["mentions"], ids)), 2):
            gold, said = a["gold"] == b["gold"], ia is not None and ia == ib
            cell = 0 if gold and said else 1 if said else 2 if gold else 3
            for group in ("all", f'{case["domain"]}: {case["what"]}'):
                tally[group][cell] += 1
            if cell in (1, 2):
                errors.append(("wrong merge" if cell == 1 else "missed", a["name"], b["name"], case["what"]))
    table = Table(title=f"entity resolution: {len(cases)} cases, {sum(tally['all'])} mention pairs")
    for col in ("group", "pairs", "should merge", "merged right", "wrong merges", "missed", "precision", "recall"):
        table.add_column(col, justify="right" if col != "group" else "left")
    for group in ["all", *sorted(g for g in tally if g != "all")]:
        tp, fp, fn, tn = tally[group]
        prec = tp / (tp + fp) if tp + fp else float("nan")
        rec = tp / (tp + fn) if tp + fn else float("nan")
        table.add_row(group, str(tp + fp + fn + tn), str(tp + fn), str(tp), str(fp), str(fn), f"{prec:.3f}",
                      f"{rec:.3f}")
    console = Console(width=150)
    console.print(table)
    if args.show_errors:
        for e in errors:
            console.print(" | ".join(e))
    backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
