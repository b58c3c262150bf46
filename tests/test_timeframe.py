"""Time in questions and in what was said: windows parsed from questions, relative times resolved against when
a message was said, and recall that uses them on the real store (public API only)."""

from __future__ import annotations

import datetime as dt

import pytest

from remem import Memory, Scope
from remem.core.recall.planner import recall, recall_context, time_frame
from remem.core.recall.timeframe import mentions, parse_timeframe

UTC = dt.timezone.utc
NOW = dt.datetime(2023, 11, 20, 15, 0, tzinfo=UTC)  # a Monday
SCOPE = Scope(tenant="acme")


def day(y: int, m: int, d: int) -> dt.datetime:
    return dt.datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize("question,start,end", [
    ("What did Caroline do in May 2023?", day(2023, 5, 1), day(2023, 6, 1)),
    ("Where did Evan go on 24 May, 2023?", day(2023, 5, 24), day(2023, 5, 25)),
    ("Which book did Tim recommend on 8th December, 2022?", day(2022, 12, 8), day(2022, 12, 9)),
    ("What did Gina get accepted for on May 23, 2023?", day(2023, 5, 23), day(2023, 5, 24)),
    ("What was Jolene working on in the beginning of January 2023?", day(2023, 1, 1), day(2023, 1, 11)),
    ("What type of classes did Evan start taking in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
    ("what did we decide last week?", day(2023, 11, 13), day(2023, 11, 20)),
    ("what broke yesterday?", day(2023, 11, 19), day(2023, 11, 20)),
    ("who headlined the festival in October?", day(2023, 10, 1), day(2023, 11, 1)),
    ("what happened last summer?", day(2023, 6, 1), day(2023, 9, 1)),
    ("errors since 2023-03-01", day(2023, 3, 1), None),
    ("what did we use before March?", None, day(2023, 3, 1)),
    ("what changed after May 2023?", day(2023, 6, 1), None),
    ("what did we ship last Friday?", day(2023, 11, 17), day(2023, 11, 18)),
    ("what will we do this winter?", day(2023, 12, 1), day(2024, 3, 1)),  # asked in November: the one coming
    ("what did I buy 2 weekends ago?", day(2023, 11, 11), day(2023, 11, 13)),  # asked on a Monday
    ("what did I buy a weekend ago?", day(2023, 11, 18), day(2023, 11, 20)),
    ("what dessert did I have after lunch on May 8, 2023?", day(2023, 5, 8), day(2023, 5, 9)),  # that day
])
def test_questions_name_time_windows(question: str, start: dt.datetime | None, end: dt.datetime | None) -> None:
    frame = parse_timeframe(question, NOW)
    assert frame is not None and frame.resolved and (frame.start, frame.end) == (start, end), frame


def test_this_season_is_the_one_under_way() -> None:
    frame = parse_timeframe("what did we do this winter?", day(2024, 2, 10))
    assert frame is not None and (frame.start, frame.end) == (day(2023, 12, 1), day(2024, 3, 1))


@pytest.mark.parametrize("question", ["When did Caroline go to the LGBTQ support group?", "What may break?",
                                      "I walked 2000 steps", "How do I rotate logs?", ""])
def test_questions_without_a_time_have_no_window(question: str) -> None:
    assert parse_timeframe(question, NOW) is None


def test_relative_times_in_messages_resolve_against_when_they_were_said() -> None:
    said = dt.datetime(2023, 5, 25, 13, 0, tzinfo=UTC)  # a Thursday
    got = {m.phrase: m.describe() for m in mentions("Last Sunday I ran a race, and yesterday I rested. We moved "
                                                     "here 4 years ago; last month was busy.", said)}
    assert got == {"Last Sunday": "2023-05-21", "yesterday": "2023-05-24", "4 years ago": "2019",
                   "last month": "April 2023"}
    assert mentions("yesterday", None) == []


def test_times_past_the_calendar_never_stop_a_search(mem: Memory) -> None:
    """A question or a stored message naming a time before year 1 ("3000 years ago") is searched without that
    window; it used to raise out of search() and context() for every question of the scope."""
    _said(mem, "In Luxor the guide said Karnak temple was begun about 4000 years ago.", day(2023, 5, 8), "k", "s1")
    for question in ("what did the pharaohs build 3000 years ago?", "what happened 99999999 days ago?",
                     "what did the guide say in May 2023?", "the temple guide last week?"):
        assert [h.record.sources for h in mem.search(question, scope=SCOPE)][:1] == [("k",)], question
        assert "Karnak" in mem.context(question, scope=SCOPE)


def test_an_event_found_without_a_date_bounds_no_window(mem: Memory) -> None:
    """"Before the migration": when the best match for the migration has no event time, there is no window (the
    next dated hit used to bound it, and could be the very record asked for)."""
    mem.add("The billing migration moved everything to Postgres.", scope=SCOPE, kind="fact")
    _said(mem, "Billing reports ran on the MySQL replica during the migration planning.", day(2023, 4, 2), "old",
          "s1")
    assert time_frame(mem, "where did billing reports run before the billing migration?", scope=SCOPE) is None


def _said(mem: Memory, text: str, when: dt.datetime, mid: str, session: str) -> None:
    mem.remember([{"role": "user", "content": text, "timestamp": when.isoformat(), "id": mid}], scope=SCOPE,
                 session=session)


def test_recall_prefers_what_happened_in_the_window_the_question_names(mem: Memory) -> None:
    _said(mem, "We upgraded the payments service to Django 4.2 today.", day(2023, 3, 14), "m1", "s1")
    _said(mem, "We upgraded the payments service to Django 5.0 today.", day(2023, 5, 9), "m2", "s2")
    _said(mem, "We upgraded the payments service to Django 5.1 today.", day(2023, 9, 2), "m3", "s3")
    top = recall(mem, "what did we upgrade the payments service to in May 2023?", scope=SCOPE, limit=3, now=NOW)
    assert top[0].record.sources == ("m2",)
    assert recall(mem, "payments upgrade before the migration", scope=SCOPE, now=NOW)  # unknown anchor: no crash
    # the window is also a plain filter on event time
    frame = parse_timeframe("in September 2023", NOW)
    hits = mem.search("payments service upgrade", scope=SCOPE, where=frame.where())
    assert {h.record.sources for h in hits} == {("m3",)}


def test_before_an_event_is_resolved_by_finding_the_event(mem: Memory) -> None:
    _said(mem, "The billing database migration to Aurora is done.", day(2023, 6, 1), "mig", "s1")
    _said(mem, "Billing reports ran on the old MySQL replica, slowly.", day(2023, 4, 2), "old", "s2")
    _said(mem, "Billing reports now run on Aurora read replicas.", day(2023, 7, 3), "new", "s3")
    top = recall(mem, "where did billing reports run before the database migration?", scope=SCOPE, limit=2,
                 now=NOW)
    assert top[0].record.sources == ("old",)


def test_after_an_event_keeps_what_was_said_that_day_and_the_words_that_name_it(mem: Memory) -> None:
    """"After the roadtrip": what is meant is often told the same day and names the roadtrip. The window used to
    start a second after the event and was searched without "roadtrip", so a later, vaguer hike won."""
    _said(mem, "We finally did the roadtrip down the coast to Big Sur.", day(2023, 7, 1), "trip", "s1")
    _said(mem, "Right after the roadtrip we went hiking at Point Lobos.", day(2023, 7, 1), "lobos", "s1")
    _said(mem, "We went hiking at Muir Woods.", day(2023, 6, 2), "muir", "s0")
    _said(mem, "We should go hiking again, maybe somewhere new.", day(2023, 8, 10), "later", "s2")
    top = recall(mem, "Where did we go hiking after the roadtrip?", scope=SCOPE, limit=2, now=NOW)
    assert "Point Lobos" in top[0].record.text, [h.record.text for h in top]  # the turn, or the summary quoting it


def test_search_itself_reads_the_time_a_question_names(mem: Memory) -> None:
    now = dt.datetime.now(UTC)
    last_thursday = now - dt.timedelta(days=now.weekday() + 4)  # inside "last week" whatever today is
    _said(mem, "Rolled back the payments deploy after the 502 errors.", last_thursday, "recent", "s1")
    _said(mem, "Moved CI from Jenkins to GitHub Actions.", now - dt.timedelta(days=90), "old", "s2")
    _said(mem, "The orders DB moved to Postgres 16.", now - dt.timedelta(days=30), "pg", "s3")
    # the question shares no word with what happened in the window: search() still answers with it
    assert [h.record.sources for h in mem.search("what happened last week?", scope=SCOPE)][:1] == [("recent",)]
    before = mem.search("what did we do before the Postgres move?", scope=SCOPE, limit=3)
    assert ("old",) in [h.record.sources for h in before]
    assert mem.context("what happened last week?", scope=SCOPE).count("Rolled back the payments deploy") == 1


def test_recall_context_renders_each_thing_once_with_event_dates(mem: Memory) -> None:
    mem.remember([{"role": "user", "content": "I ran the Berlin half marathon last Sunday.",
                   "timestamp": "2023-05-25T10:00:00Z", "id": "run"}], scope=SCOPE, session="s1")
    ctx = recall_context(mem, "when did I run the Berlin half marathon?", scope=SCOPE, now=NOW)
    lines = [ln for ln in ctx.splitlines() if "Berlin" in ln]
    assert len(lines) == 1 and lines[0].startswith("- [2023-05-25 · ") and "(last Sunday = 2023-05-21)" in lines[0]


def test_a_time_keeps_the_offset_it_was_said_in(any_mem: Memory) -> None:
    """Said at 21:30 in Denver on May 8: dated May 8, and its "yesterday" is May 7 (UTC made both a day later)."""
    any_mem.remember([{"role": "user", "content": "Yesterday I adopted a beagle puppy named Biscuit.",
                       "timestamp": "2023-05-08T21:30:00-07:00", "id": "b1"}], scope=SCOPE, session="s1")
    [episode] = any_mem.list(scope=SCOPE, kind="episode")
    assert episode.occurred_at.isoformat() == "2023-05-08T21:30:00-07:00"
    ctx = any_mem.context("when did I adopt Biscuit?", scope=SCOPE)
    # dated May 8 (the line may be the message or the fact distilled from it, which takes its place)
    line = next(ln for ln in ctx.split("\n") if "Yesterday I adopted" in ln)
    assert line.startswith("- [2023-05-08 · ") and "(Yesterday = 2023-05-07)" in line, ctx
