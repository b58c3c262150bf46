"""``Memory.index()`` cost: a first run, a re-run with nothing changed, and a re-run after one file was edited,
on a generated folder of Markdown files, in one store (medians of ``--rounds`` rounds, each in a fresh store);
baseline in the same run: the same chunks written with one ``add_many()`` call.

    python -m remem.bench.answer_index [--files 200] [--embedder auto] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

WORDS = ("queue worker deploy staging postgres redis migration webhook latency backoff retry timeout cache "
         "index shard replica cluster token budget rotation digest runbook incident").split()


def write_docs(root: Path, files: int) -> None:
    for f in range(files):
        parts = [f"# Document {f}\n"]
        for s in range(5):
            body = " ".join(WORDS[(f * 7 + s * 3 + i) % len(WORDS)] for i in range(120))
            parts.append(f"## Section {s}\n{body}.\n")
        (root / f"doc-{f:04d}.md").write_text("\n".join(parts))


def one_round(files: int, embedder: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        write_docs(docs, files)
        mem = Memory(path=Path(tmp) / "store", embedder=embedder, service="off")
        scope = Scope(tenant="bench")
        try:
            out: dict[str, float] = {}
            for label in ("first run", "re-run, nothing changed"):
                t0 = time.perf_counter()
                mem.index(docs, scope=scope)
                out[label] = time.perf_counter() - t0
            edited = docs / "doc-0000.md"
            edited.write_text(edited.read_text().replace("Section 2", "Section 2 (edited)"))
            t0 = time.perf_counter()
            result = mem.index(docs, scope=scope)
            out["re-run, one file edited"] = time.perf_counter() - t0
            out["chunks"] = float(result.unchanged + result.added)
            texts = [r.text for r in mem.list(scope=scope, limit=10_000)]
            t0 = time.perf_counter()  # baseline: the same chunks add_many()ed in one call, in another scope
            mem.add_many([{"text": t, "kind": "document"} for t in texts], scope=Scope(tenant="raw"), dedupe=False)
            out["baseline: add_many() of the same chunks"] = time.perf_counter() - t0
        finally:
            mem.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--embedder", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    rounds = [one_round(args.files, args.embedder) for _ in range(args.rounds)]
    table = Table(title=f"index() on {args.files} Markdown files ({rounds[0]['chunks']:.0f} chunks), "
                        f"embedder {args.embedder}, median of {args.rounds}")
    table.add_column("run")
    table.add_column("seconds", justify="right")
    table.add_column("vs first run", justify="right")
    first = statistics.median(r["first run"] for r in rounds)
    for label in ("baseline: add_many() of the same chunks", "first run", "re-run, nothing changed",
                  "re-run, one file edited"):
        med = statistics.median(r[label] for r in rounds)
        table.add_row(label, f"{med:.2f}", f"{med / first:.2f}x")
    Console(width=120).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
