"""The LLM distiller's entities and relations: the one extraction call returns them with each memory, and what
survives parsing, redaction and the "said in the text" check is linked by the same resolver as the keyless
extractor's. Through ``Memory.remember()`` on the real core (embedded store) with the real ``openai`` client
against the scripted OpenAI-compatible server on 127.0.0.1 (``tests/openai_server.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openai_server import OpenAIServer
from remem import Memory, Scope
from remem.core.distill.llm_claims import MAX_NAME_CHARS, kind_of, parse_entities, parse_relations
from remem.core.distill.llm_distiller import LLMDistiller

ACME = Scope(tenant="acme", user="dana")
SECRET = "ghp_" + "R8xk2LmQ9vTz4WcY7bNp3HdJ6fGs1AeU5oIi"


@pytest.fixture
def llm(srv: OpenAIServer) -> LLMDistiller:
    return LLMDistiller(model="test-mini", base_url=srv.base_url, api_key="test-key", max_retries=0)


def memory(text: str, entities: Any = (), relations: Any = (), kind: str = "fact") -> dict[str, Any]:
    return {"text": text, "kind": kind, "tags": [], "importance": 6,
            "entities": list(entities) if isinstance(entities, tuple) else entities,
            "relations": list(relations) if isinstance(relations, tuple) else relations}


def ent(name: Any, type_: Any) -> dict[str, Any]:
    return {"name": name, "type": type_}


def rel(subject: Any, predicate: Any, obj: Any, since: Any = "") -> dict[str, Any]:
    return {"subject": subject, "predicate": predicate, "object": obj, "since": since}


def said(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def kinds(mem: Memory) -> dict[str, str]:
    return {e.name: e.kind for e in mem.entities(scope=ACME, limit=200)}


def disk(mem: Memory) -> bytes:
    return b"".join(p.read_bytes() for p in Path(mem.backend.location).rglob("*") if p.is_file())


def test_the_llms_entities_are_linked_with_its_types_in_the_one_extraction_call(mem: Memory, srv: OpenAIServer,
                                                                                llm: LLMDistiller) -> None:
    srv.reply({"memories": [
        memory("The team moved invoicing to Kestrel in May.", [ent("Kestrel", "product")]),
        memory("Billing events go through ledgerd before Acme Corp sees them.",
               [ent("ledgerd", "service"), ent("Acme Corp", "person")]),
    ], "summary": "Invoicing moved to Kestrel."})
    res = mem.remember(said("We moved invoicing to Kestrel in May.",
                            "Noted. Billing events go through ledgerd before Acme Corp sees them."),
                       scope=ACME, session="s1", distiller=llm)
    assert len(res.added) == 2 and not res.queued
    found = kinds(mem)
    assert found["Kestrel"] == "product"  # a bare capitalised word: the keyless extractor guessed a person
    assert found["ledgerd"] == "service"  # a name the keyless extractor has no rule for, linked with its type
    assert found["Acme Corp"] == "org"  # the keyless extractor's cue (the suffix) wins over the LLM's type
    linked = {r.memory_id for r in mem.about("ledgerd", scope=ACME).current}
    assert linked == {r.id for r in res.added if "ledgerd" in r.text}
    # no extra request: one extraction call (nothing similar stored, so no reconciliation), which asked for them
    assert srv.count("chat") == 1
    item = srv.requests("chat")[0]["response_format"]["json_schema"]["schema"]["properties"]["memories"]["items"]
    assert {"entities", "relations"} <= set(item["required"])


def test_malformed_entities_and_relations_are_dropped_and_every_memory_kept(mem: Memory, srv: OpenAIServer,
                                                                             llm: LLMDistiller) -> None:
    srv.reply(json.dumps({"memories": [
        memory("Dana maintains the ingest worker.", "not a list", {"subject": "Dana"}),
        memory("Priya owns the billing API.",
               [ent("Priya", "galaxy"), ent("x" * 300, "person"), ent(42, "person"), "Priya", ent("", "org"),
                ent("billing API", "Software Service"), ent("User", "person")],
               [rel("Priya", "owns", "billing API", "sometime"), rel("Priya", None, "billing API"),
                rel(["Priya"], "owns", "billing API"), rel("Priya", "owns", "Priya"), 7]),
        {"text": "Deploys happen on Fridays.", "kind": "fact", "tags": [], "importance": 6},
    ], "summary": "Who owns what."}))  # a raw string: the scripted server does not check it against the schema
    res = mem.remember(said("Dana maintains the ingest worker. Priya owns the billing API. Deploys are Fridays."),
                       scope=ACME, session="s1", distiller=llm)
    assert sorted(r.text for r in res.added) == ["Dana maintains the ingest worker.", "Deploys happen on Fridays.",
                                                 "Priya owns the billing API."]
    priya = next(r for r in res.added if r.text.startswith("Priya"))
    assert priya.metadata["llm_entities"] == [{"name": "billing API", "kind": "service"}]  # "Software Service"
    assert priya.metadata["llm_relations"] == [{"subject": "Priya", "predicate": "owns", "object": "billing API"}]
    found = kinds(mem)
    assert found["Dana"] == "person" and found["billing API"] == "service"
    assert not any(len(n) > MAX_NAME_CHARS or n == "User" for n in found)


def test_an_invented_name_is_refused(mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    srv.reply({"memories": [
        # "quuxd" is in the memory the LLM wrote, never in the conversation: invented
        memory("Payments are reconciled by quuxd nightly.", [ent("quuxd", "service"), ent("payments", "service")],
               [rel("quuxd", "reconciles", "payments")]),
        # "ledgerd" was said, but not in this memory: it cannot be linked to it
        memory("Refunds are retried three times.", [ent("ledgerd", "service")]),
    ], "summary": "Payments."})
    res = mem.remember(said("Payments are reconciled nightly. Refunds go through ledgerd and are retried three "
                            "times."), scope=ACME, session="s1", distiller=llm)
    assert len(res.added) == 2
    assert all("llm_entities" not in r.metadata or r.metadata["llm_entities"] == [
        {"name": "payments", "kind": "service"}] for r in res.added)
    assert not any("llm_relations" in r.metadata for r in res.added)  # its subject was invented
    found = kinds(mem)
    assert "quuxd" not in found and "ledgerd" not in found
    # metadata written by hand names nothing the text does not say either
    mem.add("The nightly job is slow.", scope=ACME, metadata={"llm_entities": [{"name": "Gotham", "kind": "place"}]})
    assert "Gotham" not in kinds(mem)


def test_a_secret_in_a_returned_name_never_reaches_disk(mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    srv.reply({"memories": [
        memory(f"CI pushes with the token {SECRET} to the build cache.",
               [ent(SECRET, "product"), ent("build cache", "service"), ent(f"cache {SECRET}", "host")],
               [rel("build cache", f"unlocked by {SECRET}", "CI"), rel(SECRET, "opens", "build cache")]),
    ], "summary": "CI and the build cache."})
    res = mem.remember(said("CI pushes to the build cache with the usual token."), scope=ACME, session="s1",
                       distiller=llm)
    assert len(res.added) == 1 and SECRET not in res.added[0].text and res.redactions
    assert res.added[0].metadata["llm_entities"] == [{"name": "build cache", "kind": "service"}]
    names = [n for e in mem.entities(scope=ACME, limit=200) for n in (e.name, *e.aliases)]
    assert "build cache" in names and not any("ghp_" in n for n in names)
    mem.compact()
    assert SECRET.encode() not in disk(mem) and b"ghp_" not in disk(mem)


def test_llm_and_keyless_mentions_of_one_name_resolve_to_one_entity(mem: Memory, srv: OpenAIServer,
                                                                    llm: LLMDistiller) -> None:
    mem.add("Kestrel sends the invoices every Monday.", scope=ACME)  # keyless: a guessed person
    srv.reply({"memories": [memory("Kestrel runs on the shared Postgres cluster.", [ent("Kestrel", "service")])],
               "summary": "Kestrel."})
    mem.remember(said("Kestrel runs on the shared Postgres cluster."), scope=ACME, session="s1", distiller=llm)
    kestrels = [e for e in mem.entities(scope=ACME, limit=200) if e.name == "Kestrel"]
    assert [e.kind for e in kestrels] == ["service"]  # one entity, its guessed type corrected
    assert len(mem.about("Kestrel", scope=ACME).current) >= 2  # both memories, the keyless one included


async def test_the_async_path_links_the_llms_entities_too(store_factory, srv: OpenAIServer,
                                                          llm: LLMDistiller) -> None:
    from remem import AsyncMemory

    srv.reply({"memories": [memory("Orders are packed by pickd.", [ent("pickd", "service")])], "summary": "x"})
    async with AsyncMemory(path=store_factory("none"), embedder="none") as amem:
        res = await amem.remember(said("Orders are packed by pickd."), scope=ACME, session="a", distiller=llm)
        assert len(res.added) == 1
        assert {e.name: e.kind for e in await amem.entities(scope=ACME)}.get("pickd") == "service"


@pytest.mark.parametrize("word,kind", [("Organization", "org"), ("software library", "product"),
                                       ("GitHub repository", "repo"), ("city", "place"), ("ticket", "issue"),
                                       ("hostname", "host"), ("person", "person"), ("galaxy", None), (3, None)])
def test_a_models_type_word_maps_to_the_closest_kind_or_none(word: Any, kind: str | None) -> None:
    assert kind_of(word) == kind


def test_relations_are_typed_by_the_memorys_entities_and_dated() -> None:
    entities = parse_entities([ent("Dana", "person"), ent("the ingest worker", "service"), ent("Dana", "org")])
    assert [(e.name, e.kind) for e in entities] == [("Dana", "person"), ("the ingest worker", "service")]
    [claim] = parse_relations([rel("Dana", "Maintains", "ingest worker", "2025-03"),
                               rel("Dana", "maintains", "ingest worker", "2025-03")], entities)
    assert (claim.subject, claim.predicate, claim.object) == ("Dana", "maintains", "ingest worker")
    assert (claim.subject_kind, claim.object_kind) == ("person", "service")
    assert claim.since is not None and (claim.since.year, claim.since.month) == (2025, 3)


def test_the_llms_relation_is_dated_in_about_and_followed_by_recall(mem: Memory, srv: OpenAIServer,
                                                                  llm: LLMDistiller) -> None:
    """"is the on-call owner for" is no verb phrase the keyless patterns know: only the LLM says Dana maintains
    the ledger service. A question through that relation ("the service Dana maintains") then raises what is
    known about the service, against the same store where the LLM named no relation."""
    question = "What does the service Dana maintains write to?"
    ranks = {}
    for tenant, relations in (("llm", [rel("Dana", "maintains", "ledger service", "2025-03-01")]), ("none", [])):
        scope = Scope(tenant=tenant, user="dana")
        for text in ("The ledger service writes its batches to Redis Streams.", "The billing worker writes to Kafka.",
                     "The search indexer writes to Elasticsearch.", "Priya maintains the billing worker.",
                     "The export job writes nightly files to S3."):
            mem.add(text, scope=scope)
        srv.reply({"memories": [memory("Dana is the on-call owner for the ledger service.",
                                       [ent("Dana", "person"), ent("ledger service", "service")], relations)],
                   "summary": "On-call duties."})
        mem.remember(said("Dana is the on-call owner for the ledger service since March."), scope=scope,
                     session="s1", distiller=llm, episodes=False)
        texts = [h.record.text for h in mem.search(question, scope=scope, limit=5)]
        ranks[tenant] = texts.index("The ledger service writes its batches to Redis Streams.")
    assert ranks["llm"] < ranks["none"] and ranks["llm"] <= 1
    profile = mem.about("Dana", scope=Scope(tenant="llm", user="dana"))
    [said_by_llm] = [r for r in profile.relations if r.predicate == "maintains"]
    assert (said_by_llm.subject, said_by_llm.object) == ("Dana", "ledger service")
    assert said_by_llm.since is not None and said_by_llm.since.date().isoformat() == "2025-03-01"
    assert said_by_llm.until is None and "- [2025-03-01] Dana maintains ledger service" in profile.text
    assert not [r for r in mem.about("Dana", scope=Scope(tenant="none", user="dana")).relations
                if r.predicate == "maintains"]
