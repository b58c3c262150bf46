"""Recall gives nothing rather than noise: a question with nothing to do with the memories used to get the
dense list's nearest ten anyway, shown to an agent as "Relevant memories" (a new user's review)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from remem import Memory, Scope

DEV = Scope(tenant="acme", user="dev")
NOTES = ["The CI Redis container fails when port 6379 is taken; we pin redis to 7.2.",
         "We use poetry, not pip, for dependencies.", "Always run ruff before pushing.",
         "Alice prefers green tea over coffee.", "The orders service runs on Postgres 16 in eu-west-1.",
         "Deploys are frozen on Fridays."]


@pytest.fixture
def minilm_mem(memory_factory: Callable[..., Memory]) -> Memory:
    mem = memory_factory("minilm", service="off")  # a fresh store, copied from one made once per session
    mem.add_many([{"text": t} for t in NOTES], scope=DEV)
    return mem


def test_an_unrelated_question_recalls_nothing(minilm_mem: Memory) -> None:
    for question in ("what is the capital of France?", "how do I bake sourdough bread?"):
        assert minilm_mem.search(question, scope=DEV, limit=5) == []
        assert minilm_mem.context(question, scope=DEV) == ""


def test_a_question_in_other_words_still_finds_its_memory(minilm_mem: Memory) -> None:
    """Sharing no word with the question is no reason to drop a hit the model finds close enough."""
    hits = minilm_mem.search("which day can't we ship releases?", scope=DEV, limit=5)
    assert hits and hits[0].record.text == "Deploys are frozen on Fridays."
    hits = minilm_mem.search("linting tool before a push", scope=DEV, limit=5)
    assert hits[0].record.text == "Always run ruff before pushing."


def test_bm25_only_and_a_shared_word_are_unaffected(store_factory: Callable[..., Path], minilm_mem: Memory) -> None:
    hits = minilm_mem.search("capital of Redis?", scope=DEV, limit=5)  # shares "redis": kept whatever its score
    assert any("Redis" in h.record.text for h in hits)
    with Memory(path=store_factory("none"), embedder="none", service="off") as mem:
        mem.add_many([{"text": t} for t in NOTES], scope=DEV)
        assert mem.search("what is the capital of France?", scope=DEV) == []  # BM25 found nothing to begin with
        assert mem.search("orders database", scope=DEV)[0].record.text.startswith("The orders service")


def test_a_short_name_in_the_question_is_a_word_it_shares(store_factory: Callable[..., Path]) -> None:
    """ "CI?" or "PR 42" shares a word with the memory that says it, so the floor never drops that memory; a
    short word such as "is" still shares nothing (a review found "CI" recalling only an unrelated memory)."""
    with Memory(path=store_factory("minilm"), embedder="minilm", service="off") as mem:
        mem.add_many([{"text": t} for t in ["PR 42 was merged after review by Ana.",
                                            "The CI cache key uses the lockfile hash.",
                                            "Ana prefers tabs over spaces."]], scope=DEV)
        assert mem.search("CI", scope=DEV, limit=3)[0].record.text.startswith("The CI cache key")
        assert [h.record.text for h in mem.search("PR 42?", scope=DEV, limit=3)] == [
            "PR 42 was merged after review by Ana."]  # "pr" is a whole word, not the start of "prefers"


def test_gibberish_and_a_question_sharing_nothing_with_any_memory_recall_nothing(minilm_mem: Memory) -> None:
    """When no memory shares a word with the question, the small model's nearest ones are not enough: gibberish
    sits at similarity 0.4-0.6 to everything. A close paraphrase still comes back."""
    minilm_mem.add_many([{"text": t} for t in (
        "The CI cache key uses the lockfile hash.", "Use httpx, not requests, for new HTTP code.",
        "The frontend is built with Vite and React 18.", "Redis holds the session cache with a 30 minute TTL.",
        "Secrets live in Vault under kv/prod.", "The billing job runs nightly at 02:00 UTC.")], scope=DEV)
    for question in ("zzzz qqqq", "asdf jkl", "lorem ipsum dolor sit amet", "foo bar baz"):
        assert minilm_mem.search(question, scope=DEV, limit=5) == [], question
    hits = minilm_mem.search("how long do logins stay cached?", scope=DEV, limit=5)
    assert hits and hits[0].record.text.startswith("Redis holds the session cache")
