"""Relations between entities: keyless patterns at write time, validity windows (superseded, never deleted),
as_of, erasure down to the disk, export/import, rebuild, the one-hop recall, scope isolation; on the embedded
store and on qdrant-client's local mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem import Memory, Scope
from remem.core.entities import extract
from remem.core.entities.relations import claims, record_claims
from remem.core.entities.types import RelationClaim
from tests.test_entities import _story  # Dana maintains the worker; it uses Kafka, then moves to Redis Streams

ACME = Scope(tenant="acme")


def triples(text: str) -> set[tuple[str, str, str]]:
    return {(c.subject, c.predicate, c.object) for c in claims(text, extract(text))}


@pytest.mark.parametrize("text, expected", [
    ("Dana Whitfield maintains the ingest worker.", {("Dana Whitfield", "maintains", "ingest worker")}),
    ("The billing API is maintained by Priya Raman.", {("Priya Raman", "maintains", "billing API")}),
    ("The ingest worker moved to Redis Streams.", {("ingest worker", "moved_to", "Redis Streams")}),
    ("The ingest worker migrated to Redis Streams in May.", {("ingest worker", "moved_to", "Redis Streams")}),
    ("The checkout service depends on the payments gateway.",
     {("checkout service", "depends_on", "payments gateway")}),
    ("Priya Raman works at Globex Corp.", {("Priya Raman", "works_at", "Globex Corp")}),
    ("Dana moved to Berlin last year.", {("Dana", "lives_in", "Berlin")}),
    ("Dana reports to Priya Raman.", {("Dana", "reports_to", "Priya Raman")}),
    ("The ingest worker uses Kafka as its queue.", {("ingest worker", "uses", "Kafka")}),
    ("Is the cron runner on call? Dana Whitfield, who joined in May, maintains the ingest worker.", set()),
    ("Who knows? Dana Whitfield maintains the ingest worker.", {("Dana Whitfield", "maintains", "ingest worker")}),
])
def test_patterns_find_the_relation_a_sentence_states(text: str, expected: set) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize("text", [
    "Dana no longer maintains the ingest worker.",  # a negation is not the relation
    "Dana Whitfield and the ingest worker were both mentioned in the retro.",
    "If Dana Whitfield maintains the ingest worker, who reviews it?",  # a condition, not a fact
    "Does Dana Whitfield maintain the ingest worker? Maybe Priya Raman maintains the ingest worker.",
    "Dana Whitfield, who leads the platform team, owns the deploy pipeline.",  # the team is no entity: nothing
    "Caroline went to the LGBTQ support group with Melanie.",
    "Der Ingest-Dienst läuft jetzt auf Redis Streams und Dana wartet ihn.",
    "Dana 维护 ingest worker，它使用 Redis Streams。",
    "Lunch was pasta at noon.",
    "",
])
def test_patterns_claim_nothing_without_a_stated_relation(text: str) -> None:
    assert triples(text) == set()


def _facts(profile) -> set[tuple[str, str, str, str | None]]:
    return {(r.subject, r.predicate, r.object, r.until.date().isoformat() if r.until else None)
            for r in profile.relations}


def test_a_superseded_memory_closes_its_relations_which_are_kept_and_as_of_shows_them(any_mem: Memory) -> None:
    ids = _story(any_mem)
    p = any_mem.about("ingest worker", scope=ACME)
    assert _facts(p) == {("Dana Whitfield", "maintains", "ingest worker", None),
                         ("ingest worker", "moved_to", "Redis Streams", None),
                         ("ingest worker", "uses", "Kafka", "2026-05-01")}
    by = {r.predicate: r for r in p.relations}
    assert by["uses"].superseded_by == by["moved_to"].id and by["uses"].sources == (ids["kafka"],)
    assert by["maintains"].sources == (ids["maint"],) and by["maintains"].since.date().isoformat() == "2026-03-02"
    assert "Relations now:" in p.text and "ingest worker moved to Redis Streams" in p.text
    assert "[2026-03-05 until 2026-05-01] ingest worker uses Kafka" in p.text
    assert {r.name: r.via for r in p.related}["Dana Whitfield"] == ("maintains",)
    then = any_mem.about("ingest worker", scope=ACME, as_of="2026-04-01")
    assert _facts(then) == {("Dana Whitfield", "maintains", "ingest worker", None),
                            ("ingest worker", "uses", "Kafka", "2026-05-01")}
    assert "Redis Streams" not in then.text and "Relations that changed:" not in then.text
    before = any_mem.about("ingest worker", scope=ACME, as_of="2026-03-03")
    assert {r.predicate for r in before.relations} == {"maintains"}
    from remem.core.recall.tokens import count_tokens
    assert count_tokens(any_mem.about("ingest worker", scope=ACME, token_budget=80).text) <= 80


def test_a_single_valued_relation_is_closed_by_a_new_object_in_any_order(any_mem: Memory) -> None:
    later = any_mem.add("Priya Raman moved to Lisbon.", scope=ACME, valid_from="2026-06-01T00:00:00Z")
    any_mem.add("Priya Raman lives in Berlin.", scope=ACME, valid_from="2025-01-10T00:00:00Z")  # written after
    any_mem.add("Priya Raman uses Vim.", scope=ACME, valid_from="2025-02-01T00:00:00Z")
    any_mem.add("Priya Raman uses Emacs.", scope=ACME, valid_from="2025-03-01T00:00:00Z")  # uses: many at once
    p = any_mem.about("Priya Raman", scope=ACME)
    assert _facts(p) == {("Priya Raman", "lives_in", "Lisbon", None), ("Priya Raman", "lives_in", "Berlin", "2026-06-01"),
                         ("Priya Raman", "uses", "Vim", None), ("Priya Raman", "uses", "Emacs", None)}
    berlin = next(r for r in p.relations if r.object == "Berlin")
    assert berlin.superseded_by == next(r.id for r in p.relations if r.object == "Lisbon")
    assert next(r for r in p.relations if r.object == "Lisbon").sources == (later.id,)
    then = any_mem.about("Priya Raman", scope=ACME, as_of="2026-01-01")  # Berlin held then; Lisbon was to come
    assert {r.object for r in then.relations if r.predicate == "lives_in"} == {"Berlin"}
    assert "- [2025-01-10] Priya Raman lives in Berlin" in then.text and "Lisbon" not in then.text


def test_the_hop_answers_through_the_relation_where_plain_recall_does_not(any_mem: Memory) -> None:
    _story(any_mem)
    for i in range(30):
        any_mem.add(f"Standup note {i}: which queue is full on the board, what does everyone use today?", scope=ACME)
    question = "What queue does the service Dana maintains use?"  # names neither the worker nor the answer
    plain = [h.record.text for h in any_mem.with_settings(relation_weight=0).search(question, scope=ACME, limit=3)]
    hop = [h.record.text for h in any_mem.search(question, scope=ACME, limit=3)]
    assert "The ingest worker moved to Redis Streams." not in plain
    assert "The ingest worker moved to Redis Streams." in hop
    assert "The ingest worker uses Kafka as its queue." not in hop  # superseded: not true now
    assert "Redis Streams" in any_mem.context(question, scope=ACME, token_budget=200)
    # the other way round: from the worker, through "moved to", to what the queue's memories say
    any_mem.add("Redis Streams retention is set to seven days.", scope=ACME)
    asked = "How long does the queue the ingest worker moved to keep messages?"
    assert "Redis Streams retention is set to seven days." in [
        h.record.text for h in any_mem.search(asked, scope=ACME, limit=5)]
    # off with entities, as every entity signal
    assert "The ingest worker moved to Redis Streams." not in [
        h.record.text for h in any_mem.with_settings(entities=False).search(question, scope=ACME, limit=3)]


def test_relations_stay_in_their_tenant_and_user(any_mem: Memory) -> None:
    _story(any_mem)
    globex, alice, bob = Scope(tenant="globex"), Scope(tenant="acme", user="alice"), Scope(tenant="acme", user="bob")
    any_mem.add("Dana Whitfield maintains the billing API.", scope=globex)
    any_mem.add("Dana Whitfield owns the search indexer.", scope=alice)
    assert {(r.predicate, r.object) for r in any_mem.about("Dana Whitfield", scope=globex).relations} == \
        {("maintains", "billing API")}
    assert "owns" not in {r.predicate for r in any_mem.about("Dana Whitfield", scope=bob).relations}
    assert ("owns", "search indexer") in {(r.predicate, r.object)
                                          for r in any_mem.about("Dana Whitfield", scope=alice).relations}
    for i in range(10):
        any_mem.add(f"Globex note {i}: the queue board is full today.", scope=globex)
    hits = any_mem.search("What queue does the service Dana maintains use?", scope=globex, limit=5)
    assert hits and all(h.record.scope.tenant == "globex" for h in hits)
    assert "Redis Streams" not in " ".join(h.record.text for h in hits)


def test_forgetting_deletes_relations_only_it_said_and_compact_takes_them_off_disk(memory_factory) -> None:
    mem = memory_factory("none")
    gone = mem.add("Quillon Marchetti maintains the frobnicator daemon.", scope=ACME)
    twice = mem.add("Zephyrine Okonkwo owns the payments gateway.", scope=ACME)
    again = mem.add("Zephyrine Okonkwo owns the payments gateway, since the reorg.", scope=ACME)
    assert {r.object for r in mem.about("Quillon Marchetti", scope=ACME).relations} == {"frobnicator daemon"}
    [owned] = mem.about("Zephyrine Okonkwo", scope=ACME).relations
    assert set(owned.sources) == {twice.id, again.id}
    mem.forget(gone.id, scope=ACME)
    mem.forget(twice.id, scope=ACME)
    assert mem.about("Quillon Marchetti", scope=ACME).entity is None
    [owned] = mem.about("Zephyrine Okonkwo", scope=ACME).relations
    assert owned.sources == (again.id,)
    from remem.core.entities.relations import lifecycle
    from remem.core.store.backends.base import FilterSpec

    ridx = lifecycle.index(mem._connection.local)
    assert [f.payload["sources"] for f in ridx.scan(FilterSpec())] == [[again.id]]
    mem.compact()
    folder = Path(mem.backend.location) / "relations"
    blob = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert gone.id.encode() not in blob and twice.id.encode() not in blob
    assert again.id.encode() in blob


def test_export_import_and_rebuild_carry_the_relations(memory_factory, store_factory, tmp_path: Path) -> None:
    src, dst = memory_factory("none"), memory_factory("none")
    ids = _story(src)  # and one relation only an LLM saw in the text: the file must carry it
    record_claims(src._connection.local, ACME, [RelationClaim("ingest worker", "depends on", "Vault", "service",
                                                              "product")], ids["maint"], "2026-03-02T10:00:00Z")
    src.export(tmp_path / "x.jsonl.gz", scope=ACME)
    dst.import_(tmp_path / "x.jsonl.gz", scope=ACME)
    a, b = src.about("ingest worker", scope=ACME), dst.about("ingest worker", scope=ACME)
    assert _facts(b) == _facts(a) and len(_facts(a)) == 4 and ("ingest worker", "depends_on", "Vault", None) in _facts(b)
    assert dst.import_(tmp_path / "x.jsonl.gz", scope=ACME) and _facts(dst.about("ingest worker", scope=ACME)) == \
        _facts(a)  # imported twice: the same relations
    assert {(r.predicate, r.since, r.sources) for r in b.relations} == {(r.predicate, r.since, r.sources)
                                                                       for r in a.relations}
    path = store_factory("none")  # a store written without entities builds its relations with link_entities
    with Memory(path=path, embedder="none", entities=False) as mem:
        _story(mem)
    with Memory(path=path, embedder="none") as mem:
        assert mem.about("ingest worker", scope=ACME).entity is None
        mem.link_entities(scope=ACME)
        assert _facts(mem.about("ingest worker", scope=ACME)) == _facts(a) - {("ingest worker", "depends_on", "Vault",
                                                                              None)}
    path = store_factory("none")  # or with remem reembed, which writes every memory again
    with Memory(path=path, embedder="none", entities=False) as mem:
        _story(mem)
    with Memory(path=path, embedder="none") as mem:
        mem.reembed()
        assert ("ingest worker", "moved_to", "Redis Streams", None) in _facts(mem.about("ingest worker", scope=ACME))


def test_record_claims_stores_what_an_llm_hands_over(mem: Memory) -> None:
    rec = mem.add("Standup: the ledger service changed hands today.", scope=ACME)
    engine = mem._connection.local
    got = record_claims(engine, ACME, [
        RelationClaim("ledger service", "maintained by", "Pat Quinlan", "service", "person"),
        RelationClaim("ledger service", "Runs on", "Postgres", "service", "product"),
        RelationClaim("", "owns", "Nobody"),  # no subject: skipped
        "not a claim",  # type: ignore[list-item]
    ], rec.id, "2026-02-01T00:00:00+00:00")
    assert len(got) == 2
    facts = _facts(mem.about("ledger service", scope=ACME))
    assert facts == {("Pat Quinlan", "maintains", "ledger service", None), ("ledger service", "runs_on", "Postgres", None)}
    assert record_claims(engine, ACME, [RelationClaim("ledger service", "maintained by", "Pat Quinlan")],
                         rec.id, "2026-02-01T00:00:00+00:00") == [got[0]]  # said again: the same record
    assert record_claims(mem.with_settings(entities=False)._connection.local, ACME, [
        RelationClaim("a service", "uses", "b")], rec.id) == []


def test_cli_about_json_lists_the_relations(store_factory) -> None:
    from tests.test_cli import run

    store = store_factory("none")
    run("add", "Dana Whitfield maintains the ingest worker.", "--tenant", "acme", store=store)
    import json

    out = json.loads(run("about", "ingest worker", "--tenant", "acme", "--json", store=store).stdout)
    assert [(r["subject"], r["predicate"], r["object"], r["until"]) for r in out["relations"]] == [
        ("Dana Whitfield", "maintains", "ingest worker", None)]
    assert "Dana Whitfield maintains ingest worker" in out["text"]


def test_an_edited_memory_no_longer_supports_what_it_stopped_saying(mem: Memory) -> None:
    told = mem.add("Dana Whitfield maintains the ingest worker.", scope=ACME)
    mem.add("Priya Raman owns the ingest worker.", scope=ACME)
    mem.update(told.id, text="Dana Whitfield reviewed the ingest worker.", scope=ACME)
    assert {(r.subject, r.predicate) for r in mem.about("ingest worker", scope=ACME).relations} == {
        ("Priya Raman", "owns")}
    mem.update(told.id, text="Dana Whitfield leads the ingest worker.", scope=ACME)
    assert {(r.subject, r.predicate) for r in mem.about("ingest worker", scope=ACME).relations} == {
        ("Priya Raman", "owns"), ("Dana Whitfield", "leads")}


def test_relations_cross_the_service(store_factory, monkeypatch) -> None:
    from remem.core.entities.types import Relation
    from remem.core.service.client import stop_service

    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")  # a leaked service still goes away by itself
    path = store_factory("none")
    try:
        with Memory(path=path, embedder="none", service="require") as mem:
            assert mem.remote
            _story(mem)
            p = mem.about("ingest worker", scope=ACME)
            assert all(isinstance(r, Relation) for r in p.relations)
            assert _facts(p) == {("Dana Whitfield", "maintains", "ingest worker", None),
                                 ("ingest worker", "moved_to", "Redis Streams", None),
                                 ("ingest worker", "uses", "Kafka", "2026-05-01")}
            hits = mem.search("What queue does the service Dana maintains use?", scope=ACME, limit=3)
            assert "The ingest worker moved to Redis Streams." in [h.record.text for h in hits]
    finally:
        stop_service(path, timeout=5, wait=False)


def test_the_hop_rides_with_the_entity_boost_and_relation_weight_0_turns_it_off(mem: Memory) -> None:
    from remem.core.entities import hooks
    from remem.core.entities.relations.hop import recall_with_relations

    _story(mem)
    question = "What queue does the service Dana maintains use?"
    engine = mem._connection.local
    worker = mem.about("ingest worker", scope=ACME).entity.id
    redis = mem.about("Redis Streams", scope=ACME).entity.id
    dana = mem.about("Dana", scope=ACME).entity.id
    terms, unknown = recall_with_relations(engine, question, ACME)
    assert not unknown and dict(zip(*terms)) == {hooks.entity_token(worker): 1.0, hooks.entity_token(redis): 0.5}
    boosted = mem.with_settings(entity_weight=0.5)._connection.local
    both = dict(zip(*recall_with_relations(boosted, question, ACME)[0]))
    assert both[hooks.entity_token(dana)] == 1.0 and both[hooks.entity_token(worker)] == 1.0
    assert both[hooks.entity_token(redis)] == 0.5
    off = mem.with_settings(entity_weight=0.5, relation_weight=0)._connection.local
    assert hooks.entity_token(redis) not in dict(zip(*recall_with_relations(off, question, ACME)[0]))
    assert recall_with_relations(mem.with_settings(relation_weight=0)._connection.local, question, ACME) == (None,
                                                                                                             False)


def test_the_hop_survives_the_dense_relevance_floor(memory_factory) -> None:
    mem = memory_factory("minilm")  # the default local model: a hit sharing no word needs a dense similarity
    _story(mem)
    question = "What queue does the service Dana maintains use?"
    assert "The ingest worker moved to Redis Streams." in [h.record.text for h in mem.search(question, scope=ACME)]
    assert "The ingest worker moved to Redis Streams." not in [  # the same run without the hop: under the floor
        h.record.text for h in mem.with_settings(relation_weight=0).search(question, scope=ACME)]
    assert mem.search("What is the capital of France?", scope=ACME) == []  # the floor still holds elsewhere
