"""The keyless (no-LLM) distiller on a labelled set of coding-session and personal-chat snippets.

Positive snippets name the memories they must yield (kind and key phrases that must survive into one memory:
a cause with its fix, a decision with its reason); negative ones (outcome reports, context-free fragments,
narration, questions, tool noise) must yield none. Precision and recall are asserted by kind.
"""

from __future__ import annotations

from typing import Any

import pytest

from remem import Memory, Scope
from remem.bench.keyless_labelled import evaluate, load_cases
from remem.core.distill.pipeline import Candidate, KeylessDistiller, conversation_turns, to_plain_messages

SCOPE = Scope(tenant="acme", user="dana")


def U(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def A(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def memories(messages: list[dict[str, Any]]) -> list[Candidate]:
    return KeylessDistiller().candidates(conversation_turns(to_plain_messages(messages)))


@pytest.fixture(scope="module")
def report() -> Any:
    """The labelled set scored once per module run, when a test asks for it (not at import: every test
    collection, on each xdist worker, would pay for it)."""
    return evaluate(load_cases())


@pytest.mark.parametrize("kind", ["fact", "preference", "decision", "lesson", "event"])
def test_labelled_set_precision_and_recall_by_kind(kind: str, report: Any) -> None:
    """1,153 labelled snippets (tests/fixtures/keyless_labelled.jsonl): each kind is found and kept clean.

    Each part was scored before the rules written for it: fresh-* (coding) first scored 0.65 recall / 0.87
    precision; chat-* 0.46 precision, chat-fresh-* 0.90. fresh4-* and fresh5-* were written by someone who never
    saw the rules: 29/40 and 22/40 snippets fully right, and fresh5-* scored 27/40 with the rules written for
    fresh4-*; review3-* (43) holds what a review of those rules found them keeping or dropping. Events need
    0.85: two of the 16 are plans ("we're moving to Edinburgh in September", "it's settled: dinner at Dishoom")
    that the distiller keeps as decisions, and the two labellers themselves called the same kind of sentence an
    event and a fact. fresh6-* (71 coding snippets from someone who never saw the rules) scored recall 0.526 /
    precision 0.564 (39/71 fully right) on the rules before this round, 0.596 / 0.636 (42/71) with its lesson
    rules, and 0.737 / 0.729 (50/71) with the rules then written for it (reasons said in clauses, corrections
    in one message, dated work events): what the older parts score is no promise for unseen text. fresh7-* (60,
    written blind the same way) scored recall 0.458 / precision 0.632 (33/60) before its rules, 54/60 after;
    fresh8-* (60, blind) 0.500 / 0.727 (35/60) before them and 0.500 / 0.649 (36/60) with them, 56/60 after its own;
    fresh9-* (60, blind) 0.347 / 0.696 (28/60) two rounds of rules before, 0.469 / 0.733 (34/60) after them, 55/60
    after its own; fresh10-* (60, blind) 0.404 / 0.619 (27/60), 0.481 / 0.625 (31/60) after the fresh9-* rules,
    48/60 after its own; fresh11-* (60, blind) 0.340 / 0.500 (23/60) three rounds of rules before, 0.500 / 0.614
    (31/60) before its own, 57/60 after; fresh12-* (60, blind) 0.333 / 0.581 (26/60), 0.373 / 0.606 (28/60)
    after the fresh11-* rules, 57/60 after its own; fresh13-* (60, blind) 21/60 and 24/60 before its rules, 54/60
    after (whole messages kept when no pattern reads them); fresh14-* (60, blind) 22/60, then 23/60 (recall
    0.259 -> 0.389, precision 0.655 -> 0.525) after the fresh13-* rules, 46/60 after its own; fresh15-* (60,
    blind) 26/60 at the start of that round, 26/60 after the fresh13-* rules, 32/60 (recall 0.436 -> 0.564,
    precision 0.618 -> 0.600) after the fresh14-* rules, 53/60 after its own.
    ``python -m remem.bench.keyless_labelled --show-errors`` lists what is still missed."""
    s = report.by_kind[kind]
    least = 0.85 if kind == "event" else 0.9
    assert s.expected >= 9 and s.recall >= least and s.precision >= 0.9, (kind, s, report.errors)


def test_labelled_set_noise_yields_no_memory(report: Any) -> None:
    assert report.negatives >= 100 and report.clean_negatives >= 0.97 * report.negatives, report.errors
    # 0.95 before fresh6-* (50 of its 71 fully right) joined, 0.94 before fresh10-* (48 of its 60)
    assert report.exact >= 0.93 * report.snippets


def test_what_friends_say_to_each_other_about_the_moment_is_not_a_memory() -> None:
    """Encouragement, compliments and sympathy were a third of what LoCoMo chats distilled ("Keep going and
    don't give up!" as a decision); the facts said around them are still kept."""
    def said(name: str, text: str) -> dict[str, Any]:
        return {"role": "user", "name": name, "content": text}

    got = memories([said("Ava", "I failed my driving test again."),
                    said("Ben", "Keep going and don't give up, you'll nail it next time!"),
                    said("Ava", "Love how you always believe in me."),
                    said("Ben", "That must have been so frustrating for you."),
                    said("Ava", "I love it!"),
                    said("Ben", "We adopted a greyhound named Pixel on Saturday.")])
    assert [c.kind for c in got] == ["fact"] and "greyhound named Pixel" in got[0].text


def test_a_kind_word_to_the_listener_does_not_cost_the_memory_said_with_it() -> None:
    """A friendly opening clause is dropped, not the lesson after it; instructions phrased with "you" stay."""
    [lesson] = memories([A("Glad you caught that: the bug was that the cache key ignored the tenant id.")])
    assert lesson.kind == "lesson" and lesson.text == "The bug was that the cache key ignored the tenant id."
    [rule] = memories([U("You are never allowed to force-push to main.")])
    assert rule.kind == "preference" and "force-push to main" in rule.text
    [joined] = memories([U("The flaky test was a race in the retry queue. Fixed it by awaiting the flush.")])
    assert joined.kind == "lesson" and joined.text.count("User:") == 1 and "awaiting the flush" in joined.text


def test_a_fragment_that_leans_on_a_photo_or_the_moment_is_not_a_memory() -> None:
    """Stored alone, "I'm a huge fan of this genre!" or "Got to go now" means nothing later (44 of 100 LoCoMo
    memories sampled were such fragments); said to an assistant, "Let's ..." and "Keep ..." stay instructions."""
    def said(name: str, text: str) -> dict[str, Any]:
        return {"role": "user", "name": name, "content": text}

    got = memories([said("Ava", "Look at this cover!"), said("Ben", "I'm a huge fan of this genre!"),
                    said("Ava", "It's right by the lake we used to swim in."),
                    said("Ben", "Yeah Ava, let's keep cheering each other on!"),
                    said("Ava", "Got to go now, I have a lot of work to do!"),
                    said("Ben", "I'm waiting to hear how the audition turns out."),
                    said("Ava", "Yesterday my partner and I got back from a week of hiking in the Dolomites.")])
    assert [c.text for c in got] == ["Ava: Yesterday my partner and I got back from a week of hiking in the "
                                     "Dolomites."]
    [decision] = memories([U("Let's keep the orders table in Postgres 16, MySQL kept breaking replication.")])
    assert decision.kind == "decision" and "Postgres 16" in decision.text
    [rule] = memories([U("Keep your answers short, I read them on my phone.")])
    assert rule.kind == "preference"


@pytest.mark.parametrize("said,kind,kept", [
    ("for the settings page: jotai, not mobx. three atoms of state, a store library is overkill", "decision",
     "jotai, not mobx"),
    ("the nightly import got OOM-killed every night: `load_rows()` slurped the whole csv into a list. made it a "
     "generator over csv.reader, rss stays under 200mb", "lesson", "made it a generator"),
    ("heads up: only marek can rotate the `prod-ro` database credentials, everything goes through his vault role",
     "fact", "only marek can rotate"),
    ("always hand me complete functions, not fragments, the partial ones break my paste", "preference",
     "complete functions, not fragments"),
])
def test_a_message_no_pattern_reads_is_kept_whole_when_it_says_one_lasting_thing(said: str, kind: str,
                                                                                   kept: str) -> None:
    """A blind set showed how often a lasting thing is said in words no pattern knows (24 of 60 snippets fully
    right); the whole message is then one memory, its kind read from loose cues."""
    [got] = memories([U(said)])
    assert got.kind == kind and kept in got.text


@pytest.mark.parametrize("said", [
    "wonder if the timeouts are the pgbouncer pool size (20)... haven't checked the metrics yet",
    "the export job dies halfway with 502s from `s3.upload_part`",
    "`make lint` is green locally now, pushing",
    "can you rewrite `parse_args()` with click, keep the flags the same",
])
def test_a_hunch_a_report_a_status_or_a_request_is_not_kept_whole(said: str) -> None:
    assert memories([U(said)]) == []


def test_an_option_picked_by_number_or_by_name_is_a_decision_in_the_options_words() -> None:
    offer = A("Two ways to get the job off cron:\n1. keep cron but add a lock file so runs cannot overlap\n"
              "2. move it to a Celery beat task with a Redis lock, so retries and alerts come for free")
    [by_number] = memories([offer, U("2, we already run celery for everything else")])
    assert by_number.kind == "decision" and "Celery beat task" in by_number.text \
        and "already run celery" in by_number.text
    [by_name] = memories([A("You could keep the in-memory LRU or move to Redis for the session cache."),
                          U("redis. three web pods each with their own LRU is why logins bounce")])
    assert by_name.kind == "decision" and "move to Redis" in by_name.text and "logins bounce" in by_name.text


def test_a_proposal_the_user_accepts_is_one_decision_with_its_reason() -> None:
    [decision] = memories([A("I'd move the session store from the in-process dict to Redis: three web pods each keep "
                             "their own dict, which is why logins bounce between pods."),
                           U("agreed, do that. the admin app should use the same redis")])
    assert decision.kind == "decision" and "to Redis" in decision.text and "logins bounce" in decision.text \
        and "admin app" in decision.text


def test_a_reply_naming_one_side_of_alternatives_asked_before_is_a_decision_with_its_reason() -> None:
    [asked] = memories([U("Set up the new ledger service. Should migrations be Flyway or Liquibase?"),
                        A("Both work with Spring Boot 3.2; which one do you want?"),
                        U("Flyway, with plain SQL files. The DBAs refuse to read Liquibase XML changelogs.")])
    assert asked.kind == "decision" and "plain SQL" in asked.text and "Liquibase XML" in asked.text
    [listed] = memories([U("need a queue for order webhooks. options i see: RabbitMQ, Redis Streams, SQS"),
                         A("SQS FIFO gives ordering per message group; RabbitMQ needs a broker you run."),
                         U("SQS FIFO, group id = merchant_id. everything else is on AWS already")])
    assert listed.kind == "decision" and "on AWS" in listed.text and "RabbitMQ" in listed.text  # the side not taken


@pytest.mark.parametrize("offer,reply", [
    ("Should I remove the `Procfile` from the repo, or keep it until the Heroku apps are deleted?", "keep it till then"),
    ("Do you want Postgres or MySQL for the orders DB?", "Postgres? what does the rest of the stack use"),
    ("Are you on Linux or macOS? The linker flags differ.", "macOS, Sonoma 14.4 on an M2 Pro."),  # what the user has
    ("Should we do REST or GraphQL for v2?", "GraphQL is overkill, we have two consumers."),  # a verdict on it
    ("Should the webhook fan-out use Kafka or SQS?", "Kafka, maybe, but I need to ask the platform team first."),
    ("The client exposes these options: timeout, retries, pool_size.", "timeout is 30s in prod, retries 3."),
])
def test_a_reply_that_names_no_offered_thing_is_no_choice(offer: str, reply: str) -> None:
    assert [c for c in memories([A(offer), U(reply)]) if c.kind == "decision"] == []


def test_a_choice_keeps_a_name_of_several_words_and_names_only_its_own_offer() -> None:
    [chosen] = memories([U("We need a Java framework for the new billing service. Are you on Linux or macOS?"),
                         A("Spring Boot or Quarkus?"), U("Spring Boot, the whole team already knows it.")])
    assert chosen.kind == "decision" and chosen.text.endswith("(Chosen over Quarkus.)")


@pytest.mark.parametrize("scrapped, kept", [
    ("OK, scrap the nightly cron job. We're going with Celery beat instead of cron.", "Postgres"),  # not "the"
    ("Hmm, scrap React Query. We're going with SWR instead of React Query.", "keep React for the admin UI"),
])
def test_scrapping_one_thing_keeps_the_decisions_about_others(scrapped: str, kept: str) -> None:
    got = memories([U("We'll go with Postgres for the main database because we need row-level locks."), A("OK."),
                    U("We'll keep React for the admin UI since the team knows it."), A("OK."), U(scrapped)])
    assert any(kept in c.text for c in got if c.kind == "decision")


def test_a_procedure_that_ditches_things_is_no_choice() -> None:
    got = memories([U("The deploy script in bin/deploy.sh rebuilds the image, then we ditch the old containers by "
                      "label.")])
    assert [c.kind for c in got] == ["fact"]


def test_a_decision_taken_back_leaves_only_the_new_one() -> None:
    got = memories([U("for the mobile API v2 let's do GraphQL, the app screens need lots of nested data"),
                    A("Okay. I'll sketch a schema with Apollo Server and a DataLoader for authors."),
                    U("hmm wait. the Android team generates their client with openapi-generator. scrap GraphQL, v2 "
                      "stays REST with an OpenAPI 3.1 spec, nested stuff via `?include=author`")])
    assert [c.kind for c in got] == ["decision"] and "OpenAPI 3.1" in got[0].text
    again = memories([U("Let's go with GraphQL for the v2 API because the mobile team wants it."), A("OK."),
                      U("Changed my mind, we scrap GraphQL. v2 stays REST with OpenAPI.")])
    assert [c.kind for c in again] == ["decision"] and "REST" in again[0].text


@pytest.mark.parametrize("said", [
    "prod celery is throwing `psycopg2.OperationalError: too many clients` again, 3rd time this week",
    "sidekiq keeps raising ActiveRecord::RecordNotFound in WelcomeEmailJob for users that exist",
    "this returns nothing even though there are pos orders: `SELECT id FROM orders WHERE src = 'pos'`",
    "validate the env vars at startup with zod, put it in src/env.ts",
    "the notifier needs a new env var SLACK_WEBHOOK_URL",
])
def test_a_problem_report_or_a_request_is_no_fact(said: str) -> None:
    assert memories([U(said)]) == []


@pytest.mark.parametrize("said, kind, kept", [
    ("The /v1/users endpoint returns null for soft-deleted users, clients rely on that.", "fact", "returns null"),
    ("Validate request bodies with pydantic models in api/schemas.py, that's our convention.", "preference",
     "pydantic"),
    ("Ensure every migration in db/migrations is reversible.", "preference", "reversible"),
    ("The build is red on Windows whenever a test hardcodes '/' in paths, so always build paths with pathlib.", None,
     "pathlib"),
    ("Background on the payments service: it runs on ECS Fargate with 4 tasks.", "fact", "payments service"),
])
def test_what_looks_like_a_report_a_request_or_a_lead_still_keeps_what_it_says(said: str, kind: str | None,
                                                                                kept: str) -> None:
    got = memories([U(said), A("Good to know.")])
    assert len(got) == 1 and kept in got[0].text and kind in (None, got[0].kind)


def test_between_people_a_hard_time_told_is_still_a_memory() -> None:
    said = [("Caroline", "Hey Mel! How are you?"), ("Melanie", "Good! You?"),
            ("Caroline", "My sister's startup is getting hammered by the recession, she had to lay off 10 people.")]
    got = memories([{"role": "user", "name": name, "content": text} for name, text in said])
    assert any("lay off 10 people" in c.text for c in got)


@pytest.mark.parametrize("said, kind, kept", [
    ("One thing you should know about this repo: billing/ is still a Laravel 6 app on PHP 7.4.", "fact", "Laravel 6"),
    ("heads up, I'm a data engineer, mostly Scala and Spark for the last 6 years", "fact", "Scala and Spark"),
    ("when u explain stuff just give the 3-4 key bullets + a code snippet, skip the history lesson", "preference",
     "key bullets"),
    ("check with me before adding any npm dependency, the bundle has to stay under 50KB", "preference",
     "npm dependency"),
    ("rule for this codebase: `any` is off limits. reach for `unknown` and narrow it, CI fails on it", "preference",
     "off limits"),
    ("Done: the move from Heroku to Fly.io finished on Saturday.", "event", "Heroku to Fly.io"),
    ("We've settled on Java 21 for billing so we can use virtual threads instead of the reactive stack.", "decision",
     "virtual threads"),
])
def test_what_a_developer_tells_in_passing_keeps_its_kind(said: str, kind: str, kept: str) -> None:
    got = memories([U(said)])
    assert [c.kind for c in got] == [kind] and kept in got[0].text


def test_bullets_under_a_decided_header_are_decisions() -> None:
    got = memories([U("Team sync outcome for the Android app:\n\n- All new screens are built in Jetpack Compose.\n"
                      "- Existing XML layouts stay as they are until someone touches the screen.")])
    assert len(got) == 2 and {c.kind for c in got} == {"decision"}
    undecided = memories([U("Not decided yet:\n- Postgres 16 vs Aurora for the ledger DB\n- whether the mobile app "
                            "uses GraphQL\n\nWhat we know: the ledger runs on Postgres 14 on RDS.")])
    context = memories([U("Sprint review outcome:\n- we ship the CSV export in v2.3\n\nFor context, the export "
                          "service runs on Lambda with a 15 min limit.")])
    assert "decision" not in {c.kind for c in undecided}
    assert [c.kind for c in context if "Lambda" in c.text] == ["fact"]


def test_a_fix_still_failing_or_a_requirement_is_no_confirmed_lesson() -> None:
    still = memories([U("The PDF export hangs on big reports."),
                      A("Stream the rows with a generator in export.py instead of building the whole list."),
                      U("Did the paginated version first. Still hangs on the 50k-row report.")])
    assert "lesson" not in {c.kind for c in still}


def test_bullets_under_a_rules_header_are_standing_preferences() -> None:
    got = memories([U("House rules for Go in this repo:\n\n- errors wrapped with %w, never string-formatted\n"
                      "- table-driven tests instead of one func per case\n- no init() functions")])
    assert got and {c.kind for c in got} == {"preference"}
    assert any("table-driven tests instead of one func per case" in c.text.lower() for c in got)


@pytest.mark.parametrize("said", [
    "It's important to me that you never push directly to main.",
    "Here's the thing: I always want type hints on public functions.",
    "That's a dealbreaker for me, I hate tabs.",
    "It's always pnpm in this repo, never npm.",
])
def test_a_rule_that_opens_with_its_or_thats_is_kept_when_said_to_an_assistant(said: str) -> None:
    """The photo-and-moment fragment rules are for talk between people; to an assistant these are rules (a review
    found all four lost)."""
    got = memories([U(said), A("Understood.")])
    assert [c.kind for c in got] == ["preference"], got


def test_a_chat_between_people_captured_in_parts_is_still_read_as_one(mem: Memory) -> None:
    """The second capture holds one person's message only; the session still decides that two people talk, so
    a compliment to the listener is no memory there either (it was kept whole as a fact)."""
    def said(name: str, text: str) -> dict[str, Any]:
        return {"role": "user", "name": name, "content": text}

    first = [said("Caroline", "I finished the lake painting yesterday."), said("Melanie", "Show me!")]
    mem.remember(first, scope=SCOPE, session="chat1", distiller="keyless")
    later = [*first, said("Melanie", "Your painting of the sunset at lake-tahoe is amazing, keep it up")]
    mem.remember(later, scope=SCOPE, session="chat1", distiller="keyless")
    kept = [r.text for r in mem.list(scope=SCOPE, limit=100) if r.kind not in ("episode", "summary")]
    assert not any("amazing" in t for t in kept), kept


@pytest.mark.parametrize("offer,reply", [
    ("I'd suggest moving the cron to a k8s CronJob, so retries and alerts come from the cluster.",
     "ok no, keep it in systemd, the box has no kubectl access"),
    ("I'd suggest moving the cron to a k8s CronJob, so retries and alerts come from the cluster.",
     "ok, but what about the retries in job-runner?"),
    ("Done. I've updated `config.py` and I'm switching the logger to structlog as discussed.",
     "ok, now add tests for the parser"),
    ("I'd suggest moving the cron to a k8s CronJob, so retries and alerts come from the cluster.", "ok thanks"),
])
def test_an_ok_that_turns_down_asks_thanks_or_moves_on_accepts_no_proposal(offer: str, reply: str) -> None:
    got = memories([A(offer), U(reply)])
    assert not [c for c in got if "Proposed:" in c.text], got


def test_an_option_named_with_a_question_about_it_is_no_choice_yet() -> None:
    asked = memories([A("Should the cache be Redis or Memcached?"), U("Redis — does it support TTL per key though?")])
    assert "decision" not in {c.kind for c in asked}
    [chosen] = memories([A("Two ways:\n1. a lock file on the cron job\n2. a Celery beat task with a Redis lock"),
                         U("2, can you also add a test for the lock?")])
    assert chosen.kind == "decision" and "Celery beat" in chosen.text


def test_an_answer_to_a_numbered_question_is_no_choice() -> None:
    """A review found "2" after "Which test failed? 1. test_auth 2. test_db" stored as a decision."""
    assert memories([A("Which test failed?\n1. test_auth\n2. test_db"), U("2")]) == []
    [chosen] = memories([A("Which do you prefer?\n1. keep cron with a lock file\n2. move the job to Celery beat"),
                         U("2, celery already runs everything else")])
    assert chosen.kind == "decision" and "Celery beat" in chosen.text


def test_my_partner_and_i_is_one_subject_in_the_third_person() -> None:
    """"My wife and I are moving" was split at "and I" into "Ana's wife." and "Ana ares moving"."""
    said = [{"role": "user", "name": "Ana", "content": "My wife and I are moving to Denver, and I work at Zalando."}]
    assert sorted(c.text for c in memories(said)) == ["Ana and their wife are moving to Denver.",
                                                      "Ana works at Zalando."]


def test_an_adverb_before_the_verb_stays_an_adverb_in_the_third_person() -> None:
    """"I recently started a blog" read "Dave recentlies started a blog"."""
    said = [{"role": "user", "name": "Dave", "content": "I recently started a blog on car mods."},
            {"role": "user", "name": "Dave", "content": "I finally joined a rock band called Downshift."}]
    assert sorted(c.text for c in memories(said)) == ["Dave finally joined a rock band called Downshift.",
                                                      "Dave recently started a blog on car mods."]


def test_facts_said_mid_sentence_after_friendly_words_are_kept() -> None:
    """Personal facts come wrapped in small talk ("Just a heads up, I'm allergic ..."), with an intensifier
    ("my all-time favourite"), as a habit with its day, or as a plan that is settled."""
    def said(name: str, text: str) -> dict[str, Any]:
        return {"role": "user", "name": name, "content": text}

    got = {c.kind + ": " + c.text for c in memories([
        said("Jo", "Thanks for the invite! Just a heads up, I'm allergic to shellfish."),
        said("Ben", "Nice! My all-time favourite album is Blue Train, by the way."),
        said("Jo", "I still swim every Wednesday morning at the Lido."),
        said("Ben", "Okay, it's settled: Friday the 9th at Café Rosa.")])}
    assert any(t.startswith("fact: Jo") and "allergic to shellfish" in t for t in got), got
    assert any(t.startswith("preference: Ben") and "Blue Train" in t for t in got), got
    assert any(t.startswith("fact: Jo") and "every Wednesday" in t for t in got), got
    assert any(t.startswith("decision: ") and "Café Rosa" in t for t in got), got


def test_lessons_keep_cause_and_fix_and_decisions_keep_their_reason() -> None:
    """The capture from issue 13: the lesson and the reason used to be lost, the test outcome kept."""
    got = memories([
        U("We use ruff, and never push to main."),
        U("MySQL had replication issues last year."),
        A("Then let's use Postgres 16 for the orders DB."),
        U("The e2e suite is flaky."),
        A("The flake was a race in the retry queue. I fixed it by awaiting the queue flush in conftest. All 48 "
          "tests pass now, 20 runs in a row.")])
    kinds = {c.kind: c.text for c in got}
    assert "race in the retry queue" in kinds["lesson"] and "queue flush in conftest" in kinds["lesson"]
    assert "Postgres 16" in kinds["decision"] and "replication issues" in kinds["decision"]
    assert "never push to main" in kinds["preference"]
    assert not any("tests pass" in c.text for c in got)


@pytest.mark.parametrize(("cause", "fix", "fix_words"), [
    ("The nightly job was slow because the search index had grown fragmented.",
     "Recreating the index brings the job down to 4 minutes.", "Recreating the index"),
    ("The e2e flake was a race between the teardown and the retry queue.",
     "Awaited the queue flush in conftest.", "queue flush in conftest"),
    ("CI broke because poetry.lock was out of date after the merge.",
     "Regenerated poetry.lock and pushed again.", "Regenerated poetry.lock"),
])
def test_a_lesson_keeps_a_fix_said_without_i_or_we(cause: str, fix: str, fix_words: str) -> None:
    """A fix in the past tense with no subject ("Regenerated poetry.lock") or as a gerund with its effect
    ("Recreating the index brings the job down") is the second half of the lesson, not lost."""
    lessons = [c.text for c in memories([U(cause), A(fix)]) + memories([U(f"{cause} {fix}")])
               if c.kind == "lesson"]
    assert len(lessons) == 2 and all(fix_words in t and cause.split()[2] in t for t in lessons), lessons


def test_a_past_tense_change_to_something_personal_is_no_fix() -> None:
    """The fix forms above need something technical in the sentence: chat about life stays out of lessons."""
    got = memories([U("I was tired all the time because I slept badly. Changed my diet and restored an old car.")])
    assert not any(c.kind == "lesson" and "diet" in c.text for c in got), got


def test_a_decision_keeps_a_reason_said_in_clauses_of_the_next_sentence() -> None:
    """"The data is single-user and we don't want a database server": the reason is split into clauses, and the
    clause that names it ("single-user") carries no reason word, yet both ride with the decision."""
    got = memories([U("Going with SQLite for the desktop app's local cache. The data is single-user and we really "
                      "don't want people installing a database server just to run a note-taking app.")])
    assert [c.kind for c in got] == ["decision"] and "single-user" in got[0].text and "SQLite" in got[0].text, got
    alone = memories([U("Going with SQLite for the desktop app's local cache."),
                      U("The data is single-user and we really don't want people installing a database server.")])
    assert not any("single-user" in c.text and "SQLite" in c.text for c in alone)  # another message is no clause


@pytest.mark.parametrize("said, kept, kind", [
    ("The staging API listens on 8080. Correction: it's 8443 now that TLS terminates in the pod.", "8443", "fact"),
    ("I like 2-space indentation for the YAML files. Actually scratch that — 4 spaces, that's what yamllint "
     "enforces.", "4 spaces", "preference"),
])
def test_a_correction_in_the_same_message_is_kept_with_what_it_corrects(said: str, kept: str, kind: str) -> None:
    """"It's 8443 now" means nothing alone: the correction is one memory with the sentence it corrects, never
    the old value on its own."""
    got = memories([U(said)])
    assert len(got) == 1 and got[0].kind == kind and kept in got[0].text, got


def test_a_correction_in_the_next_message_replaces_what_it_corrects() -> None:
    """"Wait, my bad, we migrated that to Snowflake" after "the warehouse is on Redshift": one fact that reads
    with what it corrects, and no fact saying Redshift alone."""
    got = memories([U("the analytics warehouse is on Redshift"), A("Got it, I'll write the queries for Redshift."),
                    U("wait, my bad, we migrated that to Snowflake in Q1. nobody queries the old cluster.")])
    assert [c.kind for c in got] == ["fact"] and "Snowflake" in got[0].text and "warehouse" in got[0].text, got
    plain = memories([U("the analytics warehouse is on Redshift"), A("Got it."),
                      U("we also run dbt on Snowflake for marketing.")])
    assert any("Redshift" in c.text for c in plain)  # no correction: the first fact stays


@pytest.mark.parametrize("said, kind, kept", [
    ("Keep explanations short — bullet points over paragraphs.", "preference", "bullet points"),
    ("use ? with anyhow everywhere outside of tests. unwrap in prod code makes me nervous.", "preference", "anyhow"),
    ("can you move the cron to 6am? I'm in Lisbon, so that's WET.", "fact", "Lisbon"),
    ("our clusters run EKS 1.29 and we use Karpenter for node autoscaling", "fact", "EKS 1.29"),
    ("the new intern reads only English, so from now on commit messages in English", "preference", "commit messages"),
    ("send me just the patch, no walkthrough unless I ask", "preference", "just the patch"),
    ("Before you touch the schema, show me the migration and wait for my ok.", "preference", "wait for my ok"),
    ("every new go package needs table-driven tests and has to pass `golangci-lint`.", "preference",
     "table-driven tests"),
    ("In the Kotlin code I want sealed interfaces for results, not exceptions.", "preference", "sealed interfaces"),
    ("no mocks please. Real Postgres through testcontainers.", "preference", "testcontainers"),
    ("Deploys for us = ArgoCD 2.9, owned by the platform team.", "fact", "ArgoCD 2.9"),
    ("nit, but always structlog, not the stdlib logger, in new services pls", "preference", "structlog"),
    ("for new kotlin code prefer coroutines over RxJava", "preference", "coroutines over RxJava"),
    ("for fixtures I want factory_bot factories (one per model), not yaml files", "preference", "factory_bot"),
    ("agreed w/ the infra team: every bucket gets versioning and a 90-day lifecycle rule", "decision",
     "versioning"),
    ("they all run on ARM already and graviton is cheaper, so Lambda it is", "decision", "Lambda it is"),
    ("deploy plan: blue/green on the ALB, not rolling", "decision", "blue/green"),
    ("convention going forward: one migration per PR since the DBA reviews each", "decision", "one migration per PR"),
    ("heads up before you touch billing/: it runs on Ruby 2.7 and we can't upgrade it", "fact", "Ruby 2.7"),
    ("we bumped the api gateway to kong 3.6 last sprint", "fact", "kong 3.6"),
    ("v4.1.0 went live on the play store this morning", "event", "4.1.0 went live"),
    ("fyi we cut payments over to the new PSP on mon oct 7", "event", "cut payments over"),
])
def test_standing_rules_and_facts_said_in_passing(said: str, kind: str, kept: str) -> None:
    """A rule that holds everywhere is a preference, not a decision made once; where the user is, said while
    asking for something else, is a fact; a version stays with the sentence that names its tool."""
    got = memories([U(said)])
    assert any(c.kind == kind and kept in c.text for c in got), got


def test_a_decision_agreed_to_keeps_the_argument_it_agreed_with() -> None:
    """"yeah ok, let's bump minSdk to 28 then" says why only through the reply before it."""
    got = memories([U("the mobile team wants to drop Android 8"),
                    A("That seems reasonable: Android 8 is under 2% of your active installs, and dropping it lets "
                      "you use the newer WorkManager APIs."),
                    U("yeah ok, let's bump minSdk to 28 then.")])
    assert any(c.kind == "decision" and "minSdk to 28" in c.text and "under 2%" in c.text for c in got), got


def test_a_one_off_instruction_is_not_a_standing_rule() -> None:
    assert not any(c.kind == "preference" for c in memories([U("keep the answers short for now, I'm on my phone")]))


def test_a_cause_found_between_tool_calls_reads_without_its_exclamation() -> None:
    got = memories([U("The checkout tests are flaky again. Find out why and fix it."),
                    A("Found it: the flake is a race in the retry queue. The fixture tears down before the queue "
                      "flushes, so the last job is sometimes dropped; the fix is to await the queue flush.")])
    lessons = [c.text for c in got if c.kind == "lesson"]
    assert "The flake is a race in the retry queue." in lessons and not any("Found it" in t for t in lessons)


def test_memories_read_as_standalone_third_person_statements() -> None:
    texts = {c.kind: c.text for c in memories([U("I am allergic to peanuts, so never suggest satay.")])}
    assert texts["fact"].startswith("User is allergic to peanuts")
    [decision] = [c for c in memories([A("**Decision:** pin numpy<2 until pandas 2.2 is released.")])]
    assert decision.text == "Decision: pin numpy<2 until pandas 2.2 is released."  # markdown gone, label kept
    [multi] = memories([A("Decision: move the job queue from Redis to Postgres.\nReason: we already run "
                          "Postgres, and SKIP LOCKED handles our 50 jobs/s.")])
    assert "SKIP LOCKED" in multi.text  # a "Reason:" line right after the decision rides along


def test_a_named_speaker_is_named_in_the_memory() -> None:
    said = [{"role": "user", "name": "Melanie", "content": "I'm allergic to peanuts, and my dog is named Rex."},
            {"role": "user", "name": "Caroline", "content": "I prefer oolong tea in the afternoon."}]
    texts = [c.text for c in memories(said)]
    assert any(t.startswith("Melanie is allergic to peanuts") for t in texts)
    assert any(t.startswith("Melanie's dog is named Rex") for t in texts)
    assert any(t.startswith("Caroline prefers oolong tea") for t in texts)
    assert not any(t.startswith("User") for t in texts)  # in a chat of several people "User" says nobody


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


def test_a_fix_confirmed_after_the_assistant_explained_it_is_one_lesson() -> None:
    """Report, explanation, "that was it": no sentence alone is the lesson. Kept as one, with the problem, the
    cause and fix from the reply and what the user did; the reply and the confirmation are no memories alone."""
    got = memories([U("the node worker keeps crashing with heap out of memory after a few hours"),
                    A("That pattern usually means the in-process LRU cache has no size bound. Set `max` on the "
                      "lru-cache instance so old entries are evicted."),
                    U("yep that was it, set max to 5000 and memory is flat now")])
    assert [c.kind for c in got] == ["lesson"], got
    assert all(w in got[0].text for w in ("keeps crashing", "no size bound", "max to 5000")), got
    how_to = memories([U("write me a script that renames the photos by date"), A("Here is one using exiftool."),
                       U("that works, thanks")])
    assert not any(c.kind == "lesson" for c in how_to)  # no problem was reported: nothing was learned


@pytest.mark.parametrize("said, words", [
    ("the nightly export kept timing out on big tenants. turns out the query had no index on tenant_id. "
     "adding the index brought it down to 40s", ("kept timing out", "no index on tenant_id", "the index brought it down to 40s")),
    ("the api pods were getting OOMKilled every few hours because the memory limit was below the JVM heap. "
     "raised limits.memory to 2Gi and the restarts stopped", ("OOMKilled", "limits.memory to 2Gi")),
])
def test_a_lesson_told_in_lower_case_sentences_keeps_problem_cause_and_fix(said: str,
                                                                            words: tuple[str, ...]) -> None:
    """Developers type "x broke. turns out y. z fixed it" in lower case: each is a sentence, and the cause told
    after its problem ("turns out ...") takes the problem with it."""
    got = memories([U(said)])
    assert any(c.kind == "lesson" and all(w in c.text for w in words) for c in got), got


@pytest.mark.parametrize("said, kind, kept", [
    ("use tabs in the makefiles. no wait, tabs are required there anyway, I meant spaces in the python files",
     "preference", "spaces in the python files"),
    ("we're on python 3.10 in the data jobs. hmm no, the Dockerfile says python:3.12-slim", "fact",
     "python:3.12-slim"),
    ("I told you last week to use yarn. that's outdated: we moved to pnpm, so use that", "preference", "pnpm"),
    ("quick correction to the bucket I gave you: all our backups live in s3://acme-bk-eu, not the us one", "fact",
     "s3://acme-bk-eu"),
    ("scratch the kafka plan from monday. the team already runs nats everywhere, so we'll use nats jetstream "
     "instead", "decision", "nats jetstream"),
    ("ignore what I told you earlier about tabs, turns out the linter enforces spaces. use 4 spaces from now on",
     "preference", "4 spaces"),
])
def test_more_ways_a_correction_opens(said: str, kind: str, kept: str) -> None:
    got = memories([U(said)])
    assert len(got) == 1 and got[0].kind == kind and kept in got[0].text, got


@pytest.mark.parametrize("said, kind, kept", [
    ("the billing crate targets wasm32-unknown-unknown, so no threads", "fact", "wasm32-unknown-unknown"),
    ("nah skip that, the app still supports Android 9 for the warehouse scanners", "fact", "Android 9"),
    ("quick q about the importer. fwiw this is all Kotlin 1.9 on the JVM", "fact", "Kotlin 1.9"),
    ("pls no print statements in library code, use the logger", "preference", "no print statements"),
    ("In the React code, please don't use default exports anywhere", "preference", "default exports"),
    ("Write all SQL keywords in upper case, that's the house style", "preference", "upper case"),
    ("We're keeping Node 18 on the build agents until the image rebuild lands", "decision", "Node 18"),
    ("we've chosen to use pnpm for the monorepo. npm installs were taking 6 minutes", "decision", "pnpm"),
    ("We decided to retire the old VPN. Reasons: it has no MFA and only Ivan can maintain it.", "decision",
     "no MFA"),
    ("We had an outage on 3 June: the queue filled the disk and checkout was down for 12 minutes", "event",
     "3 June"),
    ("The feature freeze for 2.0 starts August 4", "event", "August 4"),
    ("fyi we dropped jquery from the admin pages, everything is vanilla js now", "decision", "dropped jquery"),
    ("ground rule for the new services: structured logs only, no printf debugging", "decision", "structured logs"),
    ("in python code use 4 space indent. sorry, I meant tabs, the repo is old", "preference", "tabs"),
    ("fwiw i'm the only dba for all of this", "fact", "only dba"),
    ("give me answers as numbered steps please", "preference", "numbered steps"),
    ("in rust code don't use unwrap, use expect with a message", "preference", "unwrap"),
    ("heads up: 30 min outage on 2024-03-02, the dns provider had an incident", "event", "2024-03-02"),
    ("we migrated the billing db to aurora last night (march 4), old hosts are gone", "event", "march 4"),
    ("v2.1 went live on 2025-01-10, can you write the announcement", "event", "2025-01-10"),
    ("firmware runs on an STM32H7, FreeRTOS 10.5. which timer for the PWM?", "fact", "STM32H7"),
    ("the cluster runs on GKE 1.29 with autopilot. why are my pods pending?", "fact", "GKE 1.29"),
    ("just so you know, releases are cut by the release bot and nobody tags by hand", "fact", "release bot"),
    ("ok final call: one queue per tenant, no shared topics. a shared topic leaked a tenant's events once",
     "decision", "one queue per tenant"),
    ("web client: sticking with webpack for now, not moving to vite until the plugin rewrite, no time",
     "decision", "webpack"),
    ("the ledger service uses decimal instead of float. rounding errors cost us a reconciliation", "decision",
     "decimal instead of float"),
    ("for go I use gofumpt and golines, not plain gofmt. follow that in anything you write", "preference",
     "gofumpt"),
    ("branch names: ticket id first, kebab-case, no slashes", "preference", "ticket id first"),
    ("heads up, code freeze from March 3 to March 10 for the audit", "event", "code freeze from March 3"),
    ("the switch to the new load balancer happened on sunday (june 2nd), two minutes of errors", "event",
     "june 2nd"),
    ("note for the team: the latency creep in the search api was the regex cache evicting. fix was raising its "
     "size to 4096", "lesson", "regex cache evicting"),
    ("We launched the billing portal on 4 March. support tickets have been flat since", "event", "4 March"),
    ("for the incident review: on 2024-07-02 checkout was down for 12 minutes because the db failed over",
     "event", "2024-07-02"),
    ("Decision from the planning meeting: mobile builds move to Bitrise, no more self-hosted macs", "decision",
     "Bitrise"),
    ("The audit tables will use ULIDs not serial ids. We need ids that sort by time across regions", "decision",
     "sort by time"),
    ("context: i'm on a one-person team here, skip the release notes", "fact", "one-person team"),
    ("it's a Django monolith with 40 apps, mostly DRF", "fact", "Django monolith"),
    ("relevant for the backfill: the clicks table is ~900 million rows on PG 16", "fact", "900 million rows"),
    ("the web and mobile clients share a typescript sdk for auth", "fact", "typescript sdk"),
    ("ok, but from now on write docstrings for every public function", "preference", "docstrings"),
    ("Could you put units in SI in the examples from now on, our users are in Europe.", "preference",
     "units in SI"),
    ("on Friday (May 3) we rotated the database passwords after the laptop was stolen", "event", "May 3"),
    ("the team agreed that all new services ship with OpenTelemetry tracing", "decision", "OpenTelemetry"),
])
def test_facts_rules_decisions_and_events_said_the_way_developers_type(said: str, kind: str, kept: str) -> None:
    """What a crate targets or an app supports, a version said in passing; style rules, "pls no X in Y" and a scoped
    "don't"; a choice being kept, chosen or dropped, "Reasons:" and ground rules; answer formats; an outage, a cut-
    over or a release with its date; a start date without "on". Then: a fact before a question in the same message;
    "just so you know," and "final call:"; a choice kept or put off under a topic label; "uses X instead of Y"; a
    tool habit to follow; a rule under a label; a freeze or a switch with its date; a problem in a place ("the creep
    in X was ..."); "flat since" is time, not a cause; a dated outage is an event; "Decision from ...:"; "will use X
    not Y" with its need; a fact under "context:", a named monolith, a table's size, clients that share a module;
    "ok, but from now on"; "could you ... from now on"; a date in parentheses before what was done; "the team agreed
    that"."""
    got = memories([U(said)])
    assert any(c.kind == kind and kept in c.text for c in got), got


def test_a_lesson_told_whole_in_one_breath_is_a_lesson() -> None:
    """What broke, why, what was done and that it holds, in one message, is a lesson even when a verb in it
    reads as a choice ("bumped the image to ..."); code in backticks keeps its stars."""
    got = memories([U("the ingest pods kept getting OOMKilled. turns out the sidecar had no memory limit, so it ate the "
                      "node. set `resources.limits.memory: 256Mi` on it and it's been stable for 5 days now")])
    assert [c.kind for c in got] == ["lesson"] and "256Mi" in got[0].text
    [lesson] = memories([U("release only: the feed renders empty. proguard was stripping the adapters since only "
                           "reflection touches them. added `-keep class com.acme.feed.** { *; }` and it works now")])
    assert lesson.kind == "lesson" and "com.acme.feed.**" in lesson.text


def test_a_rule_said_after_a_request_keeps_what_it_is_about() -> None:
    [rule] = memories([U("can you rewrite those as pytest parametrize cases? that's how I want all our tests")])
    assert rule.kind == "preference" and "pytest parametrize" in rule.text


def test_never_said_of_someone_else_is_no_rule() -> None:
    """"never" is a standing rule when the user says it of what to do, not of what others did or what never ends."""
    assert not [c for c in memories([U("the vendor never released a build for arm64, they have no plans to.")])
                if c.kind == "preference"]
    assert not [c for c in memories([U("Volume is ~50k PDFs a month; they're read in the first week and then "
                                       "basically never.")]) if c.kind == "preference"]


def test_lets_keep_in_touch_is_no_decision() -> None:
    assert not memories([U("Thanks, Dave! let's keep in touch, take care!")])


@pytest.mark.parametrize("exchange", [
    [U("how do I squash my last three commits? I always forget"), A("Run `git rebase -i HEAD~3` and mark two as "
                                                                      "squash."), U("that worked, thanks")],
    [U("my sourdough keeps coming out flat"), A("It is probably over-proofed; shorten the second rise."),
     U("that did the trick")],
    [U("monday again and the printer is broken"), A("Oh no! Maybe grab a coffee first?"), U("yep that worked")],
    [U("what's 'the build failed' in German?"), A("\"Der Build ist fehlgeschlagen.\""), U("perfect, works now")],
])
def test_an_answered_question_or_chit_chat_is_no_lesson(exchange: list[dict[str, Any]]) -> None:
    """A how-to answered, a kitchen tip or a joke that "worked" is no lesson learned: the report must name a
    failure of a system and the reply something concrete."""
    assert not any(c.kind == "lesson" for c in memories(exchange)), memories(exchange)


@pytest.mark.parametrize("exchange, words", [
    ([U("all the workers log the same job id, no idea why"),
      A("Each goroutine captures the loop variable `job`; before Go 1.22 they share one. Copy it with `job := job`."),
      U("bumped the go directive to 1.22, that fixed it")], ("same job id", "loop variable", "1.22")),
    ([U("snapshot tests fail in CI but pass on my machine"),
      A("CI renders with the default `LANG=C`, so dates format differently. Set `LANG=en_US.UTF-8` in the job."),
      U("yep, set LANG in the workflow and ci is green")], ("fail in CI", "LANG=C", "ci is green")),
    ([U("the image resize endpoint freezes after a few uploads, the event loop is stuck"),
      A("`PIL.Image.open(...).resize` runs on the event loop thread; it is CPU-bound. Offload it with "
        "`run_in_executor`."),
      U("moved the resize into run_in_executor and it's fixed")], ("freezes", "CPU-bound", "run_in_executor")),
    ([U("the report export takes 90s for one customer"),
      A("The ORM loads every invoice line one query at a time (an N+1). Use `select_related` on the lines."),
      U("select_related took it to 2s")], ("takes 90s", "N+1", "took it to 2s")),
    ([U("screenshots pass locally but fail in CI, fonts look different"),
      A("The CI image has no `fonts-dejavu`, so it falls back to another font. Install it in the job image."),
      U("installed fonts-dejavu in the image, green everywhere now")], ("fail in CI", "fonts-dejavu",
                                                                      "green everywhere")),
    ([U("the nightly import hangs on 'waiting for lock' since yesterday"),
      A("A crashed run probably left its row in `import_locks`. Check no import is running, then delete it."),
      U("yeah the runner got OOM-killed and left it. deleting the row sorted it")], ("waiting for lock",
                                                                                    "sorted it")),
    ([U("the search box always queries the first filter value no matter how often you change it, wtf"),
      A("The debounced callback closes over `filter` from the first render. Keep it in a ref and read "
        "`filterRef.current` inside the callback."),
      U("ref version works. so the callback was holding the first render's value")], ("no matter how",
                                                                                     "filterRef.current")),
    ([U("the app crashes on the settings screen: 'Modifying state during view update'"),
      A("The `onAppear` closure writes to `@Published` state while SwiftUI renders. Defer it with `Task { }`."),
      U("wrapped it in Task {} and the crash is gone")], ("crashes", "crash is gone")),
    ([U("why do the invoice totals show twice for some customers?"),
      A("The view joins `payments` without a unique key, so a customer with two payment methods doubles."),
      U("right, two payment methods. rewrote the view with DISTINCT ON customer_id and the totals match now")],
     ("twice", "DISTINCT ON customer_id")),
    ([U("the consumer keeps getting kicked from the group, poll timeout expired in the logs"),
      A("Processing a batch takes longer than `max.poll.interval.ms`. Fetch fewer records per poll."),
      U("set max.poll.records to 20 and the rebalances stopped")], ("poll timeout", "max.poll.records to 20")),
    ([U("the grpc client blows up with `StatusRuntimeException: UNAVAILABLE` after idle periods"),
      A("The load balancer drops idle HTTP/2 connections after 60s. Enable keepalive pings:\n```kotlin\n"
        "ManagedChannelBuilder.forTarget(t).keepAliveTime(30, TimeUnit.SECONDS)\n```"),
      U("added the keepalive, 40 runs in a row clean")], ("StatusRuntimeException", "keepAliveTime(30")),
    ([U("the dashboard is slow af, EXPLAIN shows a seq scan on events"),
      A("The filter is on `date(created_at)`, so the btree on `created_at` is not used. Index the expression:\n"
        "```sql\nCREATE INDEX events_day_idx ON events (date(created_at));\n```"),
      U("ran it, the dashboard query went from 4s to 40ms")], ("seq scan", "CREATE INDEX events_day_idx")),
    ([U("we lost a day of uploads from the queue, nothing in the logs"),
      A("If that Redis uses an LRU eviction policy it drops queue keys silently under memory pressure."),
      U("it was volatile-lru. we've given the queue its own Redis with noeviction")], ("lost", "noeviction")),
])
def test_a_fix_confirmed_in_other_words_is_one_lesson(exchange: list[dict[str, Any]], words: tuple[str, ...]) -> None:
    """"that fixed it" makes what was reported a problem, whatever its words; "ci is green" and "X did it" confirm a
    fix too. More that confirm one: "it's fixed", "took it to 2s", "green everywhere", "sorted it", "ref version
    works", "the crash is gone"; more that report a problem: "freezes", "takes 90s", "no matter how", and "pass
    locally but fail in CI" (a report, not a status)."""
    got = memories(exchange)
    assert [c.kind for c in got] == ["lesson"] and all(w in got[0].text for w in words), got


@pytest.mark.parametrize("said, words", [
    ("note for future me: the arm64 build kept failing on grpcio. fix was pinning grpcio to 1.62 with prebuilt "
     "wheels", ("kept failing on grpcio", "pinning grpcio to 1.62")),
    ("the deploy hung at the migration step for an hour, a stale advisory lock from a killed job. "
     "`SELECT pg_advisory_unlock_all()` cleared it", ("stale advisory lock", "pg_advisory_unlock_all")),
    ("Figured out the 502s: nginx closed idle upstream connections before the app did, so requests hit dead "
     "sockets. raised keepalive_timeout above the app's and they stopped", ("502s", "keepalive_timeout")),
    ("eval scores looked too good. leakage: user ids from the test split were in the embeddings vocab. rebuilt "
     "the vocab from train only", ("user ids from the test split", "rebuilt the vocab")),
])
def test_a_lesson_labelled_as_a_note_or_fixed_by_a_command(said: str, words: tuple[str, ...]) -> None:
    got = memories([U(said)])
    assert any(c.kind == "lesson" and all(w in c.text for w in words) for c in got), got


def test_decisions_agreed_in_two_words_or_reasoned_in_the_next_message() -> None:
    """"ok sold, redis it is" after the argument keeps the argument; "ok, cents it is" after the assistant's own
    decision is that decision, not a second one; "picking X over Y" takes "reason is ..." said next."""
    argued = memories([U("cache sessions in memcached or redis?"),
                       A("Redis: it can persist to disk, so a restart doesn't log everyone out."),
                       U("ok sold, redis it is")])
    assert [c.kind for c in argued] == ["decision"] and "doesn't log everyone out" in argued[0].text, argued
    agreed = memories([U("float or decimal for prices?"),
                       A("Let's store prices as integer cents, because floats round 0.10 wrong."),
                       U("ok, integer cents it is")])
    assert [c.kind for c in agreed] == ["decision"] and "because floats" in agreed[0].text, agreed
    picked = memories([U("picking fastapi over flask for the new gateway"),
                       U("reason is mostly async support and pydantic models out of the box")])
    assert [c.kind for c in picked] == ["decision"] and "async support" in picked[0].text, picked


@pytest.mark.parametrize("said", ["See you then!", "Here it is.", "Yes it is!", "sounds good, see ya then",
                                  "Tomorrow then!", "Pizza it is!", "Whatever it is."])
def test_a_goodbye_is_no_choice(said: str) -> None:
    assert not [c for c in memories([U(said)]) if c.kind == "decision"]
    after_thanks = memories([U("thanks for the help today"), A("No problem, good luck!"), U(said)])
    assert not [c for c in after_thanks if c.kind == "decision"], after_thanks


def test_a_request_done_is_no_lesson() -> None:
    """"that did it" after a request answered (an average, a conversion) is no problem solved."""
    got = memories([U("I need the average of a list in python"), A("Use `sum(xs) / len(xs)`, or `statistics.mean`."),
                    U("that did it, thanks")])
    assert not [c for c in got if c.kind == "lesson"], got


def test_a_lesson_corrected_in_the_next_message_is_the_corrected_lesson() -> None:
    got = memories([U("the startup crash was the plugin scan"), A("want me to cache the scan?"),
                    U("nvm, traced it again: it was the DNS lookup for the metrics host, added it to /etc/hosts")])
    assert [c.kind for c in got] == ["lesson"] and "DNS lookup for the metrics host" in got[0].text, got


def test_a_choice_keeps_its_reason_told_after_a_question_or_in_the_same_breath() -> None:
    asked = memories([U("let's move the docs site to astro"), A("ok. should I start with the blog section?"),
                      U("yes. fwiw the reason is build times, gatsby takes 9 minutes on CI")])
    assert [c.kind for c in asked] == ["decision"] and "gatsby takes 9 minutes" in asked[0].text, asked
    assert "reason is" not in asked[0].text.lower()
    then = memories([U("for the rate limiter, a token bucket in redis or in process?"),
                     A("Two API pods share the limit; a bucket in Redis avoids each pod allowing the full rate."),
                     U("ok, redis then. an extra hop is fine for this")])
    assert [c.kind for c in then] == ["decision"] and "avoids each pod" in then[0].text, then


@pytest.mark.parametrize("said", ["Good to know, I'll try that tomorrow.", "Heads up, I pushed a broken commit",
                                  "Just so you know, I've been busy with the move lately."])
def test_a_friendly_heads_up_is_no_fact(said: str) -> None:
    assert not [c for c in memories([U(said)]) if c.kind == "fact"], memories([U(said)])


@pytest.mark.parametrize("session", [
    [U("Errors: 2 failed, 40 passed in 3.1s")], [U("logs: 2025-02-03 09:12:44 WARN retry budget low")],
    [U("PR: https://example.com/org/repo/pull/77 ready for review")], [U("Answers: see above")],
    [U("My aunt uses honey over sugar in her tea.")], [U("ok final call: let me sleep on it")],
    [U("my call: dunno yet")], [U("memory leak: still investigating, no idea yet")],
    [U("Found out my cousin is moving to Oslo!")], [U("i use neovim, same way as everyone else")],
])
def test_labels_and_phrasings_that_say_nothing_kept_are_no_memory(session: list[dict[str, Any]]) -> None:
    """What this round's rules must not take: a status, log or link after a label; a relative's habit; a call
    not made yet; an investigation with no cause; news; "nvm, I found it"."""
    got = [c for c in memories(session) if c.kind != "fact" or "Oslo" not in c.text]
    assert not [c for c in got if c.kind in ("preference", "decision", "lesson")], got


def test_nvm_is_a_correction_only_when_it_says_what_it_was() -> None:
    got = memories([U("I always lose my badge."), A("Happens to everyone!"), U("nvm, I found it")])
    assert not [c for c in got if "found it" in c.text], got


def test_a_question_after_the_assistant_asks_is_no_reason() -> None:
    got = memories([U("Let's use Postgres for the ledger."), A("Want me to draft the schema?"),
                    U("why not MySQL though? not sure")])
    assert [c.kind for c in got] == ["decision"] and "MySQL" not in got[0].text, got


def test_corrections_opened_with_misspoke_earlier_or_ugh_actually() -> None:
    region = memories([U("Sorry, I misspoke earlier — the prod db is in us-east-2, not us-east-1.")])
    assert [c.kind for c in region] == ["fact"] and "us-east-2" in region[0].text, region
    fmt = memories([U("When you show a change, paste the whole function."), A("Will do."),
                    U("Ugh, actually, only the changed lines please. whole functions are too long on my phone")])
    assert any(c.kind == "preference" and "only the changed lines" in c.text.lower() for c in fmt), fmt


def test_a_reason_told_after_the_assistant_asks_why() -> None:
    got = memories([U("ok decided: the api moves to Hono on Bun."),
                    A("Nice. What was the main driver — cold starts, DX, cost? It changes how I set up the build."),
                    U("mostly cold starts. the express lambdas took 900ms to boot")])
    assert [c.kind for c in got] == ["decision"] and "900ms to boot" in got[0].text, got
