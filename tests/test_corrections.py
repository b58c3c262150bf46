"""Keyless corrections through ``remember()``: a statement that names what it replaces supersedes the memory
that still says it, on the real embedded store, and nothing else is touched."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from remem import Memory, Scope
from remem.core.distill.corrections import replacements

SCOPE = Scope(tenant="acme", user="dana")
MEMORY_KINDS = ["fact", "preference", "decision", "lesson", "event", "note"]
DAY = _dt.datetime(2026, 3, 2, 10, 0, tzinfo=_dt.timezone.utc)


def said(text: str, when: _dt.datetime = DAY, role: str = "user") -> list[dict[str, Any]]:
    return [{"role": role, "content": text, "timestamp": when.isoformat()}]


def valid_texts(mem: Memory, query: str) -> list[str]:
    """What recall shows of the distilled memories (episodes hold what was said, as said)."""
    return [h.record.text for h in mem.search(query, scope=SCOPE, limit=10, kind=MEMORY_KINDS)]


def memories(mem: Memory) -> list[Any]:
    return [r for r in mem.iter_records(scope=SCOPE) if r.kind not in ("episode", "summary")]


def test_a_correction_supersedes_the_memory_that_still_says_the_old_value(mem: Memory) -> None:
    mem.remember(said("The orders DB runs Postgres 16 on db-orders.internal."), scope=SCOPE, session="s1")
    before = next(r for r in memories(mem) if "Postgres 16" in r.text)
    mem.remember(said("We actually upgraded the orders DB to Postgres 17 last week, not 16.",
                      DAY + _dt.timedelta(days=7)), scope=SCOPE, session="s2")
    now = valid_texts(mem, "which Postgres version does the orders DB run?")
    assert any("Postgres 17" in t for t in now)
    assert not any("Postgres 16" in t for t in now)
    old = mem.get(before.id, scope=SCOPE)
    assert old.superseded_by is not None
    new = mem.get(old.superseded_by, scope=SCOPE)
    assert "Postgres 17" in new.text and new.sources  # provenance of the correction is kept
    # history is kept: as of before the correction, the old memory is what was true
    then = [h.record.text for h in mem.search("orders DB Postgres", scope=SCOPE, limit=10, as_of=old.created_at)]
    assert any("Postgres 16" in t for t in then)


def test_switching_from_one_tool_to_another_replaces_the_old_choice(mem: Memory) -> None:
    mem.remember(said("Our CI runs on Jenkins, with a nightly build at 2am."), scope=SCOPE, session="s1")
    mem.remember(said("We switched CI from Jenkins to GitHub Actions.", DAY + _dt.timedelta(days=30)),
                 scope=SCOPE, session="s2")
    now = valid_texts(mem, "what runs our CI?")
    assert any("GitHub Actions" in t for t in now)
    assert not any("Jenkins" in t and "GitHub" not in t for t in now)


def test_a_change_still_to_come_replaces_nothing(mem: Memory) -> None:
    mem.remember(said("The export bucket is in us-east-1."), scope=SCOPE, session="s1")
    mem.remember(said("We're moving the export bucket from us-east-1 to eu-west-1 next sprint because of the "
                      "GDPR audit.", DAY + _dt.timedelta(days=1)), scope=SCOPE, session="s2")
    facts = [r for r in memories(mem) if "export bucket is in us-east-1" in r.text]
    assert facts and all(r.superseded_by is None for r in memories(mem))


def test_a_memory_that_only_shares_the_value_is_left_alone(mem: Memory) -> None:
    mem.remember(said("The API gateway timeout is 16 seconds."), scope=SCOPE, session="s1")
    mem.remember(said("We upgraded the orders DB to Postgres 17, not 16.", DAY + _dt.timedelta(days=2)),
                 scope=SCOPE, session="s2")
    timeout = [r for r in memories(mem) if "timeout" in r.text]
    assert timeout and all(r.superseded_by is None for r in timeout)


def test_an_older_statement_does_not_replace_a_newer_memory(mem: Memory) -> None:
    mem.remember(said("We use pnpm for the web app.", DAY + _dt.timedelta(days=10)), scope=SCOPE, session="s1")
    # an import of an older conversation, said before the stored memory
    mem.remember(said("The web app uses yarn instead of pnpm.", DAY), scope=SCOPE, session="s0")
    pnpm = [r for r in memories(mem) if "pnpm for the web app" in r.text]
    assert pnpm and all(r.superseded_by is None for r in pnpm)


def test_within_one_capture_only_the_corrected_value_is_kept(mem: Memory) -> None:
    mem.remember([{"role": "user", "content": "The staging cluster runs Kubernetes 1.27."},
                  {"role": "assistant", "content": "Noted."},
                  {"role": "user", "content": "Sorry, I misread the dashboard: the staging cluster runs "
                                              "Kubernetes 1.29, not 1.27."}], scope=SCOPE, session="s1")
    texts = [r.text for r in memories(mem) if r.superseded_by is None]
    assert any("1.29" in t for t in texts)
    assert not any("1.27" in t and "1.29" not in t for t in texts)
    # what was said is still there, as said
    episodes = [r.text for r in mem.iter_records(scope=SCOPE) if r.kind == "episode"]
    assert any("runs Kubernetes 1.27." in t for t in episodes)


def test_corrections_stay_inside_their_scope(mem: Memory) -> None:
    other = Scope(tenant="acme", user="lee")
    mem.remember(said("The orders DB runs Postgres 16."), scope=other, session="s1")
    mem.remember(said("We upgraded the orders DB to Postgres 17, not 16.", DAY + _dt.timedelta(days=1)),
                 scope=SCOPE, session="s2")
    theirs = [r for r in mem.iter_records(scope=other) if r.kind not in ("episode", "summary")]
    assert theirs and all(r.superseded_by is None for r in theirs)


@pytest.mark.parametrize("text", [
    "The train goes from Boston to New York.",
    "I'm not sure, not really.",
    "Deploys are frozen from Dec 20 to Jan 3.",
    "Should we switch from Flask to FastAPI?",
    "Let's move the cron job from the VM to a Lambda next quarter.",
])
def test_what_is_not_a_correction(text: str) -> None:
    assert replacements(text) == []


@pytest.mark.parametrize("text,old", [
    ("We actually upgraded the orders DB to Postgres 17 last week, not 16.", "16"),
    ("Use pnpm instead of npm from now on.", "npm"),
    ("We no longer use Heroku; everything runs on Fly.io.", "Heroku"),
    ("We don't use Jenkins anymore.", "Jenkins"),
    ("Replaced Celery with RQ in the worker.", "Celery"),
    ("The API moved from v1 to v2 in March.", "v1"),
])
def test_what_a_correction_replaces(text: str, old: str) -> None:
    assert [r.old for r in replacements(text)] == [old]
