"""Recall that respects the reader's attention (issue 43): what the Claude Code prompt hook injects leaves out
the user's earlier questions and filler turns (they stay in the store, as context of the answers), shows a
distilled memory rather than the message it says the same as, shows nothing twice (recall and digest together),
and never cuts a sentence in the digest. Through ``remember()`` on the embedded store and the hook's own
functions; the launcher end to end in the fencing tests and bench/first_hour.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

from remem import Memory, Scope
from remem.core.recall.fencing import fenced_lines
from remem.core.recall.rendering import clip_sentences
from remem.core.recall.worth import is_filler, is_question, says_nothing
from remem.hooks.digest import build_digest
from remem.hooks.injected import Shown
from remem.hooks.recall import digest_keep, render_chosen, select

SCOPE = Scope(tenant="/home/dev/queue-svc")


def turn(role: str, mid: str, text: str, minute: int) -> dict[str, Any]:
    return {"role": role, "content": text, "id": mid,
            "timestamp": (dt.datetime(2026, 11, 28, 9, tzinfo=dt.timezone.utc)
                          + dt.timedelta(minutes=minute)).isoformat()}


def first_hour(mem: Memory) -> None:
    sessions = [
        [("user", "How do we deploy this service?"),
         ("assistant", "I don't see a deploy config in the repo yet. What do you use?"),
         ("user", "We deploy with fly.io; the app is called queue-svc and deploys go out from main only."),
         ("assistant", "Noted: fly.io, app queue-svc, deploys from main only."),
         ("user", "thanks!"), ("assistant", "You're welcome!")],
        [("user", "Please remember: never use tabs in this repo, always 4 spaces."),
         ("assistant", "Got it."), ("user", "ok"), ("assistant", "👍")],
    ]
    for n, said in enumerate(sessions):
        mem.remember([turn(role, f"s{n}m{i}", text, 10 * n + i) for i, (role, text) in enumerate(said)],
                     scope=SCOPE, session=f"session-{n}")


def injected(mem: Memory, prompt: str, session: str = "new-session") -> list[str]:
    hits = mem.search(prompt, scope=SCOPE, limit=20, reinforce=False)
    return fenced_lines(render_chosen(select(list(hits), Shown(session), 800)))


def test_questions_and_filler_are_words_the_reader_can_skip() -> None:
    assert is_filler("thanks!") and is_filler("You're welcome!") and is_filler("ok 👍") and is_filler("Anytime.")
    assert not is_filler("Got it: 4 spaces, never tabs.") and not is_filler("Noted: we deploy with fly.io.")
    assert is_question("We run Postgres 16. Should the queue use Redis?") and not is_question("Use Postgres.")
    assert says_nothing("Hi! What are we working on today?")
    assert says_nothing("Session summary. The user asked: How do I deploy the queue service?")
    assert not says_nothing("Session summary. The user asked: How? Then: We deploy with fly.io.")


def test_the_hook_injects_no_earlier_question_and_no_filler_but_the_answer(mem: Memory) -> None:
    first_hour(mem)
    lines = injected(mem, "How do I deploy the queue service to fly.io?")
    text = "\n".join(lines)
    assert "fly.io" in text  # the answer arrives
    said = [ln.split("] ", 1)[-1] for ln in lines]
    assert "How do we deploy this service?" not in said  # the earlier question does not (a summary may quote it)
    assert not any("welcome" in s or s.startswith("thanks") for s in said)
    # the question is still in the store: the context of its answer, and listed by the tools
    assert "How do we deploy this service?" in [r.text for r in mem.list(scope=SCOPE, kind="episode", limit=100)]


def test_a_distilled_memory_is_shown_instead_of_the_message_it_says_the_same_as(mem: Memory) -> None:
    first_hour(mem)
    kept = [r for r in mem.list(scope=SCOPE, kind="preference", limit=100) if "tabs" in r.text]
    assert kept, "the keyless distiller keeps the preference"
    for question in ("tabs or spaces for indentation in this repo?", "never use tabs"):
        hits = mem.search(question, scope=SCOPE, limit=10, reinforce=False)
        shown = [r for h in hits for r in h.records if "tabs" in r.text and r.kind != "summary"]
        assert [r.id for r in shown] == [kept[0].id]  # the distilled line, not the raw message beside it
        assert "Please remember" not in mem.context(question, scope=SCOPE).split("Session summary")[0]
        lines = injected(mem, question)
        assert any(kept[0].text in ln for ln in lines) and not any("Please remember" in ln for ln in lines)


def test_a_message_that_says_more_than_its_memory_is_still_shown_whole(mem: Memory) -> None:
    msg = ("That fixed it: closing the pool in the session fixture's teardown stopped the CI hang. "
           "Lesson: always close the connection pool in a fixture teardown.")
    mem.remember([turn("user", "m1", msg, 0), turn("assistant", "m2", "Good to know.", 1)], scope=SCOPE,
                 session="s-lesson")
    lines = injected(mem, "why did CI hang, and what is the lesson about the connection pool?")
    assert any("stopped the CI hang" in ln for ln in lines)  # the reason, next to the lesson


def test_recall_and_digest_of_one_prompt_show_nothing_twice(mem: Memory) -> None:
    first_hour(mem)
    mem.add("User: We deploy with fly.io; the app is called queue-svc and deploys go out from main only.",
            scope=SCOPE, kind="decision")
    prompt = "How do I deploy the queue service to fly.io?"
    shown = Shown("fresh")
    groups = select(list(mem.search(prompt, scope=SCOPE, limit=20, reinforce=False)), shown, 800)
    chosen = [r for g in groups for r in g]
    records = mem.list(scope=SCOPE, kind=("decision", "summary", "lesson", "fact", "preference"), limit=100)
    digest, _ = build_digest(list(records), 500, keep=digest_keep(chosen, shown))
    everything = fenced_lines(render_chosen(groups)) + (fenced_lines(digest) if digest else [])
    assert sum("queue-svc" in ln for ln in everything) == 1, everything


def test_the_digest_never_cuts_a_sentence() -> None:
    long = " ".join(f"Step {i} of the staging rollout went fine and the smoke tests passed." for i in range(30))
    cut = clip_sentences(long, 600)
    assert len(cut) <= 600 and cut.endswith("passed.") and long.startswith(cut)
    one = "Our staging db password is kept in the vault under ops/staging and rotated " + "weekly " * 80 + "now."
    assert clip_sentences(one, 600) == one  # one long sentence: whole (up to twice the limit), never half
    now = dt.datetime.now(dt.timezone.utc)

    class Rec:
        def __init__(self, text: str, kind: str) -> None:
            self.id, self.text, self.kind, self.tags, self.metadata = text[:8], text, kind, (), {}
            self.importance, self.superseded_by, self.source = 5, None, None
            self.created_at = self.occurred_at = self.valid_from = now
            self.event_time = now

    digest, _ = build_digest([Rec(f"Session summary. {long}", "summary"), Rec(one, "decision")], 2000)
    last = next(ln for ln in digest.split("\n") if ln.startswith("Last session"))
    assert last.endswith("passed.") and any(ln.endswith("now.") for ln in fenced_lines(digest))


def test_a_weak_match_and_an_echoing_acknowledgement_are_not_worth_their_tokens(mem: Memory) -> None:
    from remem.core.types import SearchHit

    mem.remember([turn("user", "d1", "We deploy the queue service with fly.io, from the main branch only.", 0),
                  turn("assistant", "d2", "Noted: the queue service deploys with fly.io from main only.", 1)],
                 scope=SCOPE, session="s-deploy")
    episodes = {r.sources[0]: r for r in mem.list(scope=SCOPE, kind="episode", limit=10)}
    plant = mem.add("The office plant in the queue room needs water on Mondays.", scope=SCOPE, kind="note")
    # as a search ranks them: the statement, its acknowledgement, and a weak match far below
    hits = [SearchHit(record=episodes["d1"], score=0.9, relevance=0.9),
            SearchHit(record=episodes["d2"], score=0.8, relevance=0.8),
            SearchHit(record=plant, score=0.2, relevance=0.2)]
    lines = fenced_lines(render_chosen(select(hits, Shown("fresh"), 800)))
    assert len(lines) == 1 and "fly.io, from the main branch" in lines[0]  # no "Noted: <what was said>"
    hits[2] = SearchHit(record=plant, score=0.3, relevance=0.3)  # a third of the best: still worth a line
    assert any("office plant" in ln for ln in fenced_lines(render_chosen(select(hits, Shown("fresh"), 800))))
