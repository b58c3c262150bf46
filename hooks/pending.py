"""Turns said while remem was setting itself up: captured by the first hook that runs with remem.

Before the plugin's venv exists, every hook goes to ``hooks/bootstrap.py`` (standard library only), which keeps a
pointer per session under ``$REMEM_HOME/hooks/pending/``: the transcript's path, the project folder and how
far the transcript had got, no text (:func:`remem.hooks.bootstrap.keep_pointer`). Claude Code keeps the
transcript itself, so the pointer is all that is needed: :func:`take_up` captures each session from where its
capture state stands (the start, for a session remem never saw) to the transcript's end, oldest session first,
through the same :func:`remem.hooks.capture.capture` a Stop runs (redacted, spooled, distilled), and removes the
pointer once that is done. A pointer whose session was captured meanwhile by its own Stop finds nothing new.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .common import HookInput, hooks_dir, log

MAX_POINTERS = 200  # per take-up: a month of sessions set up on a machine without remem is not a hook's job


def pending_dir() -> Path:
    return hooks_dir() / "pending"


def waiting() -> bool:
    """Whether any pointer waits (one directory listing: cheap enough for every hook)."""
    try:
        with os.scandir(pending_dir()) as it:
            return any(e.name.endswith(".json") for e in it)
    except OSError:
        return False


def _pointers() -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in pending_dir().glob("*.json"):
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and data[k]
                                                 for k in ("session", "transcript", "cwd")):
            _remove(path)  # not a pointer (a partial write cannot happen: written by rename)
            continue
        out.append((path, data))
    out.sort(key=lambda item: (float(item[1].get("first_seen") or 0), item[0].name))
    return out[:MAX_POINTERS]


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def take_up() -> int:
    """Capture every session a pointer names, oldest first; returns how many were taken up. Never raises."""
    from .capture import file_lock

    try:
        with file_lock(hooks_dir() / "pending.lock", blocking=False) as got:
            return _take_up() if got else 0  # not got: another hook is taking them up
    except OSError:
        return 0


def _take_up() -> int:
    from .capture import capture

    done = 0
    for path, pointer in _pointers():
        inp = HookInput(event="Stop", session_id=pointer["session"], transcript_path=pointer["transcript"],
                        cwd=pointer["cwd"], raw={"session_id": pointer["session"]})
        try:
            result = capture(inp)
        except Exception as exc:  # noqa: BLE001 - kept for the next hook
            log("pending", f"could not take up a session kept while remem set itself up: {type(exc).__name__}: "
                           f"{str(exc)[:200]}")
            continue
        if result.get("note") and "unreadable" in str(result.get("note")) and not os.path.exists(pointer["transcript"]):
            log("pending", "the transcript of a session kept while remem set itself up is gone")
        try:
            if json.loads(path.read_text("utf-8")).get("seen") != pointer.get("seen"):
                continue  # the session went on meanwhile (a newer position): the next take-up has it
        except (OSError, ValueError):
            pass
        _remove(path)
        done += 1
        log("pending", "took up a session kept while remem set itself up", status=result.get("status", ""),
            messages=result.get("messages", 0))
    return done


__all__ = ["pending_dir", "take_up", "waiting"]
