"""Passages: neighbouring messages of one conversation recalled together come back as one hit, on the real store.

What users rely on: the question, its answer and the reply are shown once, together and in the order they were
said (not as three hits crowding out everything else); a hit says which messages it stands for (``sources``);
a passage never mixes sessions or tenants and never grows past an exchange; tools, the hooks and the LlamaIndex
retriever show the same passages with their provenance.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from remem.core.recall.fencing import OPEN, fenced_lines
from remem import ALL_TENANTS, Memory, Scope, SearchHit
from remem.core.recall.passages import PASSAGE_MAX, join_passages
from remem.core.recall.planner import recall, recall_context
from remem.core.recall.rendering import hit_lines
from remem.core.tooling import format_hits

SCOPE = Scope(tenant="acme", user="dana")
AT = "2024-06-01T09:00:00Z"


def said(role: str, mid: str, text: str, at: str = AT) -> dict[str, Any]:
    return {"role": role, "content": text, "id": mid, "timestamp": at}


def chat() -> list[dict[str, Any]]:
    return [
        said("user", "u1", "My sister Priya is getting married in Lisbon next June."),
        said("assistant", "a1", "Congratulations to her! Are you going to the wedding?"),
        said("user", "u2", "Yes, and I'm giving a speech at the reception, which terrifies me."),
        said("assistant", "a2", "Practice it out loud a few times; one short story works best."),
        said("user", "u3", "I also started learning the cello last month."),
        said("assistant", "a3", "How are the cello lessons going so far?"),
        said("user", "u4", "Slowly: my teacher says my bow hold is far too stiff."),
    ]


def shown_ids(hits: list[Any]) -> list[str]:
    """The messages the hits show, summaries aside (a summary quotes its session in part, on purpose)."""
    return [s for h in hits if h.record.kind != "summary" for s in h.sources]


def test_an_exchange_found_together_is_one_hit_in_the_order_it_was_said(mem: Memory) -> None:
    mem.remember(chat(), scope=SCOPE, session="s1")
    hits = mem.search("Priya's wedding in Lisbon", scope=SCOPE, limit=5)
    top = hits[0]
    assert [r.sources[0] for r in top.passage] == ["u1", "a1", "u2"]  # said order, not rank order
    assert top.sources == ("u1", "a1", "u2") and top.record in top.passage
    assert all(len(h.records) <= PASSAGE_MAX for h in hits)
    ids = shown_ids(hits)
    assert len(ids) == len(set(ids))  # nothing shown twice: no memory distilled from the passage, no repeat
    assert top.as_dict()["sources"] == ["u1", "a1", "u2"] and len(top.as_dict()["passage"]) == 3
    context = mem.context("Priya's wedding in Lisbon", scope=SCOPE, token_budget=300)
    lines = context.splitlines()
    first = next(i for i, line in enumerate(lines) if "Priya is getting married" in line)
    assert lines[first].startswith("- [2024-06-01 · user]")
    assert lines[first + 1].startswith("  [assistant] Congratulations")  # same day: the date is not repeated
    assert lines[first + 2].startswith("  [user] Yes, and I'm giving a speech")


def test_a_named_speaker_is_said_once_per_line_and_a_role_is_kept_without_a_name(mem: Memory) -> None:
    """Two people talking: "Ana: ..." says who, so the line spends no tokens on "user" as well."""
    named = [{**said("user", "n1", "The harbour regatta moved to the second Saturday of July."), "name": "Ana"},
             {**said("user", "n2", "Then the regatta crews need new moorings by early July."), "name": "Ben"}]
    mem.remember(named, scope=SCOPE, session="s-named")
    mem.remember([said("user", "x1", "The regatta trophies are stored in the boathouse loft.")], scope=SCOPE,
                 session="s-plain")
    hits = mem.search("harbour regatta crews moorings trophies", scope=SCOPE, kind="episode", limit=5)
    lines = [line for h in hits for line in hit_lines(h).splitlines()]  # as context() shows them
    ana = next(line for line in lines if "second Saturday" in line)
    ben = next(line for line in lines if "new moorings" in line)
    assert ana.startswith("- [2024-06-01] Ana: The harbour regatta") and ben.startswith("  Ben: Then the")
    assert next(line for line in lines if "boathouse" in line).startswith("- [2024-06-01 · user] The regatta")


def test_passages_never_join_sessions_or_tenants_even_when_message_ids_repeat(mem: Memory) -> None:
    # a caller's own ids need only be unique within a session: "1", "2", "3" in every session and tenant
    def talk(*texts: str) -> list[dict[str, Any]]:
        return [said("user" if i % 2 == 0 else "assistant", str(i + 1), t) for i, t in enumerate(texts)]

    mem.remember(talk("We drive to Tahoe in January for skiing.", "Tahoe in January has great powder.",
                      "He rents skis in Truckee before Tahoe."), scope=SCOPE, session="s1")
    mem.remember(talk("Finance approved the Tahoe ski budget.", "So the Tahoe ski trip budget is final?",
                      "Final: the Tahoe budget covers lift passes."), scope=SCOPE, session="s2")
    other = Scope(tenant="globex", user="dana")
    mem.remember(talk("Our Tahoe offsite is a ski weekend.", "Tahoe ski weekend: who books the cabins?",
                      "I book the Tahoe cabins on Monday."), scope=other, session="s1")
    for scope, sessions in ((SCOPE, {(SCOPE, "s1"), (SCOPE, "s2")}),
                            (ALL_TENANTS, {(SCOPE, "s1"), (SCOPE, "s2"), (other, "s1")})):
        hits = mem.search("Tahoe ski", scope=scope, limit=10, kind="episode")
        found = [{(r.scope, r.metadata["session"]) for r in h.records} for h in hits]
        assert all(len(f) == 1 for f in found)  # one conversation per passage
        assert set().union(*found) == sessions  # and the same ids in another one hide nothing
        assert all(len(h.passage) == 3 for h in hits)


def test_an_answer_joins_its_question_across_tool_calls_and_separate_captures(mem: Memory) -> None:
    question = said("user", "q1", "The e2e suite is flaky again, can you look at the retry tests?")
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "bash", "arguments": json.dumps({"command": "pytest -q tests/e2e"})}}]}
    output = {"role": "tool", "tool_call_id": "c1", "content": "FAILED tests/e2e/test_retry.py - TimeoutError"}
    answer = said("assistant", "a1", "The flaky retry tests were a race in the queue; fixed by awaiting the flush.")
    # as the hooks and the framework adapters capture: each new part of the session on its own
    mem.remember([question, call, output], scope=SCOPE, session="s9")
    mem.remember([answer], scope=SCOPE, session="s9")
    # (the session's summary quotes both and would come first: this asks for what was said)
    top = mem.search("flaky retry tests", scope=SCOPE, limit=3, kind="episode")[0]
    assert [r.sources[0] for r in top.passage] == ["q1", "a1"]


def test_a_passage_is_an_exchange_not_a_transcript(mem: Memory) -> None:
    lines = ["The harbour regatta needs six crews of four rowers.",
             "For the harbour regatta, moorings are booked at the east pier.",
             "Trophies for the harbour regatta come from the engraver on Friday.",
             "The harbour regatta weather looks windy, so the start may move.",
             "Harbour regatta tides: high water at 10:40, races start after.",
             "Two sponsors paid for the harbour regatta banners and shirts.",
             "Harbour regatta tickets sell at the kiosk by the lighthouse.",
             "Spare ropes for the harbour regatta are in the boathouse loft."]
    turns = [said("user" if i % 2 == 0 else "assistant", f"m{i}", line) for i, line in enumerate(lines)]
    mem.remember(turns, scope=SCOPE, session="s1")
    hits = mem.search("harbour regatta", scope=SCOPE, limit=10, kind="episode")
    assert max(len(h.records) for h in hits) == PASSAGE_MAX
    ids = shown_ids(hits)
    assert len(ids) == len(set(ids))


def test_public_recall_plan_over_search_shows_each_message_once(mem: Memory) -> None:
    mem.remember(chat(), scope=SCOPE, session="s1")
    now = dt.datetime(2024, 6, 20, tzinfo=dt.timezone.utc)
    hits = recall(mem, "What did I say about Priya's wedding before June 10?", scope=SCOPE, limit=5, now=now)
    ids = shown_ids(hits)
    assert len(ids) == len(set(ids))
    assert {"u1", "u2"} <= {s for h in hits for s in h.sources}  # the session's summary quotes them


def test_re_planning_over_passages_that_overlap_shows_each_message_once(mem: Memory) -> None:
    # the public plan ranks search() hits again, over the question and over its time window: two rankings
    # whose passages overlap ([m0 m1 m2] and [m2 m4 m6] here) must be joined again, not shown twice
    turns = [("user", 1, "Friday ski boots rental budget."), ("assistant", 3, "Friday rental cabin ski dinner."),
             ("user", 3, "Boots pass budget tahoe dinner."), ("assistant", 5, "Budget car dinner lake lift."),
             ("user", 5, "Ski rental trip tahoe budget."), ("assistant", 5, "Lake rental trip lift dinner."),
             ("user", 5, "Lake car boots pass snow."), ("assistant", 5, "Car budget tahoe lift rental."),
             ("user", 5, "Rental dinner lake trip lift."), ("assistant", 5, "Pass boots car rental trip.")]
    mem.remember([said(role, f"m{i}", text, f"2024-06-{day:02d}T09:00:00Z") for i, (role, day, text)
                  in enumerate(turns)], scope=SCOPE, session="s")
    now = dt.datetime(2024, 6, 30, tzinfo=dt.timezone.utc)
    for limit in (1, 2, 3, 5):
        hits = recall(mem, "tahoe rental on June 2", scope=SCOPE, limit=limit, now=now, kind="episode")
        ids = shown_ids(hits)
        assert len(ids) == len(set(ids)), ids
        context = recall_context(mem, "tahoe rental on June 2", scope=SCOPE, limit=limit, now=now,
                                 kind="episode", token_budget=400)
        lines = [line.split("] ", 1)[1] for line in fenced_lines(context)]
        assert len(lines) == len(set(lines)), context


def test_a_memory_its_passage_shows_is_dropped_and_a_skipped_message_is_marked(mem: Memory) -> None:
    decided = "For the orders DB let's go with Postgres 16 — MySQL had replication issues."
    res = mem.remember([said("user", "u1", decided), said("assistant", "a1", "Okay."),
                        said("user", "u2", "And the Postgres 16 cluster runs in eu-west-1.")],
                       scope=SCOPE, session="s1")
    eps = {e.sources[0]: e for e in res.episodes}
    memory = next(m for m in res.added if "u1" in m.sources)
    # the memory ranks between the two messages it was distilled from / sits next to: it says nothing new
    hits = join_passages([SearchHit(eps["u2"], 0.9), SearchHit(memory, 0.8), SearchHit(eps["u1"], 0.7)])
    assert [[r.id for r in h.records] for h in hits] == [[eps["u1"].id, eps["u2"].id]]
    lines = hit_lines(hits[0]).splitlines()  # "Okay." was said between the two: the reader sees the gap
    assert lines[0].startswith("- [") and lines[1].startswith("  … [user] And the Postgres 16 cluster")


def test_tools_show_every_message_of_a_passage_with_its_id_and_sources(mem: Memory) -> None:
    mem.remember(chat(), scope=SCOPE, session="s1")
    hits = mem.search("Priya's wedding in Lisbon", scope=SCOPE, limit=3)
    lines = fenced_lines(format_hits(hits))
    assert lines[0].startswith("- [2024-06-01 · user] My sister Priya") and "sources: u1" in lines[0]
    assert lines[1].startswith("  [assistant] Congratulations") and f"(id: {hits[0].passage[1].id}; " in lines[1]
    assert "sources: a1" in lines[1] and "sources: u2" in lines[2]


def test_the_prompt_hook_injects_a_passage_without_what_the_session_was_shown(mem: Memory) -> None:
    from remem.hooks.injected import Shown
    from remem.hooks.recall import render_chosen, select

    mem.remember(chat(), scope=SCOPE, session="s1")
    hits = mem.search("Priya's wedding in Lisbon", scope=SCOPE, limit=5, kind="episode")
    fresh = select(hits, Shown("s2"), 400)
    assert [r.sources[0] for r in fresh[0]] == ["u1", "a1", "u2"]
    lines = fenced_lines(render_chosen(fresh))
    assert lines[0].startswith("- [2024-06-01 · user] My sister Priya") and lines[1].startswith("  [assistant]")
    seen = Shown("s2")
    seen.mark([fresh[0][1]])  # the answer was injected earlier in this session: the rest still comes
    assert [r.sources[0] for r in select(hits, seen, 400)[0]] == ["u1", "u2"]


def test_a_memory_added_with_sources_but_no_session_is_not_shown_next_to_its_message(mem: Memory) -> None:
    mem.remember(chat(), scope=SCOPE, session="s1")
    fact = mem.add("Priya weds in Lisbon next June", scope=SCOPE, kind="fact", sources=["u1"])
    hits = mem.search("Priya weds in Lisbon next June", scope=SCOPE, limit=5)
    assert fact.id not in {r.id for h in hits for r in h.records}  # its message, said in s1, is shown instead
    assert "u1" in shown_ids(hits)


def test_a_session_summary_hides_a_message_it_quotes_but_not_the_answer_that_message_brings(mem: Memory) -> None:
    res = mem.remember([said("user", "u1", "Which database should the orders service use?"),
                        said("assistant", "a1", "Postgres 16 for the orders service: MySQL had replication lag, and "
                                                "we need SELECT ... FOR UPDATE SKIP LOCKED for the job queue."),
                        said("user", "u2", "Fine, and the billing service keeps its Redis cache."),
                        said("assistant", "a2", "Noted: billing keeps the Redis cache.")], scope=SCOPE, session="s1")
    eps, summary = {e.sources[0]: e for e in res.episodes}, res.summary
    assert summary is not None and "Which database should the orders service use?" in summary.text
    assert "SKIP LOCKED" not in summary.text  # it quotes what the user said and the outcome, not this answer
    # ranked after the summary, the question alone says nothing new; with its answer it does
    alone = join_passages([SearchHit(summary, 0.9), SearchHit(eps["u1"], 0.5)])
    assert [h.record.kind for h in alone] == ["summary"]
    both = join_passages([SearchHit(summary, 0.9), SearchHit(eps["a1"], 0.6), SearchHit(eps["u1"], 0.5)])
    assert [[r.sources[0] for r in h.records] for h in both[1:]] == [["u1", "a1"]]


def test_a_passage_too_long_for_the_budget_left_shows_its_best_message(mem: Memory) -> None:
    """A tight prompt budget still gets the message that matched, not nothing because its exchange is long."""
    filler = " ".join(f"Step {i}: check the gasket, the hose clamp and the drain valve again." for i in range(12))
    mem.remember([said("user", "q1", "Where did I store the spare boiler key?"),
                  said("assistant", "r1", f"Here is the whole boiler service checklist. {filler}"),
                  said("user", "q2", f"Thanks. And the same for the heat pump: {filler}")], scope=SCOPE, session="s1")
    [hit] = [h for h in mem.search("spare boiler key", scope=SCOPE, limit=3) if h.passage]
    assert hit.record.sources == ("q1",) and len(hit.passage) > 1
    context = mem.context("spare boiler key", scope=SCOPE, token_budget=120, kind="episode")
    assert "spare boiler key" in context and "gasket" not in context
    assert "gasket" in mem.context("spare boiler key", scope=SCOPE, token_budget=900, kind="episode")
    from remem.hooks.injected import Shown
    from remem.hooks.recall import select

    assert select([hit], Shown("s2"), 90) == [(hit.record,)]  # the prompt hook cuts it the same way
    assert select([hit], Shown("s2"), 900) == [hit.passage]
    seen = Shown("s3")
    seen.mark([hit.record])  # its best message was injected earlier: the next one left, if it fits
    assert select([hit], seen, 400) == [hit.passage[1:2]]


def test_different_things_said_alike_are_each_shown(mem: Memory) -> None:
    """Only a repeat is dropped: two chats that number their messages alike (a chat app numbers each chat from
    1), a statement and its negation, and a short line from another conversation whose few words a longer one
    holds ("We moved to Berlin." is not "My sister Anna moved to Berlin")."""
    for chat, texts in (("family", ["Grandma's birthday dinner is on Saturday.", "I'll bring the birthday cake."]),
                        ("work", ["The quarterly report is due on Saturday.", "I'll send the report draft Friday."])):
        mem.add_many([{"text": t, "occurred_at": f"2024-05-0{k + 1}T09:00:00Z",
                       "metadata": {"thread": chat, "message_id": str(k + 1)}} for k, t in enumerate(texts)],
                     scope=SCOPE)
    ctx = mem.context("what is happening on Saturday?", scope=SCOPE)
    assert "Grandma's birthday dinner" in ctx and "quarterly report" in ctx, ctx
    mem.remember([said("user", "a1", "My son is allergic to peanuts.", "2024-03-01T09:00:00Z")], scope=SCOPE,
                 session="march")
    mem.remember([said("user", "b1", "My son is not allergic to peanuts.", "2024-03-31T09:00:00Z")], scope=SCOPE,
                 session="april")
    texts = [r.text for h in mem.search("is my son allergic to peanuts", scope=SCOPE) for r in h.records]
    assert "My son is allergic to peanuts." in texts and "My son is not allergic to peanuts." in texts, texts
    mem.remember([said("user", "c1", "My sister Anna moved to Berlin last year, she loves the city."),
                  said("assistant", "c2", "That's great news for Anna.")], scope=SCOPE, session="anna")
    mem.remember([said("user", "d1", "We moved to Berlin.")], scope=SCOPE, session="us")
    shown = mem.context("did Anna or we move to Berlin", scope=SCOPE)
    assert "We moved to Berlin." in shown and "My sister Anna moved to Berlin" in shown, shown


def test_every_reader_of_recall_keeps_its_token_budget_and_whole_characters(mem: Memory) -> None:
    """context() cuts long CJK or emoji lines at whole characters; a memory tool's answer (lines that also name
    ids and sources) and the Claude Code prompt hook stay within their token budgets, CJK included; one tag
    given as a string filters by that tag."""
    from remem.core.recall.tokens import count_tokens
    from remem.core.tooling import run_memory_search
    from remem.hooks.injected import Shown
    from remem.hooks.recall import RECALL_HEADER, render_chosen, select

    zh = "我们决定把订单数据库迁移到 PostgreSQL 16 ，因为 MySQL 的复制一直有问题，周五晚上上线。"
    for i in range(12):
        mem.remember([said("user", f"z{i}", zh * 6 + f" 批次 {i} 🚀🎉"), said("assistant", f"y{i}", "好的 " + zh)],
                     scope=SCOPE, session=f"zh{i}")
    ctx = mem.context("PostgreSQL MySQL", scope=SCOPE, token_budget=400)
    assert "\ufffd" not in ctx and 0 < count_tokens(ctx) <= 400
    for budget in (300, 600):
        answer = run_memory_search(mem, "PostgreSQL MySQL", SCOPE, limit=20, token_budget=budget)
        assert "sources:" in answer and count_tokens(answer) <= budget, budget
    hits = mem.search("PostgreSQL MySQL", scope=SCOPE, limit=20)
    injected = render_chosen(select(hits, Shown("another-session"), 800))
    assert injected.startswith(f"{OPEN}\n{RECALL_HEADER}") and count_tokens(injected) <= 800
    for i in range(12):  # what a coding agent's memories hold: hashes, uuids, numbers
        ids = " ".join(f"{(i * 7919 + k) * 2654435761 % 16**12:012x}" for k in range(12))
        mem.remember([said("user", f"h{i}", f"release build {i}: commits {ids} took {i * 937 + 4411} ms")],
                     scope=SCOPE, session=f"hx{i}")
    hits = mem.search("release build commits", scope=SCOPE, limit=20)
    assert count_tokens(render_chosen(select(hits, Shown("another-session"), 400))) <= 400
    mem.add("Alice prefers green tea", scope=SCOPE, tags=["drinks"])
    assert [h.text for h in mem.search("tea", scope=SCOPE, tags="drinks")] == ["Alice prefers green tea"]
