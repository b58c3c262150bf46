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
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from . import transcript
from remem.core.config import private_dir, private_opener

from .callenv import environ, getenv, served

from .common import HookInput, env_flag, hook_command, hooks_dir, log, open_memory, read_json, safe_name, scrub, warn, write_json

MAX_CAPTURE_CHARS = 40_000


def spool_dir() -> Path:
    return hooks_dir() / "spool"


def session_state_path(session_id: str) -> Path:
    return hooks_dir() / "sessions" / f"{safe_name(session_id)}.json"


LOCK_WAIT_SECONDS = 30.0  # a capture waits this long for another capture of its session, then gives up


@contextlib.contextmanager
def file_lock(path: Path, blocking: bool = True, wait: float | None = None) -> Iterator[bool]:
    """An advisory flock (POSIX); yields False when ``blocking`` is off and another process holds it. With
    ``wait``, blocking gives up after that many seconds with a TimeoutError: a holder that hangs must not pile
    up the session's later hooks behind it (their turns stay in the transcript for the next capture)."""
    private_dir(path.parent)
    fh = open(path, "a+", opener=private_opener)
    try:
        try:
            import fcntl

            _flock(fh.fileno(), fcntl, blocking, wait)
        except BlockingIOError:
            yield False
            return
        except TimeoutError:
            raise
        except (ImportError, OSError):
            pass  # no flock here: proceed unlocked rather than not at all
        yield True
    finally:
        fh.close()


def _flock(fd: int, fcntl: Any, blocking: bool, wait: float | None) -> None:
    if not blocking or wait is None:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"another capture of this session held its lock for {wait:g} s") from None
            time.sleep(0.05)


def _redact(messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, int]]:
    from remem.core.redact.redactor import configured

    redactor = configured(env_flag("REMEM_HOOK_PII", True), environ())
    counts: dict[str, int] = {}
    out = []
    for msg in messages:
        result = redactor.redact(msg["content"])
        for kind, n in result.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        out.append({"role": msg["role"], "content": result.text,
                    **{k: msg[k] for k in ("id", "timestamp") if msg.get(k)}})  # when it was said, not drained
    return out, counts


def _raw_final(stored: str, last_message: str, found: list[transcript.Turn]) -> str:
    """The previous final answer as the payload/transcript have it, given the redacted copy in the state file.

    The state keeps only the redacted answer; if it hid a secret, the raw answer is the candidate (this Stop's
    answer or a transcript text) that redacts to it, so "already captured" still works."""
    if "[REDACTED:" not in stored:
        return stored
    for candidate in (last_message, *(t for turn in found for t in turn.texts)):
        if candidate and scrub(transcript.normalize(candidate)) == stored:
            return candidate
    return stored


def _fit(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """At most MAX_CAPTURE_CHARS (a capture is a turn, not a whole archive). What the assistant said on the way
    (an assistant message followed by another) goes first, oldest first; then the oldest messages, so a long
    turn keeps its prompt and its final answer."""
    total = sum(len(m["content"]) for m in messages)
    on_the_way = [i for i in range(len(messages) - 1)
                  if messages[i]["role"] == "assistant" and messages[i + 1]["role"] == "assistant"]
    dropped: set[int] = set()
    for i in on_the_way:
        if total <= MAX_CAPTURE_CHARS:
            break
        dropped.add(i)
        total -= len(messages[i]["content"])
    rest = [m for i, m in enumerate(messages) if i not in dropped]
    kept: list[dict[str, str]] = []
    used = 0
    for msg in reversed(rest):
        used += len(msg["content"])
        if used > MAX_CAPTURE_CHARS and kept:
            break
        kept.append(msg)
    return list(reversed(kept))


LAG_WAIT_SECONDS = 1.0


def _read(inp: HookInput, offset: int, last_uuid: str | None,
          stored_final: str) -> tuple[transcript.ReadResult, list[transcript.Turn]]:
    """The transcript's new entries and turns. At Stop the transcript often lags behind the final answer the
    payload holds (a first turn's transcript may not even exist yet); served (after the hook was answered, off
    Claude Code's path) this waits up to LAG_WAIT_SECONDS for it, so the answer is captured with its transcript
    id (its ``sources``; a forked session's copy of it is then recognised). In the hook's own process it never
    waits."""
    final = transcript.normalize(inp.last_assistant_message)
    wait = bool(final) and served() is not None and scrub(final) != stored_final
    deadline = time.monotonic() + (LAG_WAIT_SECONDS if wait else 0.0)
    while True:
        try:
            result = transcript.read_new(inp.transcript_path, offset, last_uuid)
        except FileNotFoundError:  # not written yet (a first turn's transcript can appear after its Stop)
            if not wait or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
            continue
        found = transcript.turns(result.entries, root=inp.folder)
        if not wait or any(transcript.normalize(t) == final for turn in found for t in turn.texts) \
                or time.monotonic() >= deadline:
            return result, found
        time.sleep(0.05)


def capture(inp: HookInput) -> dict[str, Any]:
    """Spool the session's new turns; returns what was done (for the log and tests). Never raises OSError
    from a missing transcript: the final answer from the payload is still captured."""
    if not inp.session_id:
        return {"status": "skipped", "reason": "no session_id in the hook input"}
    tenant = inp.tenant
    state_path = session_state_path(inp.session_id)
    with file_lock(state_path.with_suffix(".lock"), wait=LOCK_WAIT_SECONDS):
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
                result, found = _read(inp, offset, last_uuid, already)
                offset, last_uuid = result.offset, result.last_uuid
            except OSError as exc:
                note = f"transcript unreadable ({type(exc).__name__}); captured the final answer only"
        else:
            note = "no transcript_path; captured the final answer only"
        already = _raw_final(already, inp.last_assistant_message, found)
        messages = transcript.to_messages(found, inp.last_assistant_message, already, with_time=True)
        final = transcript.normalize(inp.last_assistant_message) or already  # redacted by write_json
        if not messages:
            if (offset, last_uuid, final, tenant) != tuple(state.get(k) for k in ("offset", "last_uuid", "final",
                                                                                   "tenant")):
                _save_state(state_path, state, offset, last_uuid, final, tenant)  # else: nothing to write
            return {"status": "nothing new", "note": note, **_flush_held(inp)}
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
                tenant: str | None) -> None:
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
    In the service (a capture it answers for the thin client, already off Claude Code's path) it drains inline.
    """
    mode = (getenv("REMEM_HOOK_DRAIN") or "spawn").strip().lower()
    if mode == "off":
        return "off"
    if mode == "inline" or served() is not None:
        return f"inline:{drain()}"
    try:
        subprocess.Popen(hook_command("drain"), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                         start_new_session=True)
        return "spawned"
    except OSError as exc:
        log("capture", f"could not start the drainer: {exc}")
        return "failed"


def remember(mem: Any, messages: list[dict[str, str]], tenant: str | None, session: str) -> Any:
    """Distil one spooled capture into the project's memory (PII redacted unless REMEM_HOOK_PII=0).

    With ``REMEM_DISTILLER=claude-code`` the distiller runs here, in the detached drainer (a headless
    ``claude -p`` with this environment), and the result is stored through the service."""
    from remem import Scope

    extra: dict[str, Any] = {}
    if distils_with_claude_code():
        from remem.core.distill.claude_code import ClaudeCodeDistiller

        extra["distiller"] = ClaudeCodeDistiller.from_env()
    return mem.remember(messages, scope=Scope(tenant=tenant), session=session,
                        pii=env_flag("REMEM_HOOK_PII", True), source="claude-code", **extra)


BATCH_SECONDS = 600.0  # claude-code distiller: a session's captures wait at most this long for its end


def distils_with_claude_code() -> bool:
    """The claude-code distiller costs a `claude -p` call per remember: captures are batched per session."""
    return (getenv("REMEM_DISTILLER") or "").strip().lower() in ("claude-code", "claude_code", "claude")


def _batches(folder: Path) -> list[list[tuple[Path, dict[str, Any]]]]:
    """Spooled captures grouped by (tenant, session), oldest first; anything else is moved to spool/failed."""
    groups: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = {}
    for path in sorted(folder.glob("*.json")):
        item = read_json(path)
        if not _valid(item):
            _move_failed(path, "not a capture")
            continue
        groups.setdefault((item["tenant"], item["session"]), []).append((path, item))
    return list(groups.values())


def ended_marker(session: str) -> Path:
    return spool_dir() / "ended" / safe_name(session)


def mark_ended(session: str) -> Path:
    """The marker that a session ended, in a 0700 folder, 0600 (like everything remem writes)."""
    marker = ended_marker(session)
    private_dir(marker.parent)
    with open(marker, "a", opener=private_opener):
        pass
    return marker


def _flush_held(inp: HookInput) -> dict[str, Any]:
    """A session ended (or compacts) with nothing new to capture: its held captures are due now."""
    if not distils_with_claude_code() or inp.event not in ("SessionEnd", "PreCompact"):
        return {}
    if not any(spool_dir().glob("*.json")):
        return {}
    mark_ended(inp.session_id)
    return {"drainer": start_drainer()}


def _due(batch: list[tuple[Path, dict[str, Any]]], now: float) -> bool:
    """Distil now, or wait for more of the session (claude-code distiller only: until the session ends or
    compacts, or its oldest capture is BATCH_SECONDS old)."""
    if not distils_with_claude_code():
        return True
    window = float(getenv("REMEM_CLAUDE_DISTILL_BATCH_SECONDS") or BATCH_SECONDS)
    return any(item.get("event") in ("SessionEnd", "PreCompact") for _, item in batch) or \
        ended_marker(batch[0][1]["session"]).exists() or \
        now - min(float(item.get("created") or 0) for _, item in batch) >= window


def drain(max_seconds: float | None = None) -> int:
    """Hand every spooled capture to remem; returns how many were handed over. One drainer at a time."""
    budget = max_seconds if max_seconds is not None else float(getenv("REMEM_HOOK_DRAIN_SECONDS") or 120)
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
            batches = _batches(folder)
            if not batches:
                break
            progressed = False
            for batch in batches:  # one remember per session: its captures distilled together
                if not _due(batch, time.time()):
                    continue
                if mem is None:
                    try:
                        mem = open_memory(min(deadline, time.monotonic() + 30))
                    except Exception as exc:  # noqa: BLE001 - store busy/unreadable: keep the spool for later
                        log("drain", f"store not available: {type(exc).__name__}: {str(exc)[:200]}")
                        return done, True
                tenant, session = batch[0][1]["tenant"], batch[0][1]["session"]
                try:
                    remember(mem, [m for _, item in batch for m in item["messages"]], tenant, session)
                except ImportError as exc:  # distillation not installed (yet): keep it queued
                    log("drain", f"remember unavailable: {exc}")
                    return done, True
                except Exception as exc:  # noqa: BLE001
                    for path, item in batch:
                        item["attempts"] = int(item.get("attempts", 0)) + 1
                        log("drain", f"remember failed ({item['attempts']}): {type(exc).__name__}: "
                                     f"{str(exc)[:200]}")
                        if item["attempts"] >= 3:
                            _move_failed(path, "remember failed 3 times")
                        else:
                            write_json(path, item)
                    continue
                for path, _ in batch:
                    path.unlink(missing_ok=True)
                ended_marker(session).unlink(missing_ok=True)
                done += len(batch)
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
    return (isinstance(item, dict)  # tenant None: a session outside any git repository, the global space
            and (item.get("tenant") is None or isinstance(item.get("tenant"), str) and item["tenant"])
            and isinstance(item.get("session"), str) and item["session"]
            and isinstance(item.get("messages"), list) and bool(item["messages"]))


def _move_failed(path: Path, why: str) -> None:
    target = path.parent / "failed" / path.name
    try:
        private_dir(target.parent)
        os.replace(path, target)
    except OSError:
        pass
    warn("drain", f"moved {path.name} to spool/failed: {why}")
