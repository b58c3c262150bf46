"""``Memory.answer()`` on questions about coding sessions (written for remem; no public set has them).

Three sessions of a developer and an assistant are ``remember()``ed (keyless distiller), then questions are
asked: answerable ones (the answer's key words and the message that holds it are known) and ones the sessions do
not answer, which must come back ``found=False``. Baseline in the same run: the top search hit as the answer.

    python -m remem.bench.answer_coding [--embedder none|auto]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

SESSIONS = {
    "mon": ["2026-03-02T09:00:00+00:00", [
        ("u1", "user", "The checkout tests are flaky again; they time out waiting for the Stripe webhook."),
        ("a1", "assistant", "The webhook handler retries with a fixed 30 second sleep; I replaced it with an "
                            "exponential backoff capped at 5 seconds."),
        ("u2", "user", "Good. We decided to pin stripe-python to 7.4.0 because 8.0 broke the webhook signatures."),
        ("a2", "assistant", "Pinned stripe-python==7.4.0 in requirements.txt and added a comment with the reason."),
        ("u3", "user", "Also the staging deploy goes through ArgoCD, never kubectl apply by hand."),
    ]],
    "tue": ["2026-03-03T14:00:00+00:00", [
        ("u4", "user", "The nightly job failed with OOMKilled on the report worker."),
        ("a3", "assistant", "The report worker loads every invoice into memory; I switched it to stream rows in "
                            "batches of 500 and raised the pod limit to 1Gi."),
        ("u5", "user", "I prefer ruff over flake8 for linting, please set it up in pre-commit."),
        ("a4", "assistant", "Added ruff with the E, F and I rules to .pre-commit-config.yaml and removed flake8."),
    ]],
    "thu": ["2026-03-05T10:30:00+00:00", [
        ("u6", "user", "We are moving the job queue from Redis to Postgres because Redis lost jobs on restart."),
        ("a5", "assistant", "The queue now uses Postgres with SELECT ... FOR UPDATE SKIP LOCKED; migration 0042 "
                            "creates the jobs table."),
        ("u7", "user", "The nightly job failed again last night, this time a timeout talking to the S3 bucket."),
        ("a6", "assistant", "Set the boto3 read timeout to 60 seconds and added two retries for the S3 upload."),
    ]],
}
ANSWERABLE = [
    ("Why did we pin stripe-python to 7.4.0?", {"signatures"}, {"u2", "a2"}),
    ("How does the staging deploy work?", {"argocd"}, {"u3"}),
    ("What caused the report worker OOM?", {"memory", "invoice"}, {"a3"}),
    ("Which linter do I prefer?", {"ruff"}, {"u5", "a4"}),
    ("Why did we move the job queue to Postgres?", {"restart"}, {"u6"}),
    ("Which migration creates the jobs table?", {"0042"}, {"a5"}),
    ("What is the memory limit of the report worker pod?", {"1gi"}, {"a3"}),
    ("How was the flaky Stripe webhook test fixed?", {"backoff"}, {"a1"}),
    ("What timeout did we set for S3 reads?", {"60"}, {"a6"}),
    ("When did the nightly job fail with OOMKilled?", {"march", "3"}, {"u4"}),
]
UNANSWERABLE = [
    "What is the capital of France?",
    "Which GPU does the render farm use?",
    "What's the weather like tomorrow?",
    "Who is the CEO of the company?",
    "Which Kafka topic holds the audit events?",
    "What did we decide about GraphQL?",
]


def run(mem: Memory) -> dict[str, dict[str, float]]:
    scope = Scope(tenant="coding")
    for session, (when, turns) in SESSIONS.items():
        mem.remember([{"id": i, "role": r, "content": t, "timestamp": when} for i, r, t in turns], scope=scope,
                     session=session, distiller="keyless")
    rows: dict[str, dict[str, float]] = {"answer()": {}, "top search hit": {}}
    for name in rows:
        words = cites = found = 0
        for q, keys, evidence in ANSWERABLE:
            if name == "answer()":
                ans = mem.answer(q, scope=scope, llm="keyless")
                ok, text, cited = ans.found, ans.text, set(ans.citations)
            else:
                hits = mem.search(q, scope=scope, limit=1, reinforce=False)
                ok = bool(hits)
                text, cited = (hits[0].text, set(hits[0].sources) | {hits[0].record.id}) if hits else ("", set())
            found += ok
            words += ok and all(k in text.lower() for k in keys)
            cites += ok and bool(evidence & cited)
        wrong = sum((mem.answer(q, scope=scope, llm="keyless").found if name == "answer()"
                     else bool(mem.search(q, scope=scope, limit=1, reinforce=False))) for q in UNANSWERABLE)
        n = len(ANSWERABLE)
        rows[name] = {"found": found / n, "holds the answer": words / n, "cites evidence": cites / n,
                      "unanswerable answered": wrong / len(UNANSWERABLE)}
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", action="append")
    args = ap.parse_args(argv)
    console = Console(width=140)
    table = Table(title=f"coding-session questions ({len(ANSWERABLE)} answerable, {len(UNANSWERABLE)} not), keyless")
    for col in ("embedder", "method", "found", "holds the answer", "cites evidence", "unanswerable answered"):
        table.add_column(col, justify="right")
    for emb in args.embedder or ["none", "auto"]:
        with tempfile.TemporaryDirectory() as tmp:
            mem = Memory(path=Path(tmp) / "store", embedder=emb, service="off")
            try:
                for name, r in run(mem).items():
                    table.add_row(mem.embedder.name, name, *(f"{v:.2f}" for v in r.values()))
            finally:
                mem.close()
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
