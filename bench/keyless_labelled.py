"""The keyless distiller on the labelled set (coding sessions, and personal chat: ``chat-*``): precision and recall
by kind.

``tests/fixtures/keyless_labelled.jsonl``: each snippet is a short conversation (OpenAI message dicts, tool calls
included) with the memories it must yield (``expect``: ``[kind, phrase, ...]``, every phrase in one extracted
memory of that kind) and the extra ones that are acceptable (``allow``: ``[kind or "*", phrase]``). Anything else
extracted is a false positive; snippets with no ``expect`` must yield nothing (outcome junk like "All 48 tests
pass now", context-free fragments, narration, questions, tool output).

Recall of a kind: expected memories of that kind found. Precision of a kind: extracted memories of that kind that
match an expected or allowed one. Also: snippets fully right (every expected memory found, nothing else).

    python -m remem.bench.keyless_labelled [--show-errors] [--cases FILE]

``bench/data/keyless_unseen.jsonl`` holds the sets written blind that no rule was written for yet (the newest
``freshN-*``):
scored once per round of rules, never tuned on; a round that writes rules for one moves it to the fixtures and
needs a new one.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from rich.console import Console
from rich.table import Table

from remem.core.distill.candidates import Candidate
from remem.core.distill.conversation import conversation_turns, to_plain_messages
from remem.core.distill.keyless import KeylessDistiller

DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keyless_labelled.jsonl"
KINDS = ("fact", "preference", "decision", "lesson", "event")


def load_cases(path: Path = DATA) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if "id" in row:
                out.append(row)
    return out


def _matches(cand: Candidate, spec: Sequence[str]) -> bool:
    kind, *phrases = spec
    text = cand.text.lower()
    return (kind in ("*", cand.kind)) and all(p.lower() in text for p in phrases)


@dataclass
class KindScore:
    expected: int = 0
    found: int = 0
    kept: int = 0  # expected memories whose phrases are in an extracted memory of any kind
    extracted: int = 0
    correct: int = 0

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else float("nan")

    @property
    def precision(self) -> float:
        return self.correct / self.extracted if self.extracted else float("nan")


@dataclass
class Report:
    by_kind: dict[str, KindScore] = field(default_factory=lambda: defaultdict(KindScore))
    snippets: int = 0
    exact: int = 0
    negatives: int = 0
    clean_negatives: int = 0
    errors: list[tuple[str, str, list[tuple[str, str]]]] = field(default_factory=list)

    def total(self) -> KindScore:
        t = KindScore()
        for s in self.by_kind.values():
            t.expected += s.expected
            t.found += s.found
            t.kept += s.kept
            t.extracted += s.extracted
            t.correct += s.correct
        return t


def extract(messages: list[dict[str, Any]], distiller: KeylessDistiller | None = None) -> list[Candidate]:
    return (distiller or KeylessDistiller()).candidates(conversation_turns(to_plain_messages(messages)))


def evaluate(cases: Sequence[dict[str, Any]] | None = None, distiller: KeylessDistiller | None = None) -> Report:
    rep = Report()
    for case in cases if cases is not None else load_cases():
        got = extract(case["messages"], distiller)
        expect, allow = case["expect"], case["allow"]
        ok = True
        for spec in expect:
            rep.by_kind[spec[0]].expected += 1
            rep.by_kind[spec[0]].kept += any(_matches(c, ["*", *spec[1:]]) for c in got)
            if any(_matches(c, spec) for c in got):
                rep.by_kind[spec[0]].found += 1
            else:
                ok = False
                rep.errors.append((case["id"], f"missed {spec}", [(c.kind, c.text) for c in got]))
        for c in got:
            rep.by_kind[c.kind].extracted += 1
            if any(_matches(c, spec) for spec in [*expect, *allow]):
                rep.by_kind[c.kind].correct += 1
            else:
                ok = False
                rep.errors.append((case["id"], f"extra {c.kind}: {c.text}", []))
        rep.snippets += 1
        rep.exact += ok
        if not expect:
            rep.negatives += 1
            rep.clean_negatives += not got
    return rep


def iter_rows(rep: Report) -> Iterator[tuple[str, KindScore]]:
    for kind in KINDS:
        if kind in rep.by_kind:
            yield kind, rep.by_kind[kind]
    yield "all", rep.total()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--show-errors", action="store_true")
    ap.add_argument("--cases", type=Path, default=DATA,
                    help="another labelled set, e.g. bench/data/keyless_unseen.jsonl (scored, never tuned on)")
    args = ap.parse_args(argv)
    cases = load_cases(args.cases)
    started = time.perf_counter()
    rep = evaluate(cases)
    secs = time.perf_counter() - started
    console = Console(width=140)
    t = Table(title=f"keyless distiller on {rep.snippets} labelled snippets ({rep.negatives} must yield nothing)")
    for col in ("kind", "expected", "found", "recall", "kept, any kind", "extracted", "correct", "precision"):
        t.add_column(col, justify="right")
    for kind, s in iter_rows(rep):
        t.add_row(kind, str(s.expected), str(s.found), f"{s.recall:.3f}", str(s.kept), str(s.extracted),
                  str(s.correct), f"{s.precision:.3f}")
    console.print(t)
    console.print(f"snippets fully right: {rep.exact}/{rep.snippets}; noise snippets with no memory: "
                  f"{rep.clean_negatives}/{rep.negatives}; {1000 * secs / max(1, rep.snippets):.2f} ms per snippet")
    if args.show_errors:
        for cid, what, got in rep.errors:
            console.print(f"[bold]{cid}[/]: {what}" + (f"\n    got {got}" if got else ""), highlight=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
