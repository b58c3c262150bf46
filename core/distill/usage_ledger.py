"""The usage ledger: what LLM distillation has cost, one JSON line per capture in ``<store>/usage.jsonl``."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from ..config import private_opener
from ..providers.llm import Usage

log = logging.getLogger("remem.distill")

USAGE_FILE = "usage.jsonl"
_LEDGER_LOCK = threading.Lock()


def _ledger_path(engine: Any) -> Path | None:
    folder = getattr(getattr(engine, "backend", None), "folder", None)
    return Path(folder) / USAGE_FILE if folder is not None else None


def record_usage(engine: Any, usage: Usage, *, model: str, session: str | None = None) -> None:
    """Append one capture's LLM token usage to ``<store>/usage.jsonl`` (no ledger for server backends)."""
    path = _ledger_path(engine)
    if path is None:
        return
    line = json.dumps({"ts": time.time(), "model": model, "session": session, **usage.as_dict()})
    try:
        with _LEDGER_LOCK, open(path, "a", encoding="utf-8", opener=private_opener) as fh:
            fh.write(line + "\n")
    except OSError as exc:
        log.debug("usage ledger not written: %s", exc)


def usage_totals(engine: Any) -> dict[str, Any]:
    """What distillation has cost in this store: captures, LLM calls and tokens, in total and per model."""
    totals: dict[str, Any] = {"captures": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                              "total_tokens": 0, "by_model": {}}
    path = _ledger_path(engine)
    if path is None or not path.exists():
        return totals
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            model = totals["by_model"].setdefault(str(row.get("model")), {"captures": 0, "calls": 0,
                                                                           "prompt_tokens": 0,
                                                                           "completion_tokens": 0})
            totals["captures"] += 1
            model["captures"] += 1
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                n = int(row.get(key) or 0)
                totals[key] += n
                model[key] += n
    totals["total_tokens"] = totals["prompt_tokens"] + totals["completion_tokens"]
    return totals


__all__ = ["USAGE_FILE", "record_usage", "usage_totals"]
