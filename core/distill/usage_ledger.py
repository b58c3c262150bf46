"""The usage ledger: what LLM distillation has cost, one JSON line per capture in ``<store>/usage.jsonl``."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from ..config import private_opener
from ..providers.llm import Usage

log = logging.getLogger("remem.distill")

USAGE_FILE = "usage.jsonl"
_LEDGER_LOCK = threading.Lock()


def _ledger_path(engine: Any) -> Path | None:
    folder = getattr(getattr(engine, "backend", None), "folder", None)
    return Path(folder) / USAGE_FILE if folder is not None else None


def _state(engine: Any) -> Any:
    return getattr(getattr(engine, "backend", None), "state", None)  # a Qdrant server's meta collection


def record_usage(engine: Any, usage: Usage, *, model: str, session: str | None = None) -> None:
    """Record one capture's LLM token usage: a line of ``<store>/usage.jsonl`` for the embedded store, an entry
    of the meta collection on a Qdrant server (so app servers keep no ledger of their own)."""
    row = {"ts": time.time(), "model": model, "session": session, **usage.as_dict()}
    state = _state(engine)
    try:
        if state is not None:
            state.put("usage", f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}", row)
            return
        path = _ledger_path(engine)
        if path is None:
            return
        with _LEDGER_LOCK, open(path, "a", encoding="utf-8", opener=private_opener) as fh:
            fh.write(json.dumps(row) + "\n")
    except Exception as exc:  # noqa: BLE001 - a ledger that cannot be written must not lose the capture
        log.warning("usage ledger not written: %s", exc)


def _rows(engine: Any) -> Iterator[dict[str, Any]]:
    state = _state(engine)
    if state is not None:
        for entry in state.scan("usage"):
            yield dict(entry.get("data") or {})
        return
    path = _ledger_path(engine)
    if path is None or not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def usage_totals(engine: Any) -> dict[str, Any]:
    """What distillation has cost in this store: captures, LLM calls and tokens, in total and per model."""
    totals: dict[str, Any] = {"captures": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                              "total_tokens": 0, "by_model": {}}
    for row in _rows(engine):
        model = totals["by_model"].setdefault(str(row.get("model")), {"captures": 0, "calls": 0,
                                                                       "prompt_tokens": 0, "completion_tokens": 0})
        totals["captures"] += 1
        model["captures"] += 1
        for key in ("calls", "prompt_tokens", "completion_tokens"):
            n = int(row.get(key) or 0)
            totals[key] += n
            model[key] += n
    totals["total_tokens"] = totals["prompt_tokens"] + totals["completion_tokens"]
    return totals


__all__ = ["USAGE_FILE", "record_usage", "usage_totals"]
