"""The keyless (no-LLM) distiller on a labelled set of realistic conversation snippets.

Every positive snippet names the memory kind it must yield and a key phrase that must survive into the stored
text; every negative snippet (greetings, questions, chit-chat, restated instructions, tool noise) must yield no
memory at all. The extractor is deterministic, so these are exact expectations, not a score threshold.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from remem import Memory, Scope
from remem.core.distill.pipeline import Candidate, KeylessDistiller, conversation_turns, to_plain_messages

SCOPE = Scope(tenant="acme", user="dana")


def U(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def A(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool(name: str, args: dict[str, Any], result: str, call_id: str = "c1") -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return [{"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]


# (id, messages, [(kind, phrase that must appear in a memory of that kind), ...])
POSITIVES: list[tuple[str, list[dict[str, Any]], list[tuple[str, str]]]] = [
    # ---------------------------------------------------------------- facts about the user and their world
    ("allergy", [U("I am allergic to peanuts, so never suggest satay.")], [("fact", "allergic to peanuts")]),
    ("allergy-curly-apostrophe", [U("I\u2019m allergic to tree nuts and I can\u2019t stand cilantro.")],
     [("fact", "allergic to tree nuts"), ("preference", "can't stand cilantro")]),
    ("allergy-after-greeting", [U("Hi! I'm allergic to shellfish, keep that in mind for the menu.")],
     [("fact", "allergic to shellfish")]),
    ("diet-in-a-request", [U("Can you plan dinners for next week? I'm vegetarian and my partner is lactose "
                             "intolerant.")], [("fact", "vegetarian"), ("fact", "lactose intolerant")]),
    ("job", [U("I work as a data engineer at Zalando, mostly on Spark jobs.")], [("fact", "data engineer at Zalando")]),
    ("timezone", [U("My timezone is CET, so schedule things before 5pm.")], [("fact", "timezone is CET")]),
    ("team-and-host", [U("We're a team of four and we deploy to Fly.io.")], [("fact", "Fly.io")]),
    ("staging-db", [U("Our staging database is at db-staging.internal:5432.")], [("fact", "db-staging.internal:5432")]),
    ("repo-and-branch", [U("The repo is github.com/acme/billing and the default branch is trunk.")],
     [("fact", "github.com/acme/billing")]),
    ("handle", [U("My GitHub handle is @dkowalski.")], [("fact", "@dkowalski")]),
    ("cluster", [U("FYI the prod cluster is eks-prod-eu1 in eu-west-1.")], [("fact", "eks-prod-eu1")]),
    ("api-url", [U("The API base URL is https://api.acme.dev/v2 for every environment.")],
     [("fact", "https://api.acme.dev/v2")]),
    # ---------------------------------------------------------------- preferences, positive and negative
    ("prefer", [U("I prefer short answers with the code first.")], [("preference", "short answers")]),
    ("never-emoji", [U("Please never use emojis in commit messages.")], [("preference", "emojis in commit messages")]),
    ("dont-suggest", [U("Don't suggest Java for anything, I find it too verbose.")], [("preference", "Java")]),
    ("avoid", [U("Avoid ORMs in this codebase; we write raw SQL with asyncpg.")], [("preference", "Avoid ORMs")]),
    ("cant-stand", [U("I can't stand tabs, use 4 spaces.")], [("preference", "tabs")]),
    ("no-more", [U("No more mocks in the integration tests, they hid a real bug last time.")],
     [("preference", "mocks in the integration tests")]),
    ("stop-doing", [U("Stop adding docstrings to private helpers.")],
     [("preference", "docstrings to private helpers")]),
    ("allergy-and-never", [U("I am allergic to peanuts, so never suggest satay.")], [("fact", "never suggest satay")]),
    # ---------------------------------------------------------------- decisions, by the user or the assistant
    ("decision-label-assistant", [
        U("Should the job queue stay on Redis?"),
        A("Decision: the job queue moves from Redis to Postgres because we already run Postgres and SKIP LOCKED "
          "covers our throughput. I'll write the migration next.")], [("decision", "Redis to Postgres")]),
    ("decision-label-bold", [A("**Decision:** pin numpy<2 until pandas 2.2 is released.")],
     [("decision", "pin numpy<2")]),
    ("decision-label-short", [A("Decision: use Postgres.")], [("decision", "use Postgres")]),
    ("decision-label-multiline", [A("Decision: move the job queue from Redis to Postgres.\nReason: we already run "
                                    "Postgres, and SKIP LOCKED handles our 50 jobs/s.")],
     [("decision", "Redis to Postgres")]),
    ("we-will-go-with", [U("We'll go with Stripe for payments since Adyen needs a sales call.")],
     [("decision", "Stripe for payments")]),
    ("lets-use-instead", [A("Let's use httpx instead of requests so the client can be async.")],
     [("decision", "httpx instead of requests")]),
    ("switched-to", [U("We switched to pnpm last month because npm installs were too slow.")],
     [("decision", "switched to pnpm")]),
    ("went-with", [A("I went with SQLite for the cache because it needs no server.")], [("decision", "SQLite")]),
    ("go-with-option", [U("OK, go with option B: keep the monolith and split out only the billing worker.")],
     [("decision", "keep the monolith")]),
    ("stick-with", [U("Let's stick with Tailwind for the dashboard.")], [("decision", "Tailwind")]),
    ("agreed", [A("We agreed to use UTC timestamps everywhere in the API.")], [("decision", "UTC timestamps")]),
    ("chose-over", [A("Chose Postgres over MySQL because of JSONB support.")], [("decision", "Postgres over MySQL")]),
    ("not-x", [U("Final answer: we'll use Kafka, not RabbitMQ.")], [("decision", "Kafka, not RabbitMQ")]),
    ("replace", [A("We're replacing Celery with Dramatiq because Celery's retries kept duplicating jobs.")],
     [("decision", "Dramatiq")]),
    # ---------------------------------------------------------------- lessons
    ("fix-was", [A("The fix was to set `PYTHONHASHSEED=0` in the CI environment.")], [("lesson", "PYTHONHASHSEED=0")]),
    ("root-cause-label", [A("Root cause: the connection pool was exhausted because each request opened a new "
                            "client.")], [("lesson", "connection pool was exhausted")]),
    ("turned-out", [A("It turned out the webhook secret had a trailing newline.")], [("lesson", "trailing newline")]),
    ("caused-by", [U("FYI the flaky test was caused by a shared tmp dir between workers.")],
     [("lesson", "shared tmp dir")]),
    ("lesson-learned", [A("Lesson learned: always run migrations before deploying the new image.")],
     [("lesson", "run migrations before deploying")]),
    ("problem-was", [A("The problem was that uvicorn's reload watcher ignores files outside the app dir.")],
     [("lesson", "reload watcher")]),
    ("x-fixed-y", [A("Setting `max_connections=20` fixed the timeouts on the worker.")],
     [("lesson", "max_connections=20")]),
    ("lesson-after-error", [*tool("bash", {"command": "pytest -q"}, "E   ImportError: cannot import name 'Self' "
                                  "from 'typing'\n1 failed in 0.3s"),
                            A("The issue is that typing.Self needs Python 3.11; I imported it from "
                              "typing_extensions instead.")], [("lesson", "typing.Self needs Python 3.11")]),
    # ---------------------------------------------------------------- outcomes
    ("deployed", [A("Deployed v2.3.1 to production; all 214 tests pass.")], [("event", "v2.3.1")]),
    ("released", [A("Released v0.9.0 to PyPI with the new CLI.")], [("event", "v0.9.0")]),
    ("latency", [A("After adding the cache, p95 latency dropped from 900 ms to 120 ms.")],
     [("event", "900 ms to 120 ms")]),
    ("memory-usage", [A("Memory usage went from 2 GB to 800 MB after switching to streaming.")],
     [("event", "2 GB to 800 MB")]),
]

# (id, messages): none of these may produce a memory
NEGATIVES: list[tuple[str, list[dict[str, Any]]]] = [
    ("greeting", [U("Hi there!"), A("Hello! How can I help you today?")]),
    ("thanks", [U("Thanks, that's perfect!"), A("You're welcome! Happy coding.")]),
    ("ok-do-it", [U("ok do it"), A("Done.")]),
    ("go-with-it", [U("ok, go with it"), U("Go with the second one.")]),
    ("never-mind", [U("Never mind, I found it.")]),
    ("one-off-donts", [U("Don't push yet."), U("Please don't do that again."), U("Don't change the tests in this PR."),
                       U("Don't worry about the failing lint.")]),
    ("referentless-imperatives", [U("No more questions, just do it."), U("Avoid it."), U("Decision: no.")]),
    ("bare-number", [U("The answer is 42.")]),
    ("chose-wrong", [U("Chose wrong again lol.")]),
    ("generic-question", [U("What's the difference between a list and a tuple in Python?")]),
    ("task-request", [U("Can you help me write a function that reverses a string?")]),
    ("imperative-task", [U("Write a bash script that backs up /var/www every night.")]),
    ("question-with-prefer", [U("How do I prefer one import path over another in mypy?")]),
    ("question-with-decision", [U("Should we use Redis or Postgres for the queue?")]),
    ("assistant-offers", [A("Would you like me to use httpx instead of requests?")]),
    ("assistant-confirms-request", [A("You want me to switch the queue to Postgres, correct?")]),
    ("restated-ill", [A("Sure, I'll refactor the module and add tests.")]),
    ("restated-let-me", [A("Let me look at the file first.")]),
    ("restated-now", [A("I'll now run the test suite to check.")]),
    ("restated-you-asked", [A("You asked me to rename the module and update every import.")]),
    ("code-answer", [A("Here's the updated function:\n```python\ndef rev(s):\n    return s[::-1]\n```")]),
    ("explanation", [A("Great question! Lists are mutable while tuples are immutable, so tuples can be dict "
                       "keys.")]),
    ("assistant-recommends", [A("I'd go with option B."), A("You could go with Postgres or MySQL.")]),
    ("pronoun-fixes", [A("That fixed the issue."), A("This fixed the flaky test in CI."),
                       A("I fixed the typo in README.md.")]),
    ("recommendation-only", [A("Both Postgres and MySQL would work here; it depends on your team's experience.")]),
    ("chit-chat", [U("lol that's funny"), A("Glad you liked it!")]),
    ("weather", [U("Nice weather today, right?")]),
    ("check-in", [U("Just checking in, how's it going?")]),
    ("tool-noise", [*tool("bash", {"command": "pytest -q"}, "....................\n20 passed in 1.21s"),
                    A("Running the tests now.")]),
    ("log-dump", [U("2026-01-01 10:00:01 INFO starting\n2026-01-01 10:00:02 INFO loading config\n"
                    "2026-01-01 10:00:03 WARN slow disk\n2026-01-01 10:00:04 INFO ready")]),
    ("system-prompt", [{"role": "system", "content": "You are a helpful assistant. Never reveal secrets."},
                       U("hey")]),
    ("decision-as-question", [A("Decision needed: do we keep Redis or move to Postgres?")]),
]


def memories(messages: list[dict[str, Any]]) -> list[Candidate]:
    return KeylessDistiller().candidates(conversation_turns(to_plain_messages(messages)))


def handled(messages: list[dict[str, Any]], expected: list[tuple[str, str]]) -> bool:
    got = memories(messages)
    return all(any(c.kind == kind and phrase.lower() in c.text.lower() for c in got) for kind, phrase in expected)


@pytest.mark.parametrize("messages,expected", [pytest.param(m, e, id=i) for i, m, e in POSITIVES])
def test_keyless_extracts_the_labelled_memory(messages: list[dict[str, Any]],
                                              expected: list[tuple[str, str]]) -> None:
    got = [(c.kind, c.text) for c in memories(messages)]
    for kind, phrase in expected:
        assert any(k == kind and phrase.lower() in t.lower() for k, t in got), (kind, phrase, got)


@pytest.mark.parametrize("messages", [pytest.param(m, id=i) for i, m in NEGATIVES])
def test_keyless_stores_nothing_from_noise(messages: list[dict[str, Any]]) -> None:
    assert [(c.kind, c.text) for c in memories(messages)] == []


def test_memories_read_as_standalone_third_person_statements() -> None:
    texts = {c.kind: c.text for c in memories([U("I am allergic to peanuts, so never suggest satay.")])}
    assert texts["fact"].startswith("User is allergic to peanuts")
    [decision] = [c for c in memories([A("**Decision:** pin numpy<2 until pandas 2.2 is released.")])]
    assert decision.text == "Decision: pin numpy<2 until pandas 2.2 is released."  # markdown gone, label kept
    [multi] = memories([A("Decision: move the job queue from Redis to Postgres.\nReason: we already run "
                          "Postgres, and SKIP LOCKED handles our 50 jobs/s.")])
    assert "SKIP LOCKED" in multi.text  # a "Reason:" line right after the decision rides along


def test_labelled_set_is_fast() -> None:
    start = time.perf_counter()
    for _ in range(5):
        for _, msgs, _ in POSITIVES:
            memories(msgs)
        for _, msgs in NEGATIVES:
            memories(msgs)
    assert time.perf_counter() - start < 2.0


def test_reported_captures_store_the_decision_and_the_allergy(mem: Memory) -> None:
    """The two captures other engineers reported: both used to store only the session summary."""
    res = mem.remember([U("I am allergic to peanuts, so never suggest satay.")], scope=SCOPE, session="food")
    assert [r.kind for r in res.added] == ["fact"] and "allergic to peanuts" in res.added[0].text
    mem.remember([U("Should the job queue stay on Redis? It keeps losing jobs on restart."),
                  A("Decision: the job queue moves from Redis to Postgres because we already run Postgres and "
                    "SKIP LOCKED covers our throughput.")], scope=SCOPE, session="queue")
    [decision] = mem.list(scope=SCOPE, kind="decision")  # what the SessionStart digest's "Decisions:" lists
    assert "Redis to Postgres" in decision.text and "because" in decision.text
    hit = mem.search("what does the job queue run on?", scope=SCOPE, kind="decision")[0]
    assert hit.record.id == decision.id
