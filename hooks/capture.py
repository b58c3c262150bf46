"""Stop / PreCompact / SessionEnd: capture the new part of the session without making Claude Code wait.

The hook only reads the transcript from where the previous capture stopped, redacts the new turns (secrets and
PII), writes them to a durable spool file under ``$REMEM_HOME/hooks/spool`` and starts a detached drainer
process. The drainer hands each spooled capture to ``Memory.remember`` (through the local service, which
distils it) and deletes it only once that succeeded. Per-session state (transcript byte offset, last entry uuid,
last final answer) makes repeated Stops incremental: each turn is captured once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from . import transcript
from .common import HookInput, env_flag, hooks_dir, log, read_json, safe_name, warn, write_json

MAX_CAPTURE_CHARS = 40_000


def spool_dir() -> Path:
    return hooks_dir() / "spool"


def session_state_path(session_id: str) -> Path:
    return hooks_dir() / "sessions" / f"{safe_name(session_id)}.json"


@contextlib.contextmanager
def file_lock(path: Path, blocking: bool = True) -> Iterator[bool]:
    """An advisory flock (POSIX); yields False when ``blocking`` is off and another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")
    try:
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        except (ImportError, OSError):
            pass  # no flock here: proceed unlocked rather than not at all
        yield True
    finally:
        fh.close()


def _redact(messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, int]]:
    from remem.core.redact.redactor import configured

    redactor = configured(env_flag("REMEM_HOOK_PII", True))
    counts: dict[str, int] = {}
    out = []
    for msg in messages:
        result = redactor.redact(msg["content"])
        for kind, n in result.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        out.append({"role": msg["role"], "content": result.text})
    return out, counts


def _fit(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Keep the newest messages that fit in MAX_CAPTURE_CHARS (a capture is a turn, not a whole archive)."""
    kept: list[dict[str, str]] = []
    used = 0
    for msg in reversed(messages):
        used += len(msg["content"])
        if used > MAX_CAPTURE_CHARS and kept:
            break
        kept.append(msg)
    return list(reversed(kept))


def capture(inp: HookInput) -> dict[str, Any]:
    """Spool the session's new turns; returns what was done (for the log and tests). Never raises OSError
    from a missing transcript: the final answer from the payload is still captured."""
    if not inp.session_id:
        return {"status": "skipped", "reason": "no session_id in the hook input"}
    tenant = inp.tenant
    state_path = session_state_path(inp.session_id)
    with file_lock(state_path.with_suffix(".lock")):
        state = read_json(state_path)
        state = state if isinstance(state, dict) else {}
        if state.get("transcript") != inp.transcript_path:
            state = {"transcript": inp.transcript_path}
        offset = state.get("offset") if isinstance(state.get("offset"), int) else 0
        last_uuid = state.get("last_uuid") if isinstance(state.get("last_uuid"), str) else None
        already = state.get("final") if isinstance(state.get("final"), str) else ""
        found: list[transcript.Turn] = []
        note = ""
        if inp.transcript_path:
            try:
                result = transcript.read_new(inp.transcript_path, offset, last_uuid)
                found = transcript.turns(result.entries, root=tenant)
                offset, last_uuid = result.offset, result.last_uuid
            except OSError as exc:
                note = f"transcript unreadable ({type(exc).__name__}); captured the final answer only"
        else:
            note = "no transcript_path; captured the final answer only"
        messages = transcript.to_messages(found, inp.last_assistant_message, already)
        final = transcript.normalize(inp.last_assistant_message) or already
        if not messages:
            _save_state(state_path, state, offset, last_uuid, final, tenant)
            return {"status": "nothing new", "note": note}
        messages, counts = _redact(_fit(messages))
        item = {"id": str(uuid.uuid4()), "tenant": tenant, "session": inp.session_id, "event": inp.event,
                "trigger": inp.trigger or inp.reason or None, "created": time.time(), "attempts": 0,
                "messages": messages}
        name = f"{time.time_ns()}-{hashlib.sha1(item['id'].encode()).hexdigest()[:8]}.json"
        write_json(spool_dir() / name, item)  # durable first: losing the state below only re-captures
        _save_state(state_path, state, offset, last_uuid, final, tenant)
    if inp.event == "SessionEnd":
        prune_states()
    started = start_drainer()
    return {"status": "spooled", "messages": len(messages), "redacted": sum(counts.values()), "note": note,
            "spool": name, "drainer": started}


def _save_state(path: Path, state: dict[str, Any], offset: int, last_uuid: str | None, final: str,
                tenant: str) -> None:
    state.update(offset=offset, last_uuid=last_uuid, final=final, tenant=tenant, updated=time.time())
    write_json(path, state)


def prune_states(max_age_days: float = 30) -> int:
    """Forget capture offsets of sessions untouched for a month (Claude Code keeps transcripts 30 days)."""
    cutoff = time.time() - max_age_days * 86400
    removed = 0
    for path in (hooks_dir() / "sessions").glob("*"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError:
            pass
    return removed


# ---------------------------------------------------------------------------------------------- drainer
def start_drainer() -> str:
    """Run the drainer detached (its own session, no pipes), so the hook returns at once.

    ``REMEM_HOOK_DRAIN``: ``spawn`` (default), ``inline`` (drain in this process; tests, debugging) or ``off``.
    """
    mode = os.environ.get("REMEM_HOOK_DRAIN", "spawn").strip().lower()
    if mode == "off":
        return "off"
    if mode == "inline":
        return f"inline:{drain()}"
    try:
        subprocess.Popen([sys.executable, "-m", "remem.hooks.main", "drain"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                         start_new_session=True)
        return "spawned"
    except OSError as exc:
        log("capture", f"could not start the drainer: {exc}")
        return "failed"


def remember(mem: Any, messages: list[dict[str, str]], tenant: str, session: str) -> Any:
    """Distil one spooled capture into the project's memory (PII redacted unless REMEM_HOOK_PII=0)."""
    from remem import Scope

    return mem.remember(messages, scope=Scope(tenant=tenant), session=session,
                        pii=env_flag("REMEM_HOOK_PII", True), source="claude-code")


def open_memory(deadline: float) -> Any:
    """``Memory()`` as configured by the environment, retrying while another process holds the store."""
    from remem import Memory, StoreLockedError

    while True:
        try:
            return Memory()
        except StoreLockedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def drain(max_seconds: float | None = None) -> int:
    """Hand every spooled capture to remem; returns how many were handed over. One drainer at a time."""
    budget = max_seconds if max_seconds is not None else float(os.environ.get("REMEM_HOOK_DRAIN_SECONDS", 120))
    deadline = time.monotonic() + budget
    done = 0
    folder = spool_dir()
    while True:
        with file_lock(hooks_dir() / "drain.lock", blocking=False) as got:
            if not got:
                return done  # another drainer runs and will see our file
            handed, stalled = _drain_locked(folder, deadline)
            done += handed
        # a capture spooled while we held the lock but after our last listing would wait for the next Stop:
        if stalled or time.monotonic() >= deadline or not any(folder.glob("*.json")):
            return done


def _drain_locked(folder: Path, deadline: float) -> tuple[int, bool]:
    """(captures handed over, stalled: stopped early because the store or remember is unavailable)."""
    mem = None
    done = 0
    stalled = False
    try:
        while time.monotonic() < deadline:
            files = sorted(folder.glob("*.json"))
            if not files:
                break
            progressed = False
            for path in files:
                item = read_json(path)
                if not _valid(item):
                    _move_failed(path, "not a capture")
                    continue
                if mem is None:
                    try:
                        mem = open_memory(min(deadline, time.monotonic() + 30))
                    except Exception as exc:  # noqa: BLE001 - store busy/unreadable: keep the spool for later
                        log("drain", f"store not available: {type(exc).__name__}: {str(exc)[:200]}")
                        return done, True
                try:
                    remember(mem, item["messages"], item["tenant"], item["session"])
                except ImportError as exc:  # distillation not installed (yet): keep it queued
                    log("drain", f"remember unavailable: {exc}")
                    return done, True
                except Exception as exc:  # noqa: BLE001
                    item["attempts"] = int(item.get("attempts", 0)) + 1
                    log("drain", f"remember failed ({item['attempts']}): {type(exc).__name__}: {str(exc)[:200]}")
                    if item["attempts"] >= 3:
                        _move_failed(path, "remember failed 3 times")
                    else:
                        write_json(path, item)
                    continue
                path.unlink(missing_ok=True)
                done += 1
                progressed = True
            if not progressed:
                stalled = True
                break
    finally:
        if mem is not None:
            try:
                mem.close()
            except Exception:  # noqa: BLE001
                pass
    if done:
        log("drain", f"handed {done} capture(s) to remem")
    return done, stalled


def _valid(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("tenant"), str) and item["tenant"]
            and isinstance(item.get("session"), str) and item["session"]
            and isinstance(item.get("messages"), list) and bool(item["messages"]))


def _move_failed(path: Path, why: str) -> None:
    target = path.parent / "failed" / path.name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    except OSError:
        pass
    warn("drain", f"moved {path.name} to spool/failed: {why}")
