"""RememStore against the behaviours LangGraph's own store tests check (InMemoryStore's
libs/checkpoint/tests/test_store.py and PostgresStore's libs/checkpoint-postgres/tests/test_store.py), ported
to a real remem store, plus what those stores get wrong (text-compared ranges, TypeError on missing fields) and
the LangGraph wiring (compile(store=), get_store(), Runtime.store, create_agent(store=)).

Queries here run on BM25 (embedder "none", fast and deterministic), so query checks use shared words where
LangGraph's tests used a character-embedding fake; dense recall itself is remem core's (tested there).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain.tools import ToolRuntime
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from remem import Memory, Scope
from remem.integrations.langgraph import RememStore


@pytest.fixture(scope="module")
def shared_mem(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One store for the module (opening one costs ~1 s); each test gets its own tenant in it."""
    with Memory(path=tmp_path_factory.mktemp("lgstore") / "store", embedder="none") as m:
        yield m


@pytest.fixture
def make_store(shared_mem: Memory) -> Any:
    tenant = f"lg-{uuid.uuid4().hex[:10]}"

    def make(**kwargs: Any) -> RememStore:
        kwargs.setdefault("tenant", tenant)
        return RememStore(shared_mem, **kwargs)

    return make


@pytest.fixture
def store(make_store: Any) -> RememStore:
    return make_store()


# ---------------------------------------------------------------------- list_namespaces (InMemoryStore tests)
def test_list_namespaces_basic(store: RememStore) -> None:
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
                  ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"), ("admin", "users", "789")]
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})

    assert sorted(store.list_namespaces(prefix=("a", "b"))) == [("a", "b", "c"), ("a", "b", "d", "e"),
                                                               ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [("a", "b", "c"), ("a", "b", "d"),
                                                                            ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_wildcards_depth_pagination_and_empty(store: RememStore) -> None:
    assert store.list_namespaces() == []
    for i, ns in enumerate([("users", "123"), ("users", "456"), ("users", "789", "settings"),
                            ("admin", "users", "789"), ("guests", "123"), ("guests", "456", "preferences")]):
        store.put(ns, f"id_{i}", {"data": i})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == [("users", "123"), ("users", "456"),
                                                                   ("users", "789", "settings")]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert sorted(store.list_namespaces(max_depth=1)) == [("admin",), ("guests",), ("users",)]
    for i in range(12):
        store.put(("namespace", f"sub_{i:02d}"), "k", {"data": i})
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)]


# ---------------------------------------------------------------------- namespaces and validation
async def test_invalid_namespaces_rejected_and_langgraph_label_allowed_below_root(store: RememStore) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            await store.aput(bad, "foo", doc)
    await store.aput(("foo", "langgraph", "foo"), "bar", doc)
    assert (await store.aget(("foo", "langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(("foo", "langgraph", "foo")))[0].value == doc
    await store.adelete(("foo", "langgraph", "foo"), "bar")
    assert await store.aget(("foo", "langgraph", "foo"), "bar") is None
    # Past the public put API (as LangGraph's test does): the root check is put()'s, labels are still checked.
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", doc)])  # would alias namespace ("a", "b") in dotted form


# ---------------------------------------------------------------------- batch (PostgresStore tests)
def test_batch_order_and_results(store: RememStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch([
        GetOp(("test", "foo"), "key1"),
        PutOp(("test", "bar"), "key2", {"data": "value2"}),
        SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(("test",), "key3"),
    ])
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]
    assert sorted(results[3]) == [("test", "bar"), ("test", "foo")]
    assert results[4] is None

    results = store.batch([PutOp(("test",), "key1", {"data": "v1"}), PutOp(("test",), "key2", {"data": "v2"}),
                           PutOp(("test",), "key3", None), GetOp(("test",), "key1"),
                           PutOp(("test",), "key1", None), GetOp(("test",), "key1")])
    assert results[:3] == [None, None, None]
    assert results[3].value == {"data": "v1"}  # a put is visible to the ops after it
    assert results[5] is None

    res = store.batch([SearchOp(("test",), filter=None, limit=10, offset=0),
                       ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("foo",)),), limit=10),
                       ListNamespacesOp(max_depth=1, limit=10)])
    assert {i.key for i in res[0]} == {"key1", "key2"}  # ("test","foo")/key1 and ("test","bar")/key2 remain
    assert res[1] == [("test", "foo")]
    assert res[2] == [("test",)]


def test_basic_ops_upsert_keeps_created_at(store: RememStore) -> None:
    ns = ("test", "documents")
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(ns, "doc1")
    assert item and item.namespace == ns and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    assert item.updated_at >= item.created_at  # a new item was not updated before it was created
    time.sleep(0.01)
    store.put(ns, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(ns, "doc1")
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at  # put is an upsert of one memory, not a new one
    assert len(store.search(ns)) == 1
    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(ns, "doc1")
    assert store.get(ns, "doc1") is None
    assert store.search(ns) == []


def test_items_are_remem_memories_in_the_store_tenant(store: RememStore) -> None:
    mem = store.memory
    store.put(("users", "alice", "prefs"), "drink", {"text": "prefers green tea"})
    recs = mem.list(scope=Scope(tenant=store.tenant))
    assert len(recs) == 1
    meta = recs[0].metadata
    assert meta["lg_ns"] == "users.alice.prefs" and meta["lg_key"] == "drink"
    assert meta["lg_prefixes"] == ["users", "users.alice", "users.alice.prefs"]
    assert "green tea" in recs[0].text
    assert mem.list(scope=Scope()) == []  # nothing leaks into the global space
    assert RememStore(mem).search(("users",)) == []  # nor into another store's tenant (default "langgraph")


# ---------------------------------------------------------------------- search and filters
def test_search_prefix_filter_pagination(store: RememStore) -> None:
    data = [(("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
            (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
            (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
            (("testing",), "other", {"title": "Not under test", "author": "Alice"})]
    for ns, key, value in data:
        store.put(ns, key, value)
    assert len(store.search(("test",))) == 3  # ("testing",) is not under the prefix ("test",)
    docs = store.search(("test", "docs"))
    assert {i.key for i in docs} == {"doc1", "doc2"} and all(i.namespace == ("test", "docs") for i in docs)
    alice = store.search(("test",), filter={"author": "Alice"})
    assert {i.key for i in alice} == {"doc1", "img1"}
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    assert [i.key for i in store.search(("test",), filter={"tags": ["draft"]})] == ["doc2"]
    assert [i.key for i in store.search((), filter={"title": "Not under test"})] == ["other"]
    assert all(i.score is None for i in store.search(("test",)))


def test_range_filters_compare_numbers_and_datetimes_not_text(store: RememStore) -> None:
    ns = ("test", "scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11)]:
        store.put(ns, key, {"score": score})

    def scores(flt: dict[str, Any]) -> list[Any]:
        return sorted(i.value["score"] for i in store.search(ns, filter=flt))

    assert scores({"score": {"$gte": 10}}) == [10, 11]  # text comparison would also return 9
    assert scores({"score": {"$gt": 9}}) == [10, 11]
    assert scores({"score": {"$lt": 10}}) == [2, 9]
    assert scores({"score": {"$lte": 9}}) == [2, 9]
    assert scores({"score": {"$gt": 2, "$lt": 11}}) == [9, 10]
    store.put(ns, "e", {"score": 9.5})
    assert scores({"score": {"$gt": 9}}) == [9.5, 10, 11]
    assert scores({"score": 10}) == [10]
    assert scores({"score": {"$ne": 10}}) == [2, 9, 9.5, 11]
    # an item without the field, or with a non-number, does not match a range (InMemoryStore raised TypeError)
    store.put(ns, "f", {"other": 1})
    store.put(ns, "g", {"score": "high"})
    assert scores({"score": {"$gte": 10}}) == [10, 11]

    when = ("test", "events")
    for key, day in [("old", "2024-01-05T10:00:00Z"), ("mid", "2024-02-01"), ("new", "2024-11-30T08:00:00+00:00")]:
        store.put(when, key, {"at": day})
    after = store.search(when, filter={"at": {"$gt": "2024-01-31T23:00:00Z"}})
    assert {i.key for i in after} == {"mid", "new"}
    before = store.search(when, filter={"at": {"$lt": dt.datetime(2024, 2, 1, 0, 0, 1, tzinfo=dt.timezone.utc)}})
    assert {i.key for i in before} == {"old", "mid"}
    names = ("test", "names")
    store.put(names, "a", {"name": "apple"})
    store.put(names, "b", {"name": "banana"})
    assert [i.key for i in store.search(names, filter={"name": {"$gt": "apple"}})] == ["b"]  # plain text stays text


def test_nested_and_bool_filters(store: RememStore) -> None:
    ns = ("cfg",)
    store.put(ns, "a", {"meta": {"lang": "en", "level": 3}, "active": True})
    store.put(ns, "b", {"meta": {"lang": "fr", "level": 3}, "active": False})
    store.put(ns, "c", {"meta": {"lang": "en", "level": 1}, "active": 1})
    assert {i.key for i in store.search(ns, filter={"meta": {"lang": "en"}})} == {"a", "c"}
    assert [i.key for i in store.search(ns, filter={"meta": {"lang": "en", "level": {"$gt": 2}}})] == ["a"]
    assert [i.key for i in store.search(ns, filter={"active": True})] == ["a"]  # 1 is not true (JSON semantics)
    with pytest.raises(ValueError, match="unsupported filter operator"):
        store.search(ns, filter={"active": {"$in": [True]}})


def test_query_search_with_filters_ranks_matches_first(store: RememStore) -> None:
    docs = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
            ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
            ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
            ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]
    for key, value in docs:
        store.put(("test",), key, value)
    res = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in res] == ["doc1", "doc2"]
    assert res[0].score is not None and res[1].score is None  # doc2 is a filter match the query did not match
    assert [r.key for r in store.search(("test",), query="car", filter={"color": "red"})][0] == "doc2"
    res = store.search(("test",), query="blue", filter={"score": {"$gt": 3.2}})
    assert len(res) == 3 and res[0].key == "doc4"
    res = store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in res] == ["doc3"]
    strict = RememStore(store.memory, tenant=store.tenant, fill_unmatched=False)
    assert [r.key for r in strict.search(("test",), query="apple", filter={"color": "red"})] == ["doc1"]


def test_query_search_update_reindexes_and_index_false_is_not_searchable(store: RememStore) -> None:
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    first = store.search(("test",), query="Zany Xerxes")
    assert first[0].key == "doc1" and first[0].score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in store.search(("test",), query="Zany Xerxes")}
    assert after.get("doc1") is None  # the old text is gone from the index
    new = store.search(("test",), query="new text about dogs")
    assert new[0].key == "doc1"
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    res = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in res)
    # still listable and filterable
    assert [r.key for r in store.search(("test",), filter={"text": "new text about dogs"})] == ["doc4", "doc1"]


def test_query_pagination_and_edge_cases(store: RememStore) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    p1 = store.search(("test",), query="test", limit=2)
    p2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(p1) == 2 and len(p2) == 2 and not {r.key for r in p1} & {r.key for r in p2}
    assert len(store.search(("test",), query="test", limit=10)) == 5
    assert store.search(("test",), query="number 3")[0].key == "doc3"
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query, limit=10)) == 5


def test_index_fields_config_and_per_put_override(make_store: Any) -> None:
    store = make_store(index={"fields": ["key0", "key1", "key3"]})
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})  # missing key0 is fine
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    assert {r.key for r in store.search(("test",), query="xxx") if r.score is not None} == {"doc1", "doc2"}
    assert store.search(("test",), query="uuu")[0].key == "doc2"
    assert store.search(("test",), query="zzz")[0].key == "doc1"
    assert all(r.score is None for r in store.search(("test",), query="www"))  # key2 is not indexed
    store.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key17": "ggg"}, index=["key17"])
    assert store.search(("test",), query="ggg")[0].key == "doc3"
    assert all(r.key != "doc3" or r.score is None for r in store.search(("test",), query="aaa"))
    nested = make_store(index={"fields": ["items[*].name"]})
    nested.put(("nested",), "n1", {"items": [{"name": "walrus"}, {"name": "otter"}], "note": "pelican"})
    assert nested.search(("nested",), query="otter")[0].score is not None
    assert nested.search(("nested",), query="pelican")[0].score is None


# ---------------------------------------------------------------------- TTL
def test_ttl_expiry_refresh_and_sweep(store: RememStore) -> None:
    mem, tenant = store.memory, Scope(tenant=store.tenant)
    ttl = 0.6 / 60  # 0.6 s, in LangGraph's unit (minutes)
    ns = ("foo",)
    store.put(ns, "item1", {"foo": "bar"}, ttl=ttl)
    store.put(ns, "keep", {"foo": "bar forever"})
    time.sleep(0.4)
    assert store.get(ns, "item1", refresh_ttl=True) is not None  # pushes expiry to now + 0.6 s
    time.sleep(0.4)
    assert len(store.search(ns, query="bar", refresh_ttl=False)) == 2  # alive only thanks to the refresh
    assert store.get(ns, "item1", refresh_ttl=False).updated_at == store.get(ns, "item1").updated_at
    time.sleep(0.7)
    assert store.get(ns, "item1") is None
    assert [i.key for i in store.search(ns)] == ["keep"]
    assert store.list_namespaces() == [("foo",)]
    assert len(mem.list(scope=tenant)) == 2  # expired but not yet swept
    assert store.sweep_ttl() == 1
    assert [r.metadata["lg_key"] for r in mem.list(scope=tenant)] == ["keep"]


def test_default_ttl_from_config(make_store: Any) -> None:
    store = make_store(ttl={"default_ttl": 0.3 / 60, "refresh_on_read": False})
    store.put(("t",), "a", {"x": 1})
    store.put(("t",), "b", {"x": 2}, ttl=None)  # explicit None: never expires
    assert store.get(("t",), "a") is not None
    time.sleep(0.4)
    assert store.get(("t",), "a") is None and store.get(("t",), "b") is not None


# ---------------------------------------------------------------------- scopes, persistence, async
def test_scope_for_maps_namespaces_to_users(shared_mem: Memory) -> None:
    acme = f"acme-{uuid.uuid4().hex[:8]}"
    store = RememStore(shared_mem, scope_for=lambda ns: Scope(tenant=acme, user=ns[1] if len(ns) > 1 else None))
    store.put(("memories", "alice"), "m1", {"text": "alice likes tea"})
    store.put(("memories", "bob"), "m1", {"text": "bob likes coffee"})
    alice = shared_mem.list(scope=Scope(tenant=acme, user="alice"))
    assert [r.text for r in alice] == ['{"text": "alice likes tea"}']  # a real per-user remem memory
    assert store.get(("memories", "alice"), "m1").value == {"text": "alice likes tea"}
    assert {i.namespace for i in store.search(("memories",))} == {("memories", "alice"), ("memories", "bob")}
    assert [i.value["text"] for i in store.search(("memories", "bob"), query="likes")] == ["bob likes coffee"]


async def test_async_api_concurrent(store: RememStore) -> None:
    colors, things = ["red", "blue", "green"], ["apple", "car", "house"]
    await asyncio.gather(*[store.aput(("test",), f"doc{i}", {"text": f"{colors[i % 3]} {things[i % 3]}",
                                                             "color": colors[i % 3], "index": i}) for i in range(12)])
    results = await asyncio.gather(
        store.asearch(("test",), query="apple", filter={"color": "red"}),
        store.asearch(("test",), filter={"index": {"$gt": 8}}),
        store.aget(("test",), "doc4"),
        store.alist_namespaces(prefix=("test",)),
    )
    assert results[0] and all(r.value["color"] == "red" for r in results[0])
    assert sorted(r.value["index"] for r in results[1]) == [9, 10, 11]
    assert results[2].value["index"] == 4
    assert results[3] == [("test",)]
    got = await store.abatch([GetOp(("test",), "doc1"), PutOp(("test",), "doc1", None), GetOp(("test",), "doc1")])
    assert got[0] is not None and got[2] is None


# ---------------------------------------------------------------------- LangGraph wiring
def test_graph_nodes_reach_the_store_every_way(store: RememStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime
    from langgraph.store.base import BaseStore

    class S(TypedDict):
        user: str
        seen: list[str]

    def write(state: S, runtime: Runtime) -> dict[str, Any]:
        runtime.store.put(("users", state["user"]), "pref", {"text": "likes green tea"})
        return {}

    def read_kw(state: S, *, store: BaseStore) -> dict[str, Any]:
        return {"seen": [store.get(("users", state["user"]), "pref").value["text"]]}

    def read_get_store(state: S) -> dict[str, Any]:
        hits = get_store().search(("users",), query="green tea")
        return {"seen": state["seen"] + [hits[0].value["text"]]}

    g = StateGraph(S)
    g.add_node("write", write)
    g.add_node("read_kw", read_kw)
    g.add_node("read_get_store", read_get_store)
    g.add_edge(START, "write")
    g.add_edge("write", "read_kw")
    g.add_edge("read_kw", "read_get_store")
    g.add_edge("read_get_store", END)
    out = g.compile(store=store).invoke({"user": "u1", "seen": []})
    assert out["seen"] == ["likes green tea", "likes green tea"]
    assert store.get(("users", "u1"), "pref") is not None


def test_create_agent_tool_uses_runtime_store(store: RememStore) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import tool

    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class TwoStepModel(BaseChatModel):
        """Calls ``lookup`` first, then answers."""

        @property
        def _llm_type(self) -> str:
            return "two-step"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self.bind(**kw)

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            if any(isinstance(m, ToolMessage) for m in messages):
                msg = AIMessage("done")
            else:
                msg = AIMessage("", tool_calls=[{"name": "lookup", "args": {"query": "tea"}, "id": "c1"}])
            return ChatResult(generations=[ChatGeneration(message=msg)])

    store.put(("memories", "u1"), "k1", {"text": "likes tea"})

    @tool
    def lookup(query: str, runtime: ToolRuntime) -> str:
        """Search the store."""
        return "; ".join(i.value["text"] for i in runtime.store.search(("memories", "u1"), query=query))

    out = create_agent(TwoStepModel(), [lookup], store=store).invoke({"messages": [{"role": "user", "content": "hi"}]})
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert tool_msgs[0].content == "likes tea"


# ---------------------------------------------------------------------- labels and keys remem redacts on write
PHONE = "+1 415 555 0132"
SECRET_KEY = "sk-proj-Xq7Lm2Pz9Rt4Vw8Yb3Nc6Hd1Jf5Kg0Ts2Ua4"


def test_pii_namespace_label_upserts_gets_searches_and_deletes(memory_factory: Any) -> None:
    mem = memory_factory(pii=True)
    store = RememStore(mem)
    ns = ("users", PHONE)
    store.put(ns, "k", {"a": 1})
    store.put(ns, "k", {"a": 2})
    recs = mem.list(scope=Scope(tenant="langgraph"))
    assert len(recs) == 1  # the second put updated the item instead of adding a twin
    assert PHONE not in repr(recs[0].metadata)  # the phone number is never stored in clear text
    item = store.get(ns, "k")
    assert item is not None and item.value == {"a": 2}
    assert item.namespace == ns and item.key == "k"  # as the caller named it
    assert store.get(("users", "+1 415 555 0199"), "k") is None  # another redacted-alike number is another item
    hits = store.search(ns)
    assert [(h.namespace, h.key, h.value) for h in hits] == [(ns, "k", {"a": 2})]
    assert [h.value for h in store.search(("users",), filter={"a": 2})] == [{"a": 2}]
    assert store.search(("users",))[0].namespace == ("users", "[REDACTED:phone]")  # not recoverable: by design
    assert store.list_namespaces(prefix=ns) == [ns]
    assert store.list_namespaces(suffix=(PHONE,)) == [ns]
    assert store.list_namespaces(prefix=("users",)) == [("users", "[REDACTED:phone]")]
    assert store.list_namespaces(prefix=("users", "+1 415 555 0199")) == []
    store.delete(ns, "k")
    assert store.get(ns, "k") is None and mem.list(scope=Scope(tenant="langgraph")) == []

    # a PII match across the dot-joined form ("users.bob@gmail.com") must not merge labels into one
    split = ("users", "bob@gmail", "com")
    store.put(split, "k", {"b": 1})
    assert store.search(("users",))[0].namespace == split
    assert store.list_namespaces(max_depth=2) == [("users", "bob@gmail")]


def test_secret_looking_key_and_label_without_pii(store: RememStore) -> None:
    mem = store.memory
    ns = ("tokens", "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5")
    store.put(ns, SECRET_KEY, {"owner": "ci"})
    store.put(ns, SECRET_KEY, {"owner": "deploy"})
    store.put(ns, "plain", {"owner": "other"})
    recs = mem.list(scope=Scope(tenant=store.tenant))
    assert len(recs) == 2
    assert SECRET_KEY not in repr([r.metadata for r in recs]) and ns[1] not in repr([r.metadata for r in recs])
    item = store.get(ns, SECRET_KEY)
    assert item is not None and item.value == {"owner": "deploy"} and (item.namespace, item.key) == (ns, SECRET_KEY)
    assert store.get(ns, "plain").value == {"owner": "other"}  # type: ignore[union-attr]
    hits = {h.value["owner"]: h for h in store.search(ns)}
    assert set(hits) == {"deploy", "other"} and all(h.namespace == ns for h in hits.values())
    assert hits["other"].key == "plain" and hits["deploy"].key == "[REDACTED:openai_api_key]"
    assert store.list_namespaces(prefix=ns) == [ns]
    store.delete(ns, SECRET_KEY)
    assert store.get(ns, SECRET_KEY) is None and [i.key for i in store.search(ns)] == ["plain"]


def test_lookup_digests_pass_the_redactor_unchanged() -> None:
    from remem.core.redact.redactor import Redactor
    from remem.integrations.langgraph.store import _item_digest, _label_digest, _ns_digest

    redactor = Redactor(pii=True)
    # plain sha256 hex trips the credit-card rule about once in 750 digests; this one did
    assert redactor.redact("d3bfe8a601f78d92e346222802e3743208514051ba5025a7a6d5cbd9024c2cc0").changed
    for i in range(3000):
        for digest in (_item_digest(("users", str(i)), f"k{i}"), _ns_digest(("n", str(i))), _label_digest(str(i))):
            assert len(digest) == 64 and redactor.redact(digest).text == digest
