"""LoCoMo through the path users take: conversations fed session by session to ``remember()``.

Each conversation goes into its own tenant of one store, one ``remember()`` call per session: every turn is a
message (both speakers ``role: user`` with their ``name``, or ``--roles user-assistant``: the first speaker is
the user, the second the assistant), with its ``dia_id`` as the message ``id`` and the session's date as its
``timestamp``. Every question of categories 1-4 is then answered from ``search()`` and ``context()``:

* evidence recall@5/@10 through ``sources``: each hit stands for at most 3 of the message ids it came from (so
  a summary cannot claim a whole session). ``any``: at least one evidence turn among the top k hits; ``all``:
  every evidence turn; ``frac``: the share of evidence turns (what bench/locomo.py calls R@k).
* records in the top 10: a hit that is a passage (neighbouring messages found together, see
  :mod:`remem.core.recall.passages`) shows several messages, so ten hits show more than ten; at the same number
  of messages, the passages' evidence recall is that of the single messages ranked alone (see the README).
* answer-token recall of ``context()`` at 800 tokens: the share of the gold answer's content words found in the
  recalled text (``full``: questions whose every answer word is there). ISO dates in the text count as their
  words too ("2023-05-08" also reads "8 May 2023"), since that is how a reader takes them.

Each store is measured through the public ``search()``/``context()`` (which run the time-aware,
de-duplicating recall plan of :mod:`remem.core.recall.planner`).
In the same run, for comparison: the same turns ``add()``ed one by one (each dated with ``occurred_at``, with
its id in ``sources``, no ``context=``; turns of one session are read as a thread, see
:mod:`remem.core.store.threads`), and rank-bm25 over the dated turns (its context: the top turns
rendered the same way until the budget is full).

    python -m remem.bench.locomo_remember [--embedder none] [--limit-convs N] [--methods remember,add,bm25]
                                          [--singles] [--capture N] [--older]

``--capture N`` feeds each session N messages per ``remember()`` call, each call holding only the new ones, as
the Claude Code hooks (a prompt and its reply) and the framework adapters capture a live conversation.
``--older`` stores the episodes as a remem before passages did (no neighbours, no context after), measures,
runs ``reembed`` (which completes them) and measures again: what an existing store gets from the migration.
``--singles`` adds the like-for-like check of passages: each ``remember()`` search's own ranking before its
passages were joined, read through as many single hits as its ten passage hits showed messages.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope
from remem.core.recall.rendering import HEADER
from remem.core.recall.timeframe import parse_timeframe
from remem.core.recall.tokens import count_tokens

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
SOURCES_PER_HIT = 3
BUDGET = 800
_WORD = re.compile(r"[a-z0-9]+")
_ISO = re.compile(r"\b(\d{4})-(\d\d)-(\d\d)\b")
STOPWORDS = frozenset("""a an the and or but if of to in on at by for with from as is are was were be been being it
its this that these those i me my we our you your he she they them their his her him s t do does did not no so
very just also than too can will would should could has have had about into over under up out""".split())


def session_date(text: str) -> dt.datetime:
    return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.timezone.utc)


def sessions_of(conv: dict[str, Any]) -> list[tuple[int, dt.datetime, list[dict[str, Any]]]]:
    c = conv["conversation"]
    out = []
    n = 1
    while f"session_{n}" in c:
        out.append((n, session_date(c[f"session_{n}_date_time"]), list(c[f"session_{n}"])))
        n += 1
    return out


def turn_text(t: dict[str, Any]) -> str:
    text = t["text"]
    if t.get("blip_caption"):
        text += f" [shared an image: {t['blip_caption']}]"
    return text


def questions_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    valid = {t["dia_id"] for _, _, turns in sessions_of(conv) for t in turns}
    qs = []
    for q in conv["qa"]:
        if q.get("category") not in CATEGORIES:
            continue
        ev = {e.strip() for ev in q.get("evidence", []) for e in re.split(r"[;,]", ev) if e.strip() in valid}
        if ev:
            qs.append({"question": q["question"], "evidence": ev, "category": q["category"],
                       "answer": str(q.get("answer", ""))})
    return qs


# ---------------------------------------------------------------------------------------------- metrics
def content_tokens(text: str, *, dates: bool = False) -> set[str]:
    low = text.lower()
    words = set(_WORD.findall(low))
    if dates:  # an ISO date is read as its day, month name and year
        for y, m, d in _ISO.findall(low):
            try:
                when = dt.date(int(y), int(m), int(d))
            except ValueError:
                continue
            words.update({str(when.day), when.strftime("%B").lower(), y, when.strftime("%A").lower()})
    return {w for w in words if w not in STOPWORDS}


def answer_recall(answer: str, context: str) -> tuple[float, bool]:
    gold = content_tokens(answer)
    if not gold:
        return 1.0, True
    have = content_tokens(context, dates=True)
    share = len(gold & have) / len(gold)
    return share, share == 1.0


def evidence_scores(ranked: Sequence[Sequence[str]], evidence: set[str]) -> dict[str, float]:
    """``ranked``: for each hit, the message ids it stands for (at most ``SOURCES_PER_HIT`` count)."""
    out: dict[str, float] = {}
    for k in (5, 10):
        got = {s for srcs in ranked[:k] for s in list(srcs)[:SOURCES_PER_HIT]}
        share = len(evidence & got) / len(evidence)
        out[f"frac{k}"], out[f"any{k}"], out[f"all{k}"] = share, float(share > 0), float(share == 1.0)
    return out


class Scores:
    def __init__(self) -> None:
        self.rows: dict[int, list[dict[str, float]]] = defaultdict(list)

    def add(self, cat: int, row: dict[str, float]) -> None:
        self.rows[cat].append(row)

    def mean(self, metric: str, cat: int | None = None) -> float:
        rows = self.rows[cat] if cat is not None else [r for v in self.rows.values() for r in v]
        vals = [r[metric] for r in rows if metric in r]
        return statistics.fmean(vals) if vals else float("nan")

    @property
    def n(self) -> int:
        return sum(len(v) for v in self.rows.values())


# ---------------------------------------------------------------------------------------------- methods
def messages_of(turns: list[dict[str, Any]], when: dt.datetime, speakers: tuple[str, str],
                roles: str) -> list[dict[str, Any]]:
    out = []
    for t in turns:
        role = "user" if roles == "names" or t["speaker"] == speakers[0] else "assistant"
        out.append({"role": role, "name": t["speaker"], "content": turn_text(t), "id": t["dia_id"],
                    "timestamp": when.isoformat()})
    return out


def load_remember(mem: Memory, convs: list[dict[str, Any]], roles: str, log: Callable[[str], None],
                  capture: int = 0) -> dict[str, Any]:
    """One ``remember()`` per session; with ``capture``, one per ``capture`` new messages of the session, as
    the hooks and framework adapters send a conversation (each call holds only what is new)."""
    started = time.perf_counter()
    kinds: Counter[str] = Counter()
    for ci, conv in enumerate(convs):
        scope = Scope(tenant=f"locomo-{ci}")
        speakers = (conv["conversation"]["speaker_a"], conv["conversation"]["speaker_b"])
        for n, when, turns in sessions_of(conv):
            messages = messages_of(turns, when, speakers, roles)
            step = capture or len(messages)
            for start in range(0, len(messages), step):
                mem.remember(messages[start:start + step], scope=scope, session=f"session-{n}",
                             distiller="keyless")
        kinds.update(mem.stats(scope=scope).by_kind)
        log(f"remembered conversation {ci + 1}/{len(convs)}")
    mem.optimize()
    return {"index_s": time.perf_counter() - started, "kinds": dict(kinds)}


def load_add(mem: Memory, convs: list[dict[str, Any]], log: Callable[[str], None]) -> dict[str, Any]:
    started = time.perf_counter()
    n_items = 0
    for ci, conv in enumerate(convs):
        items = [{"text": f"{t['speaker']}: {turn_text(t)}", "occurred_at": when, "sources": [t["dia_id"]]}
                 for _, when, turns in sessions_of(conv) for t in turns]
        mem.add_many(items, scope=Scope(tenant=f"locomo-{ci}"))
        n_items += len(items)
        log(f"added conversation {ci + 1}/{len(convs)} ({len(items)} turns)")
    mem.optimize()
    return {"index_s": time.perf_counter() - started, "kinds": {"note": n_items}}


def evaluate(mem: Memory, convs: list[dict[str, Any]], context_limit: int | None,
             singles: Scores | None = None) -> tuple[Scores, dict[str, Any]]:
    """Every question through the public ``search`` + ``context``, as a user's agent asks it. With ``singles``,
    also the like-for-like check of passages: the same search's ranking before its passages were joined,
    read through as many single hits as the passages showed messages (filled into ``singles``)."""
    scores = Scores()
    lat: list[float] = []
    ctx_tokens: list[int] = []
    shown: list[int] = []
    for ci, conv in enumerate(convs):
        scope = Scope(tenant=f"locomo-{ci}")
        now = sessions_of(conv)[-1][1] + dt.timedelta(days=1)
        kw: dict[str, Any] = {"limit": context_limit} if context_limit else {}
        for q in questions_of(conv):
            with ranking_before_passages() as before:
                t0 = time.perf_counter()
                hits = mem.search(q["question"], scope=scope, limit=10, reinforce=False)
                lat.append(time.perf_counter() - t0)
            row = evidence_scores([h.sources for h in hits], q["evidence"])
            row["shown"] = sum(len(h.records) for h in hits)  # a passage shows several messages
            shown.append(row["shown"])
            if singles is not None:
                got = {s for h in before[:int(row["shown"])] for s in list(h.sources)[:SOURCES_PER_HIT]}
                share = len(q["evidence"] & got) / len(q["evidence"])
                singles.add(q["category"], {"any10": float(share > 0), "all10": float(share == 1.0),
                                            "frac10": share})
            if parse_timeframe(q["question"], now) is not None:
                row["t_any10"] = row["any10"]
            ctx = mem.context(q["question"], scope=scope, token_budget=BUDGET, reinforce=False, **kw)
            row["ans"], full = answer_recall(q["answer"], ctx)
            row["full"] = float(full)
            ctx_tokens.append(count_tokens(ctx))
            scores.add(q["category"], row)
    lat.sort()
    return scores, {"search_p50_ms": 1000 * lat[len(lat) // 2], "search_p95_ms": 1000 * lat[int(len(lat) * .95)],
                    "context_tokens_median": statistics.median(ctx_tokens), "records_at_10": statistics.fmean(shown)}


@contextlib.contextmanager
def as_an_older_remem() -> Iterator[None]:
    """Episodes stored inside the block as a remem before passages stored them: no ``follows``, no
    ``followed_by``, and only the messages before in their context (``--older``: what ``reembed`` restores)."""
    from remem.core.distill import episodes

    items, after = episodes.episode_items, episodes.CONTEXT_AFTER

    def older(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        out = items(*args, **kwargs)
        for it in out:
            it["metadata"] = {k: v for k, v in it["metadata"].items() if k not in ("follows", "followed_by")}
        return out

    episodes.episode_items, episodes.CONTEXT_AFTER = older, 0  # type: ignore[assignment]
    try:
        yield
    finally:
        episodes.episode_items, episodes.CONTEXT_AFTER = items, after  # type: ignore[assignment]


@contextlib.contextmanager
def ranking_before_passages() -> Iterator[list[Any]]:
    """The hits the recall plan ranked, before it joined them into passages (the list is filled by the search
    run inside the block; the search's own result is unchanged)."""
    from remem.core.recall import planner

    seen: list[Any] = []
    join = planner.join_passages

    def record(hits: Sequence[Any]) -> list[Any]:
        seen[:] = list(hits)
        return join(hits)

    planner.join_passages = record  # type: ignore[assignment]
    try:
        yield seen
    finally:
        planner.join_passages = join  # type: ignore[assignment]


def run_bm25(convs: list[dict[str, Any]]) -> tuple[Scores, dict[str, Any]]:
    from rank_bm25 import BM25Okapi

    scores = Scores()
    for conv in convs:
        docs = [(t["dia_id"], when, f"{t['speaker']}: {turn_text(t)}") for _, when, turns in sessions_of(conv)
                for t in turns]
        bm = BM25Okapi([_WORD.findall(f"{text} {when:%d %B %Y}".lower()) for _, when, text in docs])
        for q in questions_of(conv):
            s = bm.get_scores(_WORD.findall(q["question"].lower()))
            order = sorted(range(len(docs)), key=lambda i: -s[i])
            row = evidence_scores([[docs[i][0]] for i in order[:10]], q["evidence"])
            if parse_timeframe(q["question"], sessions_of(conv)[-1][1] + dt.timedelta(days=1)) is not None:
                row["t_any10"] = row["any10"]
            lines, used = [HEADER], count_tokens(HEADER) + 1
            for i in order[:40]:
                line = f"- [{docs[i][1]:%Y-%m-%d}] {docs[i][2]}"
                cost = count_tokens(line) + 1
                if used + cost > BUDGET:
                    break
                lines.append(line)
                used += cost
            row["ans"], full = answer_recall(q["answer"], "\n".join(lines))
            row["full"] = float(full)
            scores.add(q["category"], row)
    return scores, {}


# ---------------------------------------------------------------------------------------------- report
def tables(rows: Iterable[tuple[str, Scores]]) -> list[Table]:
    rows = list(rows)
    ev = Table(title="LoCoMo evidence recall through sources (categories 1-4; a hit counts for <= 3 sources)")
    ev.add_column("method")
    for col in ("any@5", "all@5", "frac@5", "any@10", "all@10", "frac@10",
                *[f"any@10 {c}" for c in CATEGORIES.values()], "any@10 naming a time"):
        ev.add_column(col, justify="right")
    for name, s in rows:
        ev.add_row(name, *[f"{s.mean(m):.3f}" for m in ("any5", "all5", "frac5", "any10", "all10", "frac10")],
                   *[f"{s.mean('any10', c):.3f}" for c in CATEGORIES], f"{s.mean('t_any10'):.3f}")
    ans = Table(title=f"LoCoMo answer-token recall of context() at {BUDGET} tokens")
    ans.add_column("method")
    for col in ("answer tokens", "fully contained", *[f"ans {c}" for c in CATEGORIES.values()]):
        ans.add_column(col, justify="right")
    for name, s in rows:
        if math.isnan(s.mean("ans")):  # an evidence-only row (the single-message check)
            continue
        ans.add_row(name, f"{s.mean('ans'):.3f}", f"{s.mean('full'):.3f}",
                    *[f"{s.mean('ans', c):.3f}" for c in CATEGORIES])
    return [ev, ans]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--limit-convs", type=int, default=None)
    ap.add_argument("--methods", default="remember,add,bm25")
    ap.add_argument("--roles", choices=("names", "user-assistant"), default="names")
    ap.add_argument("--context-limit", type=int, default=None, help="limit= passed to context() (default: its own)")
    ap.add_argument("--singles", action="store_true",
                    help="also read remember()'s store through single hits, as many as its passages showed")
    ap.add_argument("--capture", type=int, default=0, metavar="N",
                    help="feed each session to remember() N new messages at a time, as the hooks do (default: whole)")
    ap.add_argument("--older", action="store_true",
                    help="store remember()'s episodes as an older remem did, then measure again after reembed")
    ap.add_argument("--entity-variants", nargs="*", default=[], metavar="NAME={settings}",
                    help="remember(): also measure the same store with other entity settings (core/entities), "
                    'e.g. \'off={"entity_recall": false}\' \'no hop={"hop": 0}\' as same-run baselines')
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    console = Console(width=170)
    convs = json.loads(args.data.read_text("utf-8"))[: args.limit_convs]
    methods = args.methods.split(",")
    rows: list[tuple[str, Scores]] = []
    report: dict[str, Any] = {}
    for method in methods:
        if method == "bm25":
            results = [("rank-bm25 (BM25Okapi over dated turns)", *run_bm25(convs))]
        else:
            with tempfile.TemporaryDirectory() as tmp:
                mem = Memory(path=Path(tmp) / "store", embedder=args.embedder, service="off")
                with as_an_older_remem() if args.older else contextlib.nullcontext():
                    load = (load_remember(mem, convs, args.roles, console.log, args.capture) if method == "remember"
                            else load_add(mem, convs, console.log))
                emb = mem.embedder.name
                fed = f"{args.capture} messages at a time" if args.capture else "by session"
                label = (f"remember() {fed} ({emb}, roles={args.roles})" if method == "remember"
                         else f"add() each dated turn ({emb})")
                singles = Scores() if method == "remember" and args.singles else None
                s, extra = evaluate(mem, convs, args.context_limit, singles)
                if args.older and method == "remember":
                    label = f"{label}, stored by an older remem"
                results = [(label, s, {**extra, **load})]
                if args.older and method == "remember":
                    started = time.perf_counter()
                    mem.reembed()
                    s2, extra2 = evaluate(mem, convs, args.context_limit)
                    results.append((f"{label}, after reembed", s2,
                                    {**extra2, "index_s": time.perf_counter() - started, "kinds": load["kinds"]}))
                if args.entity_variants and method == "remember":
                    variants = [(v.split("=")[0], json.loads(v.split("=", 1)[1])) for v in args.entity_variants]
                    for variant, changes in variants:
                        from remem.core.entities import hooks as entity_hooks

                        hop = entity_hooks.HOP_WEIGHT
                        if "hop" in changes:
                            entity_hooks.HOP_WEIGHT = changes.pop("hop")
                        try:
                            sv, extra_v = evaluate(mem.with_settings(**changes), convs, args.context_limit)
                        finally:
                            entity_hooks.HOP_WEIGHT = hop
                        results.append((f"{label}, {variant}", sv, extra_v))
                if singles is not None:
                    results.append((f"{label}, the same ranking as single hits, as many as its 10 hits showed",
                                    singles, {}))
                mem.close()
        for name, s, extra in results:
            rows.append((name, s))
            report[name] = {"n_questions": s.n, **{m: s.mean(m) for m in ("any5", "all5", "frac5", "any10", "all10",
                                                                           "frac10", "ans", "full", "t_any10")},
                            **{f"any10_{v}": s.mean("any10", k) for k, v in CATEGORIES.items()},
                            **{f"ans_{v}": s.mean("ans", k) for k, v in CATEGORIES.items()},
                            **{f"all10_{v}": s.mean("all10", k) for k, v in CATEGORIES.items()}, **extra}
    for t in tables(rows):
        console.print(t)
    cost = Table(title="cost")
    for col in ("method", "index s", "records", "search p50 ms", "search p95 ms", "context tokens (median)",
                "records in the top 10 (mean)"):
        cost.add_column(col, justify="right")
    for name, r in report.items():
        if "index_s" in r:
            cost.add_row(name, f"{r['index_s']:.1f}", ", ".join(f"{k} {v}" for k, v in sorted(r["kinds"].items())),
                         f"{r['search_p50_ms']:.2f}", f"{r['search_p95_ms']:.2f}", f"{r['context_tokens_median']:.0f}",
                         f"{r['records_at_10']:.1f}")
    console.print(cost)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
