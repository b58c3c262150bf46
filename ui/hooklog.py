"""What the Claude Code hooks recalled, read from the files they leave under ``$REMEM_HOME``.

``hooks/last_recall/<project>.json`` holds the last UserPromptSubmit recall of each project (the injected text,
the status, how long the hook took); ``logs/hooks.log`` (rotated once to ``hooks.log.1``) has one JSON line per
hook run, whose ``ms`` is the hook's time since its process started. Both are read defensively: a missing or
corrupt file is "nothing recorded", never an error page.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import dataclass
from typing import Any

from remem.hooks.common import last_recall_dir, remem_home

MAX_RECALLS = 100
MAX_LOG_BYTES = 4_000_000
RECALL_MESSAGES = ("injected", "no matching memories")  # the recall log lines that ran a search


@dataclass(frozen=True)
class RecallRecord:
    tenant: str
    session: str
    at: _dt.datetime
    status: str
    memories: int
    context: str
    ms: float | None


@dataclass(frozen=True)
class LatencyPoint:
    at: _dt.datetime
    ms: float
    outcome: str


def recent_recalls(limit: int = MAX_RECALLS) -> list[RecallRecord]:
    """The last recall of each project, newest first."""
    folder = last_recall_dir()
    out: list[RecallRecord] = []
    try:
        paths = list(folder.glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            data = json.loads(path.read_text("utf-8"))
            at = _dt.datetime.fromtimestamp(float(data.get("at", 0)), tz=_dt.timezone.utc)
            ms = data.get("ms")
            out.append(RecallRecord(tenant=str(data.get("tenant", "")), session=str(data.get("session") or ""),
                                    at=at, status=str(data.get("status", "")), memories=int(data.get("memories", 0)),
                                    context=str(data.get("context") or ""),
                                    ms=float(ms) if isinstance(ms, (int, float)) else None))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    out.sort(key=lambda r: r.at, reverse=True)
    return out[:limit]


_parsed: dict[tuple[Any, ...], list[LatencyPoint]] = {}


def _log_key() -> tuple[Any, ...]:
    """What the parsed log depends on: each file's size and mtime (a page load re-reads only a changed log)."""
    folder = remem_home() / "logs"
    key: list[Any] = [str(folder)]
    for name in ("hooks.log.1", "hooks.log"):
        try:
            st = (folder / name).stat()
            key.append((st.st_size, st.st_mtime_ns))
        except OSError:
            key.append(None)
    return tuple(key)


def _log_lines() -> list[str]:
    folder = remem_home() / "logs"
    lines: list[str] = []
    for name in ("hooks.log.1", "hooks.log"):  # oldest first
        path = folder / name
        try:
            with open(path, "rb") as fh:
                size = path.stat().st_size
                if size > MAX_LOG_BYTES:
                    fh.seek(size - MAX_LOG_BYTES)
                    fh.readline()  # drop the partial first line
                lines.extend(fh.read().decode("utf-8", "replace").splitlines())
        except OSError:
            continue
    return lines


def recall_latencies(hours: float = 24.0, now: float | None = None) -> list[LatencyPoint]:
    """The recall hook's latency (its process's time, start-up included) for each search in the last ``hours``.

    The log's ``ts`` is the hook machine's local time, without a zone, so it is read as local time."""
    now = time.time() if now is None else now
    cutoff = _dt.datetime.fromtimestamp(now - hours * 3600, tz=_dt.timezone.utc)
    key = _log_key()
    if key not in _parsed:
        _parsed.clear()
        _parsed[key] = _parse_log()
    return [p for p in _parsed[key] if p.at >= cutoff]


def _parse_log() -> list[LatencyPoint]:
    points: list[LatencyPoint] = []
    for line in _log_lines():
        if '"recall"' not in line and "deadline" not in line:
            continue
        try:
            data: dict[str, Any] = json.loads(line)
        except ValueError:
            continue
        msg = str(data.get("msg", ""))
        if data.get("event") == "recall" and msg in RECALL_MESSAGES:
            outcome = msg
        elif data.get("event") == "UserPromptSubmit" and "deadline" in msg:
            outcome = "gave up at the deadline"  # the hook's own warning line; nothing was injected
        else:
            continue
        try:
            stamp = time.mktime(time.strptime(str(data["ts"]), "%Y-%m-%dT%H:%M:%S"))
            ms = float(data["ms"])
        except (KeyError, ValueError, TypeError, OverflowError):
            continue
        points.append(LatencyPoint(_dt.datetime.fromtimestamp(stamp, tz=_dt.timezone.utc), ms, outcome))
    return points


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


__all__ = ["LatencyPoint", "RecallRecord", "percentile", "recall_latencies", "recent_recalls"]
