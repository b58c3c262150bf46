"""The service's side of :mod:`remem.hooks.fast`: a hook answered inside the warm local service.

A hook process that imports remem, connects and searches spends most of its time starting Python and importing
(the search itself is a few milliseconds in a warm service). So the thin client sends the hook's stdin, its
environment and working folder here, and the service runs the very same hook code (:func:`remem.hooks.main.answer`)
on its open store, with the client's settings (:mod:`remem.hooks.callenv`). What the hook defers (the session's
injected-memory record, the last-recall record, log lines) runs after the answer, in a low-priority thread.

The prompt's recall and the session start are answered before the reply. A capture (Stop, PreCompact,
SessionEnd) is acknowledged at once and done in a service thread: read the transcript, redact, spool, distil and
store, as the detached hook process did, without that process. What is acknowledged is durable: before the
answer, the capture's pointer (session, transcript path, project folder and the hook settings that pick its
tenant; no text) is written to the store's journal (:data:`JOURNAL_DIR`, 0600, fsynced) and removed once the
capture is done; a service that starts takes up what a killed one left there (:func:`resume`), once each (a
capture done twice finds nothing new: the session's transcript offset moved on) (a Python start-up and remem's imports, competing
with Claude Code for the CPU while it finishes the turn). Captures for the opt-in ``claude-code`` distiller are not
served: its ``claude -p`` runs need the hook process's own environment.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from typing import Any, Mapping

from remem.core.config import private_dir, write_private
from remem.core.connection import LocalConnection

from .callenv import ServedCall, serving
from .main import answer

PROTOCOL = 1
ANSWERED_EVENTS = ("UserPromptSubmit", "SessionStart")
CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
SERVED_EVENTS = ANSWERED_EVENTS + CAPTURE_EVENTS
MAX_AGE = 60.0  # seconds: a hook process older than this is not a hook that just started
JOURNAL_DIR = "hook-journal"  # in the store folder: acknowledged captures not done yet
# what a capture needs to be done again: the hook's fields that point into the transcript (never its text) and
# the settings that choose the tenant and how it is captured
JOURNAL_FIELDS = ("session_id", "transcript_path", "cwd", "hook_event_name", "trigger", "reason")
JOURNAL_ENV = ("HOME", "CLAUDE_PROJECT_DIR", "CLAUDE_CONFIG_DIR", "REMEM_HOME", "REMEM_PATH", "REMEM_HOOK_TENANT",
               "REMEM_HOOK_PII", "REMEM_HOOK_DRAIN", "REMEM_DISTILLER", "REMEM_REDACT_CONFIG")


class _Borrowed(LocalConnection):
    """The service's store, lent to one hook: each operation runs as the service runs a client's
    (:meth:`remem.core.service.server.Service.run`: BM25 only while the embedder warms up), and closing the
    hook's Memory leaves the store open."""

    def __init__(self, local: Any, service: Any) -> None:
        super().__init__(local)
        self.service = service

    def call(self, op: Any, arguments: dict[str, Any]) -> Any:
        return self.service.run(self.local, op.name, arguments)

    def with_settings(self, settings: Any) -> "_Borrowed":
        return _Borrowed(self.local.with_settings(settings), self.service)

    def close(self) -> None:
        pass


def _memory(service: Any) -> Any:
    from remem.core.memory import Memory, _Activity

    return Memory._from(_Borrowed(service.engine, service), _Activity())


def handle(service: Any, *, v: int, event: str, payload: str, env: Mapping[str, str], cwd: str, age: float,
           background: bool = False) -> dict[str, Any]:
    """The hook's output: ``{"stdout": ..., "stderr": ...}``, a flat map of strings (what the client reads).
    A ValueError for a request this service cannot answer (another protocol version, an event that is not
    served): the client then runs the hook itself."""
    if v != PROTOCOL:
        raise ValueError(f"hook protocol {v!r} is not {PROTOCOL} (the plugin and the installed remem differ)")
    if event not in SERVED_EVENTS:
        raise ValueError(f"the service does not answer {event!r} hooks")
    if not isinstance(payload, str) or not isinstance(cwd, str) or not isinstance(env, Mapping):
        raise ValueError("malformed hook request")
    age = min(max(float(age), 0.0), MAX_AGE)
    call = ServedCall(env={str(k): str(val) for k, val in env.items()}, cwd=cwd,
                      started=time.monotonic() - age, memory=lambda: _memory(service))
    with serving(call):
        if event in CAPTURE_EVENTS:
            from .capture import distils_with_claude_code

            if distils_with_claude_code():
                raise ValueError("captures for the claude-code distiller run in the hook's own process")
            entry = journal(service, event, payload, call)  # durable before it is acknowledged
            _in_background(service, contextvars.copy_context(), _capture, call, event, payload, entry)
            return {"stdout": ""}
        out = answer(event, payload, background)
        later = contextvars.copy_context()  # the bookkeeping reads the same client settings
    if call.pending:
        _in_background(service, later, _bookkeeping, call)
    return {"stdout": out, "stderr": "".join(call.stderr)} if call.stderr else {"stdout": out}


def _in_background(service: Any, context: contextvars.Context, fn: Any, *args: Any) -> None:
    """``fn(*args)`` in a thread, in ``context``, counted as work in flight (the service does not stop under it)."""
    hold = service.working()
    hold.__enter__()  # before the answer goes out: a stop that follows it waits for this work

    def run() -> None:
        try:
            context.run(fn, *args)
        finally:
            hold.__exit__(None, None, None)

    threading.Thread(target=run, name="remem-hook-after", daemon=True).start()


def _capture(call: ServedCall, event: str, payload: str, entry: Any = None) -> None:
    """A capture, after its acknowledgement: the hook's work, then what it deferred (as the hook process would);
    then its journal entry goes."""
    answer(event, payload, True)
    if call.pending:
        _bookkeeping(call)
    if entry is not None:
        try:
            entry.unlink()
        except OSError:
            pass


def journal_dir(service: Any) -> Any:
    return service.paths.folder / JOURNAL_DIR


def journal(service: Any, event: str, payload: str, call: ServedCall) -> Any:
    """Write the capture's pointer to the journal, synced to disk; returns its path (None when the payload is
    not a hook's JSON: there is nothing to capture again). An OSError (a full disk) refuses the capture, so
    the hook process does it itself."""
    import json

    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("session_id"), str):
        return None
    entry = {"event": event, "payload": {k: data[k] for k in JOURNAL_FIELDS if isinstance(data.get(k), str)},
             "env": {k: call.env[k] for k in JOURNAL_ENV if k in call.env}, "cwd": call.cwd, "at": time.time()}
    folder = private_dir(journal_dir(service))
    path = folder / f"{time.time_ns():020d}-{os.getpid()}-{threading.get_ident()}.json"
    write_private(path, json.dumps(entry), durable=True)
    _sync_dir(folder)
    return path


def _sync_dir(folder: Any) -> None:
    """The new entry's name is on disk too (a rename is durable once its folder is synced)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def resume(service: Any) -> int:
    """Take up the captures a service that was killed acknowledged and did not do, oldest first, once each;
    returns how many. Runs in a thread of a starting service, counted as work in flight."""
    import json

    folder = journal_dir(service)
    done = 0
    with service.working():
        for path in sorted(folder.glob("*.json")):
            try:
                entry = json.loads(path.read_text("utf-8"))
                event, env, cwd = entry["event"], dict(entry["env"]), str(entry["cwd"])
                payload = json.dumps(entry["payload"])
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)  # not an entry: nothing to take up
                continue
            if event not in CAPTURE_EVENTS:
                path.unlink(missing_ok=True)
                continue
            call = ServedCall(env={str(k): str(v) for k, v in env.items()}, cwd=cwd, started=time.monotonic(),
                              memory=lambda: _memory(service))
            with serving(call):
                _capture(call, event, payload, path)
                _drain_left()
            done += 1
    return done


def _drain_left() -> None:
    """What the killed service had spooled and not handed over yet (the capture above finds its turns captured
    already, so it spools nothing and hands nothing over itself)."""
    from .capture import drain, spool_dir

    if any(spool_dir().glob("*.json")):
        drain()


def _bookkeeping(call: ServedCall) -> None:
    from .after import BOOKKEEPING_NICE, drain

    if hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        try:  # Linux: per thread; the service's other callers come first
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BOOKKEEPING_NICE)
        except OSError:
            pass
    drain(call.pending)


__all__ = ["JOURNAL_DIR", "PROTOCOL", "SERVED_EVENTS", "handle", "journal", "resume"]
