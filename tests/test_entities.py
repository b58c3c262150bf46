"""Entities: keyless extraction, resolution per scope, storage beside the memories, profiles, erasure, tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem import Memory, Scope
from remem.core.entities import extract
from remem.core.entities.extract import Mention
from remem.core.entities.names import key
from remem.core.entities.resolve import Known, resolve, stored_keys
from written import data_of

ACME = Scope(tenant="acme")


def kinds(text: str) -> dict[str, str]:
    return {m.name: m.kind for m in extract(text) if not m.tentative}


@pytest.mark.parametrize("text, expected", [
    ("Dana Whitfield maintains the ingest worker.", {"Dana Whitfield": "person", "ingest worker": "service"}),
    ("We moved to Python 3.12 and pinned numpy==1.26.4.", {"Python": "product", "numpy": "product"}),
    ("See PROJ-123 and issue #45 in acme/billing-api.", {"PROJ-123": "issue", "#45": "issue",
                                                         "acme/billing-api": "repo"}),
    ("Deploy from src/app/main.py to db-prod-01 and api.example.com.",
     {"src/app/main.py": "file", "db-prod-01": "host", "api.example.com": "host"}),
    ("I met Alice Johnson at Stanford University in San Francisco.",
     {"Alice Johnson": "person", "Stanford University": "org", "San Francisco": "place"}),
    ("Our events store is ClickHouse (aka CHouse).", {"events store": "service", "ClickHouse": "product"}),
])
def test_extraction_finds_typed_entities_from_names_identifiers_and_compounds(text: str,
                                                                               expected: dict[str, str]) -> None:
    found = kinds(text)
    for name, kind in expected.items():
        assert found.get(name) == kind, (name, found)


def test_extraction_keeps_versions_and_declared_aliases_and_skips_sentence_openers() -> None:
    ms = {m.key: m for m in extract("Yesterday we upgraded Kubernetes 1.29. Robert, also known as Bob, did it.")}
    assert ms["kubernetes"].version == "1.29"
    assert ms["robert"].aliases == ("Bob",)
    assert "yesterday" not in ms
    assert extract("Melanie painted a lake.")[0].tentative  # a sentence opener is kept only if the scope knows it


@pytest.mark.parametrize("text", [
    "Der Hund läuft schnell über die Straße und die Katze schläft im Haus.",
    "我在北京工作，使用 Kubernetes 1.29 部署服务。",
    "Привет, Москва! Это тест.",
    "",
    "🙂🙂🙂 " * 50,
    "A" * 100_000,
])
def test_extraction_never_breaks_on_other_languages_or_odd_text(text: str) -> None:
    found = extract(text)
    assert len(found) <= 32
    if text.startswith("Der"):
        assert found == []  # German capitalises every noun: capitals say nothing there
    if text.startswith("我"):
        assert [(m.name, m.kind) for m in found] == [("Kubernetes", "product")]


def _known(i: str, kind: str, name: str, *aliases: str, guessed: bool = False) -> Known:
    return Known(id=i, kind=kind, name=name, keys=stored_keys(name, kind, aliases), guessed=guessed)


def _m(name: str, kind: str, guessed: bool = False) -> Mention:
    return Mention(name=name, kind=kind, key=key(name), guessed=guessed)


def test_resolution_merges_what_is_the_same_and_refuses_what_is_not() -> None:
    dana = _known("1", "person", "Dana Whitfield")
    ch = _known("2", "product", "ClickHouse", "CHouse")
    k8s = _known("3", "product", "Kubernetes")
    assert resolve(_m("Dana", "person", True), [dana]).rule == "first-name"
    assert resolve(_m("Dana", "person", True), [dana, _known("4", "person", "Dana Scully")]) is None  # ambiguous
    assert resolve(_m("chouse", "product"), [ch]).id == "2"
    assert resolve(_m("Click House", "product"), [ch]).rule == "spacing"
    assert resolve(_m("Kubernets", "product"), [k8s]).rule == "similar"
    assert resolve(_m("iPhone 15", "product"), [_known("5", "product", "iPhone 14")]) is None
    assert resolve(_m("Anne", "person"), [_known("6", "person", "Ann")]) is None  # short names: no spelling merge
    assert resolve(_m("John Smyth", "person"), [_known("7", "person", "John Smith")]) is None
    assert resolve(_m("PROJ-13", "issue"), [_known("8", "issue", "PROJ-12")]) is None
    # never across types, except a guess giving way to a typed name
    assert resolve(_m("Kafka", "service"), [_known("9", "product", "Kafka")]) is None
    assert resolve(_m("Redis", "person", True), [_known("10", "product", "Redis")]).id == "10"


def _story(mem: Memory, scope: Scope = ACME) -> dict[str, str]:
    ids = {}
    ids["maint"] = mem.add("Dana Whitfield maintains the ingest worker.", scope=scope,
                           valid_from="2026-03-02T10:00:00Z", occurred_at="2026-03-02T10:00:00Z").id
    ids["kafka"] = mem.add("The ingest worker uses Kafka as its queue.", scope=scope,
                           valid_from="2026-03-05T10:00:00Z", occurred_at="2026-03-05T10:00:00Z").id
    ids["redis"] = mem.supersede(ids["kafka"], "The ingest worker moved to Redis Streams.", scope=scope,
                                 valid_from="2026-05-01T00:00:00Z").id
    ids["tabs"] = mem.add("Dana prefers tabs over spaces.", scope=scope).id
    return ids


def test_about_gives_what_is_true_now_what_changed_related_and_sources(any_mem: Memory) -> None:
    ids = _story(any_mem)
    p = any_mem.about("the ingest worker", scope=ACME, token_budget=400)
    assert p.entity is not None and p.entity.kind == "service" and p.entity.mentions == 3
    assert {x.memory_id for x in p.current} == {ids["maint"], ids["redis"]}
    assert [x.memory_id for x in p.changed] == [ids["kafka"]] and p.changed[0].superseded_by == ids["redis"]
    assert {r.name for r in p.related} >= {"Dana Whitfield", "Redis Streams", "Kafka"}
    assert "Redis Streams" in p.text and "What changed:" in p.text and ids["kafka"][:8] in p.text
    from remem.core.recall.tokens import count_tokens
    assert count_tokens(any_mem.about("ingest worker", scope=ACME, token_budget=60).text) <= 60
    then = any_mem.about("ingest worker", scope=ACME, as_of="2026-04-01")
    assert {x.memory_id for x in then.current} == {ids["maint"], ids["kafka"]} and not then.changed
    dana = any_mem.about("Dana", scope=ACME)  # the first name finds the one full name
    assert dana.entity.name == "Dana Whitfield" and "Dana" in dana.entity.aliases
    assert {x.memory_id for x in dana.current} == {ids["maint"], ids["tabs"]}
    nobody = any_mem.about("Zorblax Quentin", scope=ACME)
    assert nobody.entity is None and nobody.text == ""


def test_entities_stay_in_their_tenant_and_type(any_mem: Memory) -> None:
    _story(any_mem)
    any_mem.add("Dana Whitfield joined Globex.", scope=Scope(tenant="globex"))
    acme = {e.name: e for e in any_mem.entities(scope=ACME)}
    assert set(acme) >= {"Dana Whitfield", "ingest worker", "Kafka", "Redis Streams"}
    assert "Globex" not in acme and acme["ingest worker"].mentions == 3
    globex = any_mem.about("Dana Whitfield", scope=Scope(tenant="globex"))
    assert globex.entity.id != acme["Dana Whitfield"].id and len(globex.current) == 1
    assert any_mem.about("ingest worker", scope=Scope(tenant="globex")).entity is None
    assert [e.name for e in any_mem.entities(scope=ACME, kind="service")] == ["ingest worker"]
    assert [e.name for e in any_mem.entities(scope=ACME, query="redis")] == ["Redis Streams"]
    with pytest.raises(ValueError):
        any_mem.entities(scope=ACME, kind="planet")


def test_forgetting_takes_links_and_compact_takes_unlinked_names_off_disk(memory_factory) -> None:
    mem = memory_factory("none")
    keep = mem.add("Zephyrine Okonkwo-Baptiste reviewed the payments gateway.", scope=ACME)
    gone = mem.add("Quillon Marchetti-Vasquez owns the frobnicator daemon.", scope=ACME)
    assert mem.about("Quillon Marchetti-Vasquez", scope=ACME).entity is not None
    mem.forget(gone.id, scope=ACME)
    assert mem.about("Quillon Marchetti-Vasquez", scope=ACME).entity is None
    assert mem.about("frobnicator daemon", scope=ACME).entity is None
    assert mem.about("Zephyrine Okonkwo-Baptiste", scope=ACME).entity is not None
    mem.compact()
    folder = Path(mem.backend.location)
    blob = b"".join(data_of(p) for p in folder.rglob("*") if p.is_file())
    assert b"Marchetti" not in blob and b"frobnicator" not in blob
    assert b"Okonkwo" in blob
    assert keep.id in {x.memory_id for x in mem.about("Zephyrine", scope=ACME).current}


def test_a_secret_never_becomes_an_entity(memory_factory) -> None:
    mem = memory_factory("none")
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    mem.add(f"Deploy with token {secret} on host build-prod-01.", scope=ACME)
    names = [n for e in mem.entities(scope=ACME) for n in (e.name, *e.aliases)]
    assert "build-prod-01" in names and not any("ghp_" in n for n in names)
    mem.compact()
    blob = b"".join(data_of(p) for p in Path(mem.backend.location).rglob("*") if p.is_file())
    assert secret.encode() not in blob


def test_entities_off_links_nothing_and_link_entities_builds_them_later(store_factory) -> None:
    path = store_factory("none")
    with Memory(path=path, embedder="none", entities=False) as mem:
        mem.add("Dana Whitfield maintains the ingest worker.", scope=ACME)
        assert mem.entities(scope=ACME) == []
    with Memory(path=path, embedder="none") as mem:
        assert mem.about("ingest worker", scope=ACME).entity is None
        seen: list[int] = []
        assert mem.link_entities(scope=ACME, progress=seen.append) == 1 and sum(seen) == 1
        assert mem.about("ingest worker", scope=ACME).entity.mentions == 1


def test_cli_about_and_entities(store_factory) -> None:
    from tests.test_cli import run

    store = store_factory("none")
    run("add", "Dana Whitfield maintains the ingest worker.", "--tenant", "acme", store=store)
    out = json.loads(run("about", "Dana", "--tenant", "acme", "--json", store=store).stdout)
    assert out["found"] and out["entity"]["name"] == "Dana Whitfield" and "ingest worker" in out["text"]
    listed = json.loads(run("entities", "--tenant", "acme", "--json", store=store).stdout)
    assert {e["name"] for e in listed} == {"Dana Whitfield", "ingest worker"}
    missing = run("about", "Nobody Known", "--tenant", "acme", store=store, check=False)
    assert missing.returncode == 1 and "knows nothing" in missing.stdout


async def test_mcp_about_and_entities_tools_stay_in_scope(mem: Memory) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from remem.mcp_server import build_server

    _story(mem)
    async with Client(build_server(mem, scope=ACME)) as c, \
            Client(build_server(mem, scope=Scope(tenant="globex"))) as o:
        text = (await c.call_tool("memory_about", {"name": "ingest worker"})).content[0].text
        assert "Redis Streams" in text and "What changed:" in text
        listed = (await c.call_tool("memory_entities", {"kind": "person"})).content[0].text
        assert "Dana Whitfield [person]" in listed
        assert "knows nothing" in (await o.call_tool("memory_about", {"name": "ingest worker"})).content[0].text
        assert "No entities" in (await o.call_tool("memory_entities", {})).content[0].text


def test_tool_functions_answer_instead_of_raising(mem: Memory) -> None:
    from remem.core.tooling import run_memory_about, run_memory_entities

    _story(mem)
    assert "Dana Whitfield" in run_memory_about(mem, "Dana", ACME)
    assert "did not run" in run_memory_about(mem, "Dana", None)
    assert "did not run" in run_memory_entities(mem, ACME, kind="planet")
    assert "ingest worker [service]" in run_memory_entities(mem, ACME)


def test_merges_are_recorded_and_undone_and_a_split_alias_stays_apart(any_mem: Memory) -> None:
    from remem import NotFoundError

    any_mem.add("Pat Quinlan reviews the ledger service.", scope=ACME)
    any_mem.add("The books service reconciles payments nightly.", scope=ACME)
    ledger = any_mem.about("ledger service", scope=ACME).entity
    books = any_mem.about("books service", scope=ACME).entity
    merged = any_mem.merge_entities(ledger.id, books.id, scope=ACME)
    assert merged.merged == (books.id,)
    p = any_mem.about("books service", scope=ACME)  # the merged name finds the entity kept
    assert p.entity.id == ledger.id and len(p.current) == 2
    assert [e.name for e in any_mem.entities(scope=ACME, kind="service")] == ["ledger service"]
    with pytest.raises(NotFoundError):  # never across tenants
        any_mem.merge_entities(ledger.id, books.id, scope=Scope(tenant="globex"))
    with pytest.raises(ValueError):  # never across types
        any_mem.merge_entities(ledger.id, any_mem.about("Pat Quinlan", scope=ACME).entity.id, scope=ACME)
    back = any_mem.split_entity(ledger.id, "books service", scope=ACME)
    assert back.id == books.id and any_mem.about("books service", scope=ACME).entity.id == books.id
    # an alias resolution merged (the first name) is split off, and stays apart on the next mention
    any_mem.add("Pat approved the ledger service budget.", scope=ACME)
    assert "Pat" in any_mem.about("Pat Quinlan", scope=ACME).entity.aliases
    pat = any_mem.split_entity(any_mem.about("Pat Quinlan", scope=ACME).entity.id, "Pat", scope=ACME)
    assert pat.name == "Pat" and pat.id != any_mem.about("Pat Quinlan", scope=ACME).entity.id
    assert [x.text for x in any_mem.about("Pat", scope=ACME).current] == ["Pat approved the ledger service budget."]
    any_mem.add("Yesterday, Pat signed off the release.", scope=ACME)
    full = any_mem.about("Pat Quinlan", scope=ACME).entity
    assert "Pat" not in full.aliases and full.mentions == 1


def test_export_import_carries_the_entities(memory_factory, tmp_path: Path) -> None:
    src, dst = memory_factory("none"), memory_factory("none")
    _story(src)
    src.export(tmp_path / "x.jsonl", scope=ACME)
    dst.import_(tmp_path / "x.jsonl", scope=ACME)
    a, b = src.about("Dana", scope=ACME), dst.about("Dana", scope=ACME)
    assert b.entity is not None and (b.entity.id, b.entity.name, b.entity.aliases) == \
        (a.entity.id, a.entity.name, a.entity.aliases)
    assert {e.name: e.mentions for e in dst.entities(scope=ACME)} == {e.name: e.mentions for e in src.entities(scope=ACME)}


def test_a_question_about_a_never_mentioned_entity_recalls_nothing(any_mem: Memory) -> None:
    _story(any_mem)
    any_mem.add("Lunch with the team was pasta at noon.", scope=ACME)
    assert any_mem.search("What does Priscilla Vandermeer think of lunch?", scope=ACME) == []
    assert any_mem.context("What does Priscilla Vandermeer think of lunch?", scope=ACME) == ""
    # the same-run baseline: without entities, the nearest memories fill the budget
    assert any_mem.with_settings(entities=False).search("What does Priscilla Vandermeer think of lunch?", scope=ACME)
    # a name the memories hold, even lowercase or unlinked, is not unknown
    any_mem.add("we ordered from vandermeer catering", scope=ACME)
    assert any_mem.search("What did Vandermeer cater?", scope=ACME)


def test_the_entity_boost_follows_aliases_and_one_hop(any_mem: Memory) -> None:
    boosted = any_mem.with_settings(entity_weight=0.5)
    any_mem.add("Dana Whitfield maintains the ingest worker.", scope=ACME)
    any_mem.add("The ingest worker moved to Redis Streams.", scope=ACME)
    any_mem.add("ClickHouse (aka CHouse) is where events land.", scope=ACME)
    any_mem.add("ClickHouse disk usage reached 80 percent.", scope=ACME)
    for i in range(30):
        any_mem.add(f"Standup note {i}: what does everyone run today, how full is the board?", scope=ACME)
    question = "What does the service Dana maintains run on now?"  # no word of the answer: one hop finds it
    top = [h.record.text for h in boosted.search(question, scope=ACME, limit=3)]
    assert "The ingest worker moved to Redis Streams." in top
    assert "The ingest worker moved to Redis Streams." not in [  # boost off, relation hop off
        h.record.text for h in any_mem.with_settings(relation_weight=0).search(question, scope=ACME, limit=3)]
    top = [h.record.text for h in boosted.search("How full is CHouse?", scope=ACME, limit=3)]
    assert "ClickHouse disk usage reached 80 percent." in top


async def test_entity_operations_through_the_service_and_async_memory(store_factory, monkeypatch) -> None:
    from remem import AsyncMemory
    from remem.core.service.client import stop_service

    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")  # a leaked service still goes away by itself
    path = store_factory("none")
    try:
        with Memory(path=path, embedder="none", service="require") as mem:
            assert mem.remote
            ids = _story(mem)
            p = mem.about("Dana", scope=ACME)
            assert p.entity.name == "Dana Whitfield" and {x.memory_id for x in p.current} == {ids["maint"], ids["tabs"]}
            assert p.current[0].sources == () and "ingest worker" in p.text
            assert {e.name for e in mem.entities(scope=ACME, kind="service")} == {"ingest worker"}
        amem = AsyncMemory(path=path, embedder="none", service="require")
        try:
            prof = await amem.about("ingest worker", scope=ACME)
            assert [x.memory_id for x in prof.changed] == [ids["kafka"]]
            assert (await amem.entities(scope=ACME, query="kafka"))[0].name == "Kafka"
            assert (await amem.about("Nobody Known", scope=ACME)).entity is None
        finally:
            await amem.close()
    finally:
        stop_service(path, timeout=5, wait=False)


def test_pydantic_ai_agent_calls_memory_about_in_its_run_scope(mem: Memory) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from remem.integrations.pydantic_ai import memory_toolset

    _story(mem)
    seen: list[str] = []

    def brain(messages, info):  # a scripted model: ask about the worker, then answer with what came back
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            assert "memory_about" in {t.name for t in info.function_tools}
            return ModelResponse(parts=[ToolCallPart("memory_about", {"name": "the ingest worker"})])
        seen.append(str(returns[-1].content))
        return ModelResponse(parts=[TextPart("done")])

    toolset = memory_toolset(mem, scope=ACME, include_about=True)
    assert Agent(FunctionModel(brain), toolsets=[toolset]).run_sync("what about the worker?").output == "done"
    assert "Redis Streams" in seen[0] and "What changed:" in seen[0]
    other = memory_toolset(mem, scope=Scope(tenant="globex"), include_about=True)
    seen.clear()
    Agent(FunctionModel(brain), toolsets=[other]).run_sync("what about the worker?")
    assert "knows nothing" in seen[0]


def test_llamaindex_memory_about_tool(mem: Memory) -> None:
    pytest.importorskip("llama_index.core")
    from remem.integrations.llamaindex import memory_tools

    _story(mem)
    tools = {t.metadata.name: t for t in memory_tools(mem, ACME, about=True)}
    assert "Redis Streams" in tools["memory_about"].call(name="ingest worker").content
    assert "memory_about" not in {t.metadata.name for t in memory_tools(mem, ACME)}
    assert "did not run" in memory_tools(mem, lambda: None, about=True)[-1].call(name="Dana").content


def test_a_forgotten_memory_takes_the_aliases_only_it_said(memory_factory) -> None:
    mem = memory_factory("none")
    mem.add("Robert Quackenbush maintains the ledger service.", scope=ACME)
    told = mem.add("Robert Quackenbush, also known as Zebedee, reviewed the budget.", scope=ACME)
    assert "Zebedee" in mem.about("Robert Quackenbush", scope=ACME).entity.aliases
    mem.forget(told.id, scope=ACME)
    assert mem.about("Robert Quackenbush", scope=ACME).entity.aliases == ()
    assert mem.about("Zebedee", scope=ACME).entity is None
    mem.compact()
    blob = b"".join(data_of(p) for p in Path(mem.backend.location).rglob("*") if p.is_file())
    assert b"Zebedee" not in blob and b"Quackenbush" in blob


def test_langgraph_agent_calls_memory_about_in_the_users_scope(mem: Memory) -> None:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.messages import ToolMessage

    from remem.integrations.langgraph import memory_tools
    from tests.test_langgraph_agents import WHO, ScriptedModel, cfg, user

    _story(mem, Scope(user="alice"))
    model = ScriptedModel(script=[{"tool": "memory_about", "args": {"name": "Dana"}}], calls=[])
    out = create_agent(model, memory_tools(mem, scope=WHO, about=True)).invoke(user("who is Dana?"), cfg("alice"))
    got = next(m for m in out["messages"] if isinstance(m, ToolMessage)).content
    assert "Dana Whitfield" in got and "ingest worker" in got
    model = ScriptedModel(script=[{"tool": "memory_about", "args": {"name": "Dana"}}], calls=[])
    out = create_agent(model, memory_tools(mem, scope=WHO, about=True)).invoke(user("who is Dana?"), cfg("bob"))
    assert "knows nothing" in next(m for m in out["messages"] if isinstance(m, ToolMessage)).content
