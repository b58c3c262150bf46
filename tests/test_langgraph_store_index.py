"""RememStore with a LangGraph ``index`` config, on the real core (embedded Qdrant Edge, and qdrant-client's local
mode for the server path): the embeddings LangGraph users configure (an ``Embeddings`` object, a sync or async
function, a ``"provider:model"`` string through LangChain's ``init_embeddings``), the store recording them, field
paths, per-put ``index=``, re-embedding on update, LangGraph's scores with unscored items last, and filters on
dotted paths with any key characters and LangGraph's operators.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pytest

pytest.importorskip("langgraph")

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from remem import Memory
from remem.core.types import EmbedderMismatchError
from remem.integrations.langgraph import RememStore
from remem.integrations.langgraph.store_embed import index_embedder

DIMS = 48


def trigram_vector(text: str, dims: int = DIMS) -> list[float]:
    """Hashed character trigrams of the lower-cased text: similar spellings, similar vectors."""
    padded = f"  {text.lower()}  "
    vec = [0.0] * dims
    for i in range(len(padded) - 2):
        h = int.from_bytes(hashlib.blake2b(padded[i:i + 3].encode(), digest_size=4).digest(), "big")
        vec[h % dims] += 1.0 if (h >> 16) & 1 else -1.0
    return vec


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0


class TrigramEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` that counts its calls and records the threads they ran on."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.threads: set[int] = set()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.threads.add(threading.get_ident())
        return [trigram_vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.threads.add(threading.get_ident())
        return trigram_vector(text)


def sync_embed(texts: Sequence[str]) -> list[list[float]]:
    return [trigram_vector(t) for t in texts]


async def async_embed(texts: Sequence[str]) -> list[list[float]]:
    await asyncio.sleep(0)
    return [trigram_vector(t) for t in texts]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[Callable[..., RememStore]]:
    opened: list[RememStore] = []
    counter = iter(range(1000))

    def make(index: dict[str, Any] | None = None, path: Path | None = None, **kwargs: Any) -> RememStore:
        store = RememStore(path=str(path or tmp_path / f"s{next(counter)}"), index=index, **kwargs)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


# ---------------------------------------------------------------------- embed: every form LangGraph accepts
@pytest.mark.parametrize("form", ["embeddings", "sync-function", "async-function"])
def test_each_embed_form_ranks_and_scores_with_the_configured_embeddings(form: str, open_store: Any) -> None:
    embed = {"embeddings": TrigramEmbeddings(), "sync-function": sync_embed, "async-function": async_embed}[form]
    store = open_store({"embed": embed, "dims": DIMS, "fields": ["text"]})
    notes = {"n1": "the deploy pipeline runs on friday", "n2": "grandma likes tulips",
             "n3": "postgres vacuum settings"}
    store.batch([PutOp(("notes",), key, {"text": text}) for key, text in notes.items()])

    hits = store.search(("notes",), query="tulips for grandma")
    assert [h.key for h in hits][0] == "n2"
    for h in hits:  # LangGraph's score: the cosine under the configured embeddings, not remem's fused rank
        assert h.score == pytest.approx(cosine(trigram_vector("tulips for grandma"), trigram_vector(notes[h.key])),
                                        abs=1e-3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert isinstance(store.embeddings, Embeddings)
    assert store.memory.embedder.name.startswith("langchain:" if form == "embeddings" else "callable:")


def test_async_api_embeds_off_the_event_loop(open_store: Any) -> None:
    emb = TrigramEmbeddings()
    store = open_store({"embed": emb, "dims": DIMS})

    async def main() -> int:
        await store.aput(("a",), "k1", {"text": "walk the dog at seven"})
        await store.abatch([PutOp(("a",), f"k{i}", {"text": f"note number {i}"}) for i in range(2, 6)])
        hits = await store.asearch(("a",), query="dog walk")
        assert hits[0].key == "k1"
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert emb.threads and loop_thread not in emb.threads


def test_async_only_function_works_from_sync_and_async_callers(open_store: Any) -> None:
    store = open_store({"embed": async_embed, "dims": DIMS, "fields": ["text"]})
    store.put(("a",), "sync", {"text": "written from sync code"})

    async def main() -> list[str]:
        store.put(("a",), "inside", {"text": "sync call inside a running loop"})  # must not deadlock the loop
        await store.aput(("a",), "async", {"text": "written from async code"})
        return [h.key for h in await store.asearch(("a",), query="written from async code")]

    keys = asyncio.run(main())
    assert keys[0] == "async" and set(keys) == {"sync", "inside", "async"}


def test_a_batch_of_puts_is_embedded_in_one_call(open_store: Any) -> None:
    emb = TrigramEmbeddings()
    store = open_store({"embed": emb, "dims": DIMS, "fields": ["title", "body"]})
    store.batch([PutOp(("docs",), f"d{i}", {"title": f"title {i}", "body": f"body text {i}"}) for i in range(12)])
    assert len(emb.calls) == 1  # field texts and the whole-text vectors of all 12 items, together
    assert {"title 3", "body text 3"} <= set(emb.calls[0])


def test_provider_string_goes_through_init_embeddings(open_store: Any, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    pytest.importorskip("langchain_openai")
    import tiktoken_ext
    from openai_server import OpenAIServer

    # langchain-openai counts tokens with tiktoken's cl100k file: give it the bundled copy (nothing downloads)
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cache = tmp_path / "tiktoken"
    cache.mkdir()
    shutil.copy(Path(list(tiktoken_ext.__path__)[0]) / "data" / "cl100k_base.tiktoken",
                cache / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    with OpenAIServer(embedding_dim=DIMS) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        store = open_store({"embed": "openai:text-embedding-3-small", "dims": DIMS, "fields": ["text"]})
        assert type(store.embeddings).__name__ == "OpenAIEmbeddings"
        assert store.memory.embedder.name == "langchain:openai:text-embedding-3-small"
        store.batch([PutOp(("n",), f"k{i}", {"text": t}) for i, t in
                     enumerate(["rust borrow checker", "sourdough starter feeding", "tax return deadline"])])
        assert srv.count("embeddings") == 1
        assert store.search(("n",), query="sourdough starter")[0].key == "k1"


def test_unusable_embed_configs_are_clear_errors(open_store: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="(?i)provider"):
        open_store({"embed": "no-such-provider:model", "dims": DIMS})
    with pytest.raises(ValueError, match="dims"):
        open_store({"embed": sync_embed, "dims": 0})
    store = open_store({"embed": sync_embed, "dims": DIMS + 1})  # the model returns DIMS
    with pytest.raises(ValueError, match=f"{DIMS} dimensions"):
        store.put(("a",), "k", {"text": "hello"})
    assert store.get(("a",), "k") is None  # nothing half-written
    with pytest.raises(ValueError, match="not both"):
        open_store({"embed": sync_embed, "dims": DIMS}, embedder="none")


def test_the_store_records_its_embeddings_and_refuses_others(open_store: Any, tmp_path: Path) -> None:
    path = tmp_path / "recorded"
    first = open_store({"embed": TrigramEmbeddings(), "dims": DIMS}, path=path)
    first.put(("a",), "k", {"text": "kept across reopenings"})
    first.close()

    def other(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] * DIMS for _ in texts]

    with pytest.raises(EmbedderMismatchError, match="(?s)TrigramEmbeddings.*built with"):
        open_store({"embed": other, "dims": DIMS}, path=path)
    with pytest.raises(EmbedderMismatchError):
        open_store(None, path=path, embedder="none")
    again = open_store({"embed": TrigramEmbeddings(), "dims": DIMS}, path=path)
    assert again.search(("a",), query="kept across reopenings")[0].key == "k"
    again.close()

    with Memory(path=str(tmp_path / "plain"), embedder="none") as plain:
        with pytest.raises(ValueError, match="index_embedder"):
            RememStore(plain, index={"embed": other, "dims": DIMS})
    index = {"embed": TrigramEmbeddings(), "dims": DIMS}
    with Memory(path=str(path), embedder=index_embedder(index)) as shared:  # the documented way to share it
        assert RememStore(shared, index=index).get(("a",), "k") is not None


# ---------------------------------------------------------------------- fields, per-put index, updates
def test_field_paths_per_put_index_and_reembedding(open_store: Any) -> None:
    store = open_store({"embed": TrigramEmbeddings(), "dims": DIMS, "fields": ["profile.city", "pets[*].name"]})
    store.put(("u",), "ann", {"profile": {"city": "Lisbon", "job": "welder"}, "pets": [{"name": "Biscuit"},
                                                                                       {"name": "Mango"}]})
    store.put(("u",), "bob", {"profile": {"city": "Oslo", "job": "Lisbon guide"}, "pets": []})

    def score(query: str, key: str, **kw: Any) -> float | None:
        return next(h.score for h in store.search(("u",), query=query, **kw) if h.key == key)

    assert score("Mango", "ann") == pytest.approx(1.0, abs=1e-3)  # one vector per list element
    assert score("Lisbon", "ann") == pytest.approx(1.0, abs=1e-3)
    assert score("Lisbon guide", "bob") < 0.9  # "job" is not an indexed field
    assert score("welder", "ann") < 0.9

    # a per-put field list replaces the configured ones for that item
    store.put(("u",), "bob", {"profile": {"city": "Oslo", "job": "Lisbon guide"}}, index=["profile.job"])
    assert score("Lisbon guide", "bob") == pytest.approx(1.0, abs=1e-3)
    assert score("Oslo", "bob") < 0.9
    # an update re-embeds: the old text no longer scores, the new one does
    store.put(("u",), "ann", {"profile": {"city": "Porto"}, "pets": []})
    assert score("Mango", "ann") < 0.9
    assert score("Porto", "ann") == pytest.approx(1.0, abs=1e-3)
    # index=False: listed and filterable, never scored, and after every scored item
    store.put(("u",), "cid", {"profile": {"city": "Mango"}}, index=False)
    hits = store.search(("u",), query="Mango")
    assert [h.key for h in hits][-1] == "cid" and hits[-1].score is None
    assert store.search(("u",), filter={"profile.city": "Mango"})[0].key == "cid"


def test_scored_items_come_first_and_never_compare_with_none(open_store: Any) -> None:
    store = open_store({"embed": TrigramEmbeddings(), "dims": DIMS, "fields": ["text"]})
    for i in range(6):
        store.put(("n",), f"plain{i}", {"text": f"unrelated entry {i}"}, index=False)
        store.put(("n",), f"idx{i}", {"text": f"garden compost batch {i}"})
    hits = store.search(("n",), query="compost", limit=12)
    scores = [h.score for h in hits]
    scored = [s for s in scores if s is not None]
    assert len(scored) == 6 and scores[:6] == scored and scores[6:] == [None] * 6
    assert scored == sorted(scored, reverse=True)
    page2 = store.search(("n",), query="compost", limit=4, offset=4)
    assert [h.key for h in page2] == [h.key for h in hits[4:8]]


def test_without_embed_remem_scores_matches_and_unmatched_come_last(open_store: Any) -> None:
    store = open_store(None, embedder="none")
    store.put(("n",), "hit", {"text": "the staging database password rotates monthly"})
    store.put(("n",), "miss", {"text": "lunch order"})
    hits = store.search(("n",), query="staging database")
    assert store.embeddings is None
    assert [h.key for h in hits] == ["hit", "miss"]
    assert hits[0].score is not None and hits[0].score > 0 and hits[1].score is None


# ---------------------------------------------------------------------- filters, embedded and server paths
@pytest.fixture(params=["edge", "qdrant-local"])
def backend_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RememStore]:
    index = {"embed": TrigramEmbeddings(), "dims": DIMS, "fields": ["text"]}
    emb = index_embedder(index)
    mem = Memory(path=str(tmp_path / "edge"), embedder=emb) if request.param == "edge" else \
        Memory(url=":memory:", embedder=emb)
    yield RememStore(mem, index=index)
    mem.close()


DOCS = {
    "a": {"text": "alpha", "access-level": "public", "user": {"access-level": "nested", "123abc": "ok2"},
          "stats": {"rank": 3, "score": 4.5}, "it's \"quoted\"": "yes", "active": True,
          "when": "2025-03-01T10:00:00Z"},
    "b": {"text": "beta", "access-level": "private", "user": {"access-level": "top"},
          "stats": {"rank": 7, "score": 2.0}, "active": False, "when": "2025-05-01T10:00:00Z"},
    "c": {"text": "gamma", "123abc": "ok", "stats": {"rank": 5}, "active": 1},
    # lists: Qdrant matches inside them, LangGraph's equality does not (a list is not its element)
    "d": {"text": "delta", "access-level": ["public"], "stats": [{"rank": 6}], "123abc": ["ok"]},
}
FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({"user.access-level": "nested"}, {"a"}),
    ({"access-level": "public"}, {"a"}),
    ({"user.123abc": "ok2"}, {"a"}),
    ({"123abc": "ok"}, {"c"}),
    ({"it's \"quoted\"": "yes"}, {"a"}),
    ({"stats.rank": {"$gt": 3, "$lte": 7}}, {"b", "c"}),
    ({"stats.rank": {"$gte": 3, "$lt": 5}}, {"a"}),
    ({"stats.rank": {"$ne": 5}}, {"a", "b", "d"}),
    ({"stats.rank": {"$eq": 7}}, {"b"}),
    ({"stats.score": {"$gte": 2.0}}, {"a", "b"}),
    ({"stats": {"rank": 5}}, {"c"}),
    ({"active": True}, {"a"}),  # True is not 1
    ({"user.access-level": {"$ne": "nested"}}, {"b", "c", "d"}),  # $ne matches a missing field, as in LangGraph
    ({"when": {"$gt": "2025-04-01T00:00:00+00:00"}}, {"b"}),
    ({"access-level": "public", "stats.rank": {"$gt": 100}}, set()),
    ({"access-level": ["public"]}, {"d"}),
]


@pytest.mark.parametrize("query", [None, "alpha beta gamma"])
def test_filters_match_paths_keys_and_operators_on_both_backends(backend_store: RememStore,
                                                                 query: str | None) -> None:
    for key, value in DOCS.items():
        backend_store.put(("docs", "x"), key, value)
    for flt, expected in FILTERS:
        found = {h.key for h in backend_store.search(("docs",), query=query, filter=flt, limit=10)}
        assert found == expected, flt


def test_malformed_filters_are_clear_errors(open_store: Any) -> None:
    store = open_store(None, embedder="none")
    store.put(("d",), "k", {"a": {"b": 1}})
    with pytest.raises(ValueError, match="Invalid filter key"):
        store.search(("d",), filter={"a..b": 1})
    with pytest.raises(ValueError, match=r"\$in.*\$eq, \$ne, \$gt, \$gte, \$lt, \$lte"):
        store.search(("d",), filter={"a.b": {"$in": [1]}})


def test_a_field_equal_to_the_query_wins_even_when_many_whole_texts_are_nearer(open_store: Any) -> None:
    """Candidates come from hybrid recall (words and identifiers too), so an item whose one indexed field matches
    the query exactly is found and ranked first by its field's vector, though 40 other items' whole-text vectors
    are nearer the query than its own (a long second field pulls it away)."""
    store = open_store({"embed": TrigramEmbeddings(), "dims": DIMS, "fields": ["title", "body"]})
    body = "quarterly revenue summary for the northern warehouse region, audited twice by the finance team"
    store.put(("d",), "target", {"title": "Mango", "body": body})
    near = [f"mangold tango {i}" for i in range(40)]
    store.batch([PutOp(("d",), f"near{i}", {"title": t}) for i, t in enumerate(near)])
    query = trigram_vector("mango")
    assert max(cosine(query, trigram_vector(f"Mango\n{body}")), 0.0) < min(cosine(query, trigram_vector(t))
                                                                           for t in near)
    hits = store.search(("d",), query="mango", limit=5)
    assert hits[0].key == "target" and hits[0].score == pytest.approx(1.0, abs=1e-3)


def test_packed_vectors_pass_the_redactor_unchanged_and_keep_cosines() -> None:
    """Vectors are stored as strings; remem redacts every metadata string, so no secret or PII rule may ever
    rewrite one (random unit vectors of the usual sizes, PII rules on)."""
    import random

    from remem.core.redact.redactor import configured
    from remem.integrations.langgraph.store_embed import best_cosine, pack, unit

    rng = random.Random(7)
    redactor = configured(True)
    for _ in range(200):
        dims = rng.choice([8, 48, 384, 1536])
        vecs = [[rng.gauss(0, 1) for _ in range(dims)] for _ in range(2)]
        packed = "".join(pack(v) for v in vecs)
        assert redactor.redact(packed).text == packed
        query = [rng.gauss(0, 1) for _ in range(dims)]
        best = best_cosine(unit(query), packed)
        assert best == pytest.approx(max(cosine(query, v) for v in vecs), abs=1e-4)


def test_order_recall_keeps_remems_hybrid_order_with_langgraph_scores(open_store: Any) -> None:
    index = {"embed": TrigramEmbeddings(), "dims": DIMS, "fields": ["text"]}
    docs = {"words": "the blue whale sang at dawn near the old pier", "spelling": "bluewhalee",
            "other": "tax forms"}
    by_score = open_store(index)
    by_recall = open_store(index, order="recall")
    for store in (by_score, by_recall):
        store.put(("n",), "skip", {"text": "blue whale"}, index=False)
        store.batch([PutOp(("n",), k, {"text": t}) for k, t in docs.items()])
    scores = {h.key: h.score for h in by_score.search(("n",), query="blue whale")}
    assert scores["spelling"] > scores["words"]  # nearer by trigrams, but shares no word with the query
    assert [h.key for h in by_score.search(("n",), query="blue whale")][:2] == ["spelling", "words"]
    hits = by_recall.search(("n",), query="blue whale")
    assert [h.key for h in hits][0] == "words"  # the words match leads remem's fused order
    assert {h.key: h.score for h in hits} == pytest.approx(scores)  # the same LangGraph scores
    assert hits[-1].key == "skip" and hits[-1].score is None
    with pytest.raises(ValueError, match="order"):
        open_store(index, order="bm25")
