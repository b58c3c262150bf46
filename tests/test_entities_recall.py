"""Aliases in recall: a question naming an entity by one of its names finds the memories that use another
(core.entities.hooks.alias_terms, core.recall.aliases), on the real core and embedded store, BM25 only."""

from __future__ import annotations

from typing import Callable

import pytest

from remem import Memory, Scope
from remem.core.entities.resolve import abbreviates

TEAM = Scope(tenant="team")
NOTES = [
    "The ingest worker writes parsed events into ClickHouse, which we also call the events store.",
    "Dana Whitfield maintains the ingest worker.",
    "We deploy the billing service with fly.io from the main branch.",
    "Never use tabs in this repo, always 4 spaces.",
    "The staging database is refreshed every night at 02:00 UTC.",
]
ALIAS_ONLY = "CHouse disk usage is at 80 percent, we should add a node before the summer sale."


def texts(hits: list) -> list[str]:
    return [r.text for h in hits for r in h.records]


@pytest.fixture
def team(memory_factory: Callable[..., Memory]) -> Memory:
    mem = memory_factory("none", service="off")
    for text in NOTES:
        mem.add(text, scope=TEAM)
    mem.add(ALIAS_ONLY, scope=TEAM)  # said later, by another name of the same product
    return mem


def test_a_question_naming_an_alias_finds_the_memories_that_use_another_name(team: Memory) -> None:
    profile = team.about("ClickHouse", scope=TEAM)
    assert profile.entity is not None and {"CHouse", "the events store"} <= set(profile.entity.aliases)
    for question in ("How full is the events store?", "What is the disk usage of ClickHouse?"):
        assert ALIAS_ONLY in texts(team.search(question, scope=TEAM, limit=5)), question
        assert "80 percent" in team.context(question, scope=TEAM, token_budget=300)
    # the same store without the alias names: the question's own words do not reach that memory
    off = team.with_settings(entity_aliases=False)
    assert ALIAS_ONLY not in texts(off.search("How full is the events store?", scope=TEAM, limit=5))
    # and the other way: the short name finds what the full name's memory says
    assert "parsed events" in team.context("What is CHouse used for?", scope=TEAM, token_budget=300)


def test_a_question_saying_every_name_of_the_entity_is_searched_as_before(team: Memory) -> None:
    q = "Who maintains the ingest worker?"  # the ingest worker has no other name: nothing is added
    assert [h.record.id for h in team.search(q, scope=TEAM, limit=5)] == \
        [h.record.id for h in team.with_settings(entity_aliases=False).search(q, scope=TEAM, limit=5)]


def test_entities_false_is_the_unchanged_baseline(memory_factory: Callable[..., Memory]) -> None:
    bare = memory_factory("none", service="off", entities=False)
    for text in [*NOTES, ALIAS_ONLY]:
        bare.add(text, scope=TEAM)
    q = "How full is the events store?"
    assert ALIAS_ONLY not in texts(bare.search(q, scope=TEAM, limit=5))
    assert [h.record.id for h in bare.search(q, scope=TEAM, limit=5)] == \
        [h.record.id for h in bare.with_settings(entity_aliases=False).search(q, scope=TEAM, limit=5)]


def test_a_hub_entity_named_by_an_alias_adds_nothing(memory_factory: Callable[..., Memory]) -> None:
    mem = memory_factory("none", service="off")
    mem.add_many([{"text": f"ClickHouse node {i} serves shard {i} of table t{i}."} for i in range(240)], scope=TEAM)
    mem.add("The ingest worker writes into ClickHouse, which we also call the events store.", scope=TEAM)
    mem.add(ALIAS_ONLY, scope=TEAM)
    q = "How full is the events store?"
    ids = lambda m: [h.record.id for h in m.search(q, scope=TEAM, limit=10)]  # noqa: E731
    # ClickHouse is in nearly every memory (a hub): its other names would rank a random share of the scope
    assert ids(mem) == ids(mem.with_settings(entity_aliases=False))
    # the hub rule is what holds it back: without it, the alias names are added and change the ranking
    assert ids(mem.with_settings(entity_hub_share=1.0)) != ids(mem)


@pytest.mark.parametrize("short, full, expected", [
    ("CHouse", "ClickHouse", True), ("GHub", "GitHub", True), ("ClickHouse", "CHouse", False),
    ("PSQL", "PostgreSQL", False), ("PgBouncer", "PGBouncer", False), ("JS", "JavaScript", False),
    ("C House", "Click House", False),
])
def test_a_camelcase_name_cut_to_initials_abbreviates_only_its_full_name(short: str, full: str,
                                                                          expected: bool) -> None:
    assert abbreviates(short, full) is expected
