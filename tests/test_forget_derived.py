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

import pytest

from openai_server import OpenAIServer

from remem import ALL_TENANTS, Memory, Scope
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
                             "importance": 5, "entities": [], "relations": []}],
               "summary": "We tuned the billing worker pool. The vault token hunter2zq is rotated monthly."})
    mem.remember(long, scope=DANA, session="llm", distiller=llm)
    [summary] = [r for r in mem.iter_records(DANA) if r.kind == "summary"]
    assert "m30" not in summary.sources and "hunter2zq" in summary.text  # it names the first and latest only
    mem.forget(message(mem, "m30").id, scope=DANA)
    assert "hunter2zq" not in stored(mem) and "vault" not in stored(mem)
    [summary] = [r for r in mem.iter_records(DANA) if r.kind == "summary"]
    assert summary.text.startswith("We tuned the billing worker pool.")


def test_memories_of_messages_still_stored_stay_whatever_words_they_share(any_mem: Memory) -> None:
    """The keyless distiller writes "User prefers ..."; forgetting a message that says "user" or "prefers"
    takes none of the memories the other messages gave."""
    talk = [said(0, "user", "I prefer tabs over spaces in all our Go code."), said(1, "assistant", "Noted, tabs."),
            said(2, "user", "My name is Dana and I work at Acme."), said(3, "assistant", "Nice to meet you."),
            said(4, "user", "The user table in staging has 40 million rows; the team prefers partitions.")]
    any_mem.remember(talk, scope=DANA, session="s3", distiller="keyless")
    others = {r.id for r in any_mem.iter_records(DANA) if r.kind not in ("episode", "summary") and "m4" not in r.sources}
    assert len(others) >= 2
    any_mem.forget(message(any_mem, "m4").id, scope=DANA)
    assert others <= {r.id for r in any_mem.iter_records(DANA)} and "40 million" not in stored(any_mem)
    [summary] = [r for r in any_mem.iter_records(DANA) if r.kind == "summary"]
    assert "I prefer tabs" in summary.text  # its sentence quoting m0 is not cut for a word of m4


def test_a_fact_merged_from_two_sessions_survives_the_forget_of_one(any_mem: Memory) -> None:
    line = "We deploy the billing service with ArgoCD from the main branch."
    for s in ("a", "b"):
        any_mem.remember([said(0, "user", line) | {"id": f"{s}0"}, said(1, "assistant", "Got it.") | {"id": f"{s}1"}],
                         scope=DANA, session=f"deploy-{s}", distiller="keyless")
    [fact] = [r for r in any_mem.iter_records(DANA) if r.kind not in ("episode", "summary")]
    assert set(fact.sources) == {"a0", "b0"}  # one record, named by both messages
    any_mem.forget(message(any_mem, "a0").id, scope=DANA)
    assert any_mem.get(fact.id, scope=DANA).text == fact.text


def test_words_said_in_another_scope_do_not_keep_a_forgotten_message_s(any_mem: Memory) -> None:
    team, bob = Scope(tenant="acme"), Scope(tenant="acme", user="bob")
    any_mem.remember([said(0, "user", "We run the orders service on Postgres 16."), said(1, "assistant", "Noted."),
                      said(2, "user", "Customer Zorblax churned last week."), said(3, "assistant", "Logged.")],
                     scope=team, session="main", distiller="keyless")
    any_mem.remember([said(0, "user", "Customer Zorblax churned last week? Which one?") | {"id": "b0"}],
                     scope=bob, session="main", distiller="keyless")
    [gone] = [r for r in any_mem.iter_records(team) if r.scope == team and r.sources == ("m2",) and r.kind == "episode"]
    any_mem.forget(gone.id, scope=team)
    assert not [r for r in any_mem.iter_records(team) if r.scope == team and "Zorblax" in json.dumps(r.as_dict())]
    assert any("Zorblax" in r.text for r in any_mem.iter_records(bob))  # bob's own message is his


def test_the_summary_metadata_loses_the_files_a_forgotten_message_named(any_mem: Memory) -> None:
    any_mem.remember([said(0, "user", "Please fix the login bug in app.py today."),
                      said(1, "assistant", "Sure, looking at app.py now."),
                      said(2, "user", "Also check scripts/payroll_dump.py for the salary numbers."),
                      said(3, "assistant", "Done, the login bug is fixed.")], scope=DANA, session="s4", distiller="keyless")
    assert "payroll_dump" in stored(any_mem)
    any_mem.forget(message(any_mem, "m2").id, scope=DANA)
    assert "payroll" not in stored(any_mem) and "salary" not in stored(any_mem)
    [summary] = [r for r in any_mem.iter_records(DANA) if r.kind == "summary"]
    assert "app.py" in summary.text and summary.metadata["covered"] == 4  # the rest, and its bookkeeping


def test_a_summary_that_cannot_be_rewritten_leaves_the_message_to_forget_again(srv: OpenAIServer,
                                                                             tmp_path: Any) -> None:
    from remem.core.providers.embedders import OpenAIEmbedder

    emb = OpenAIEmbedder("text-embedding-3-small", base_url=srv.base_url, api_key="k", max_retries=0)
    mem = Memory(path=tmp_path / "s", embedder=emb, service="off", on_embed_error="refuse")
    mem.remember(SESSION, scope=DANA, session="s1", distiller="keyless")
    said_it = message(mem, "m2").id
    srv.fail("embeddings", status=500, times=1)  # the summary's new text cannot be embedded
    with pytest.raises(Exception):
        mem.forget(said_it, scope=DANA)
    assert mem.get(said_it, scope=DANA)  # not deleted: calling again retries
    assert mem.forget(said_it, scope=DANA) is True and "narcolepsy" not in stored(mem)
    mem.close()


def test_a_forgotten_message_sent_again_with_the_history_stays_forgotten(any_mem: Memory) -> None:
    """A restarted app sends a thread whole, the message forgotten since included: it is not stored, distilled,
    summarised or made the context of the message after it again; what is new in the capture is kept."""
    any_mem.remember(SESSION, scope=DANA, session="t", distiller="keyless")
    any_mem.forget(message(any_mem, "m2").id, scope=DANA)
    [summary] = [r for r in any_mem.iter_records(DANA) if r.kind == "summary"]
    assert summary.metadata["forgotten"] == ["m2"]  # ids only: no words of it
    before = stored(any_mem)
    res = any_mem.remember(SESSION[:4], scope=DANA, session="t", distiller="keyless")  # an older snapshot again
    assert (res.added, res.merged, res.episodes) == ([], [], []) and stored(any_mem) == before
    resent = [*SESSION, said(5, "user", "Deploys are frozen on Fridays, no exceptions.")]
    any_mem.remember(resent, scope=DANA, session="t", distiller="keyless")
    assert "narcolepsy" not in stored(any_mem) and "replication issues" not in stored(any_mem)
    assert not [r for r in any_mem.iter_records(DANA) if r.kind == "episode" and r.sources == ("m2",)]
    assert "Fridays" in message(any_mem, "m5").text
    [summary] = [r for r in any_mem.iter_records(DANA) if r.kind == "summary"]
    assert "Fridays" in summary.text and "Postgres 16" in summary.text and "m2" not in summary.sources
    # the next live capture still goes on where this one got to
    any_mem.remember([*resent, said(6, "user", "Staging runs on Kubernetes 1.31.")], scope=DANA, session="t",
                     distiller="keyless")
    assert "Kubernetes 1.31" in message(any_mem, "m6").text and "narcolepsy" not in stored(any_mem)
    assert [r.sources[0] for r in any_mem.iter_records(DANA) if r.kind == "episode"].count("m5") == 1


def test_a_forgotten_message_sent_again_is_not_queued_for_the_llm(mem: Memory, srv: OpenAIServer) -> None:
    from remem.core.distill.pending import queue_for

    mem.remember(SESSION, scope=DANA, session="q", distiller="keyless")
    mem.forget(message(mem, "m2").id, scope=DANA)
    llm = LLMDistiller(model="test-mini", base_url=srv.base_url, api_key="test-key", max_retries=0)
    srv.fail("chat", status=429, code="insufficient_quota")
    res = mem.remember([*SESSION, said(5, "user", "Deploys are frozen on Fridays.")], scope=DANA, session="q",
                       distiller=llm)
    assert res.queued
    [entry] = queue_for(mem).peek()
    assert "narcolepsy" not in json.dumps(entry.data) and "Fridays" in json.dumps(entry.data)
    assert "narcolepsy" not in stored(mem)


def _queued_text(mem: Memory) -> str:
    """Every byte the pending queue holds for ``mem``: its files on disk, or its entries in a server's collection."""
    from remem.core.distill.pending import PendingQueue, queue_for

    queue = queue_for(mem)
    if isinstance(queue, PendingQueue):
        return "".join(p.read_text() for p in queue.folder.iterdir() if p.is_file())
    return json.dumps([e.data for e in queue.peek(in_flight=True)])


def test_a_forget_takes_the_message_out_of_a_capture_queued_before_it(any_mem: Memory, srv: OpenAIServer) -> None:
    """An LLM outage queues the capture; forgetting one of its messages meanwhile leaves no copy of it in the
    queue, and the drain distils the rest."""
    llm = LLMDistiller(model="test-mini", base_url=srv.base_url, api_key="test-key", max_retries=0)
    srv.fail("chat", status=429, code="insufficient_quota")
    assert any_mem.remember(SESSION, scope=DANA, session="q", distiller=llm).queued
    assert "narcolepsy" in _queued_text(any_mem)
    any_mem.forget(message(any_mem, "m2").id, scope=DANA)
    queued = _queued_text(any_mem)
    assert "narcolepsy" not in queued and "ruff in pre-commit" in queued and "Postgres 16" in queued
    assert any_mem.drain_pending() == 1  # no LLM configured: the keyless distiller drains it
    assert "narcolepsy" not in stored(any_mem) and "Postgres 16" in stored(any_mem)
    assert _queued_text(any_mem) in ("", "[]")


def test_a_session_forgotten_whole_leaves_no_capture_queued(any_mem: Memory, srv: OpenAIServer) -> None:
    llm = LLMDistiller(model="test-mini", base_url=srv.base_url, api_key="test-key", max_retries=0)
    srv.fail("chat", status=429, code="insufficient_quota", times=2)
    assert any_mem.remember(SESSION, scope=DANA, session="q", distiller=llm).queued
    other = Scope(tenant="acme", user="eve")  # the same session name in another scope keeps its capture
    assert any_mem.remember(SESSION, scope=other, session="q", distiller=llm).queued
    assert any_mem.forget(scope=DANA, where={"metadata.session": "q"}, dry_run=False).count >= len(SESSION)
    assert any_mem.drain_pending() == 1  # eve's alone
    assert "narcolepsy" not in stored(any_mem)
    assert any("narcolepsy" in r.text for r in any_mem.iter_records(other))


def test_a_session_forgotten_whole_stays_forgotten_when_the_app_sends_it_again(any_mem: Memory) -> None:
    """A restarted app sends a thread whole after the user forgot the whole session: nothing of it comes back,
    what is new is kept, another user's session of the same name is untouched, and erasing the user leaves no
    trace, the forget's note included."""
    eve = Scope(tenant="acme", user="eve")
    any_mem.remember(SESSION, scope=DANA, session="w", distiller="keyless")
    any_mem.remember(SESSION, scope=eve, session="w", distiller="keyless")
    any_mem.forget(message(any_mem, "m1").id, scope=DANA)  # one message first: its note must carry over
    assert any_mem.forget(scope=DANA, where={"metadata.session": "w"}, dry_run=False).count >= len(SESSION)
    assert not any_mem.search("orders service Postgres", scope=DANA, limit=10)
    assert not any_mem.search("orders service Postgres", scope=DANA, limit=10, as_of="2020-01-01T00:00:00Z")
    assert not any_mem.list(scope=DANA) and any_mem.count(scope=DANA) == 0  # the note is no memory
    for word in ("Postgres", "MySQL", "narcolepsy", "ruff", "orders"):
        assert word not in stored(any_mem)  # the note holds message ids, no words
    resent = [*SESSION, said(5, "user", "Deploys are frozen on Fridays, no exceptions.")]
    any_mem.remember(resent, scope=DANA, session="w", distiller="keyless")
    for word in ("Postgres", "MySQL", "narcolepsy", "ruff", "orders"):
        assert word not in stored(any_mem)
    assert "Fridays" in message(any_mem, "m5").text
    assert [h.record.sources for h in any_mem.search("Deploys frozen Fridays", scope=DANA, limit=3)][0] == ("m5",)
    any_mem.remember([*resent, said(6, "user", "Staging runs on Kubernetes 1.31.")], scope=DANA, session="w",
                     distiller="keyless")  # the next live capture goes on from there
    assert "Kubernetes 1.31" in message(any_mem, "m6").text and "narcolepsy" not in stored(any_mem)
    assert any("narcolepsy" in r.text for r in any_mem.iter_records(eve))
    any_mem.forget(scope=DANA, dry_run=False)  # the user erased: no note is left either
    assert not list(any_mem.iter_records(DANA)) and any(True for _ in any_mem.iter_records(eve))
    assert any_mem.forget(scope=ALL_TENANTS, dry_run=True).count == len(list(any_mem.iter_records(ALL_TENANTS)))


def test_words_merged_into_a_memory_of_another_session_go_with_their_message(any_mem: Memory) -> None:
    """An LLM merges what a later session adds into the memory an earlier session gave (its sources then name
    both messages): forgetting the later message takes that memory too, while one whose words the earlier
    message says stays."""
    any_mem.remember([said(0, "user", "We deploy the billing service with ArgoCD.") | {"id": "a0"},
                      said(1, "assistant", "Noted.") | {"id": "a1"}], scope=DANA, session="deploy-a",
                     distiller="keyless")
    any_mem.remember([said(0, "user", "Billing deploys also need the Zorblax approval token.") | {"id": "b0"},
                      said(1, "assistant", "Understood.") | {"id": "b1"}], scope=DANA, session="deploy-b",
                     distiller="keyless")
    meta = {"session": "deploy-a", "distiller": "llm:test-mini"}  # as the LLM distiller's merge leaves it
    merged = any_mem.add("Billing deploys use ArgoCD and need the Zorblax approval token.", scope=DANA,
                         kind="fact", sources=["a0", "b0"], metadata=meta)
    kept = any_mem.add("The billing service is deployed with ArgoCD.", scope=DANA, kind="fact",
                       sources=["a0", "b0"], metadata=meta)
    res = any_mem.forget(scope=DANA, where={"sources": ["b0"]}, dry_run=True)
    assert merged.id in res.ids and kept.id in res.ids  # where={"sources": ...} takes every record naming it
    any_mem.forget(message(any_mem, "b0").id, scope=DANA)
    assert "Zorblax" not in stored(any_mem)
    assert any_mem.get(kept.id, scope=DANA).text == kept.text
