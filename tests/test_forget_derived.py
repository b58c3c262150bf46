"""Forgetting a message forgets what was distilled from its words: its memories, and its part of the summary.

What users rely on: after ``forget`` of one message (by id, as `remem forget ID` and the inspector do) or of
several, no record of the store holds a word only those messages said: not the memory the keyless distiller or
an LLM made of it, not the session summary (an LLM's summary names only the first and latest messages it saw).
A fact also said in a message still stored survives; the summary is rewritten, not forgotten, so a live capture
of the session goes on where it was.
"""

from __future__ import annotations

import json
from typing import Any

from openai_server import OpenAIServer

from remem import Memory, Scope
from remem.core.distill.pipeline import LLMDistiller

DANA = Scope(tenant="acme", user="dana")


def said(i: int, role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text, "id": f"m{i}"}


SESSION = [said(0, "user", "Our orders service runs on Postgres 16 in eu-west-1."),
           said(1, "assistant", "Noted. Why not MySQL for the orders service?"),
           said(2, "user", "MySQL had replication issues. Also my diagnosis is narcolepsy, keep that between us."),
           said(3, "assistant", "Understood, I will keep the replication history in mind."),
           said(4, "user", "We lint everything with ruff in pre-commit.")]


def stored(mem: Memory) -> str:
    return "\n".join(json.dumps(r.as_dict()) for r in mem.iter_records(DANA))


def message(mem: Memory, mid: str) -> Any:
    [rec] = [r for r in mem.iter_records(DANA) if r.kind == "episode" and r.sources == (mid,)]
    return rec


def test_a_message_forgotten_by_id_takes_its_memories_and_its_words_in_the_summary(any_mem: Memory) -> None:
    any_mem.remember(SESSION, scope=DANA, session="s1", distiller="keyless")
    assert "narcolepsy" in stored(any_mem) and "replication issues" in stored(any_mem)
    assert any_mem.forget(message(any_mem, "m2").id, scope=DANA) is True
    assert "narcolepsy" not in stored(any_mem) and "issues" not in stored(any_mem)
    assert not any_mem.search("diagnosis narcolepsy", scope=DANA, limit=10)
    [summary] = [r for r in any_mem.iter_records(DANA) if r.kind == "summary"]
    assert "Postgres 16" in summary.text and "m2" not in summary.sources  # the rest of it stays
    assert any("ruff" in r.text for r in any_mem.iter_records(DANA) if r.kind == "fact")  # other facts stay


def test_the_summary_kept_lets_a_live_capture_go_on_where_it_was(any_mem: Memory) -> None:
    any_mem.remember(SESSION[:3], scope=DANA, session="live", distiller="keyless")
    any_mem.forget(message(any_mem, "m2").id, scope=DANA)
    any_mem.remember(SESSION[3:], scope=DANA, session="live", distiller="keyless")
    positions = {r.sources[0]: r.metadata["position"] for r in any_mem.iter_records(DANA) if r.kind == "episode"}
    assert positions == {"m0": 0, "m1": 1, "m3": 3, "m4": 4}
    assert "narcolepsy" not in stored(any_mem)


def test_a_fact_said_again_in_a_message_still_stored_survives(any_mem: Memory) -> None:
    twice = [said(0, "user", "We deploy the billing service with ArgoCD from the main branch."),
             said(1, "assistant", "Got it."),
             said(2, "user", "Reminder: we deploy the billing service with ArgoCD from the main branch.")]
    any_mem.remember(twice, scope=DANA, session="s2", distiller="keyless")
    from_first = [r.id for r in any_mem.iter_records(DANA) if r.kind == "fact" and "m0" in r.sources]
    assert from_first
    any_mem.forget(message(any_mem, "m2").id, scope=DANA)
    assert set(from_first) <= {r.id for r in any_mem.iter_records(DANA)}


def test_a_dry_run_names_the_memories_that_would_go_and_forgets_nothing(any_mem: Memory) -> None:
    any_mem.remember(SESSION, scope=DANA, session="s1", distiller="keyless")
    before = stored(any_mem)
    dry = any_mem.forget(scope=DANA, where={"message_id": ["m2"]})
    gone = [r for r in any_mem.iter_records(DANA) if r.id in dry.ids]
    assert {r.kind for r in gone} == {"episode", "fact"} and any("narcolepsy" in r.text for r in gone if r.kind == "fact")
    assert stored(any_mem) == before


def test_an_llm_summary_loses_the_words_of_a_message_it_does_not_name(mem: Memory, srv: OpenAIServer) -> None:
    llm = LLMDistiller(model="test-mini", base_url=srv.base_url, api_key="test-key", max_retries=0)
    long = [said(i, "user" if i % 2 == 0 else "assistant", f"Step {i}: we tuned the billing worker pool.")
            for i in range(60)]
    long[30] = said(30, "user", "The staging vault token is hunter2zq, rotate it monthly.")
    srv.reply({"memories": [{"text": "The staging vault token is rotated monthly.", "kind": "fact", "tags": [],
                             "importance": 5}],
               "summary": "We tuned the billing worker pool. The vault token hunter2zq is rotated monthly."})
    mem.remember(long, scope=DANA, session="llm", distiller=llm)
    [summary] = [r for r in mem.iter_records(DANA) if r.kind == "summary"]
    assert "m30" not in summary.sources and "hunter2zq" in summary.text  # it names the first and latest only
    mem.forget(message(mem, "m30").id, scope=DANA)
    assert "hunter2zq" not in stored(mem) and "vault" not in stored(mem)
    [summary] = [r for r in mem.iter_records(DANA) if r.kind == "summary"]
    assert summary.text.startswith("We tuned the billing worker pool.")
