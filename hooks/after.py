"""Bookkeeping after the answer: a hook's output goes to Claude Code first, its writes follow.

Whatever a hook writes (the session's injected-memory record, the last-recall record for ``/remem:memory last``, log
lines) passes the redactor, and loading the redactor costs more than the recall itself. None of it changes what
Claude receives, so :func:`run` does it in a forked child that has let go of Claude Code's pipes, and the hook
process exits as soon as its output is out. Where that is not safe (no ``fork``, or a worker thread still
running, e.g. a recall that missed its deadline) the writes happen in place, as before. The child runs at a
lower priority (nice 10): on a 2-core machine it would otherwise compete with Claude Code for the CPU while the
turn goes on. It never starts the local service (which would inherit that priority), only writes files.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

from .callenv import getenv, served

BOOKKEEPING_NICE = 10
Pending = list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]
_PENDING: Pending = []


def _queue() -> Pending:
    call = served()  # the service answering a hook: the work waits for that call's answer instead
    return call.pending if call is not None else _PENDING


def defer(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Run ``fn(*args, **kwargs)`` after the hook's output was written (see :func:`run`)."""
    _queue().append((fn, args, kwargs))


def drain(queue: Pending | None = None) -> None:
    """Do the deferred work here, now."""
    queue = _PENDING if queue is None else queue
    while queue:
        fn, args, kwargs = queue.pop(0)
        try:
            fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - bookkeeping never breaks a hook
            pass


def run(detach: bool = True) -> None:
    """Do the deferred work: in a detached child when possible, else here. Call it after flushing stdout."""
    if not _PENDING:
        return
    if not (detach and hasattr(os, "fork") and threading.active_count() == 1
            and getenv("REMEM_HOOK_DETACH", "1") != "0"):
        drain()
        return
    try:
        pid = os.fork()
    except OSError:
        drain()
        return
    if pid:  # the hook itself: its output is out, the child does the rest
        _PENDING.clear()
        return
    try:
        os.setsid()
        try:  # bookkeeping: Claude Code (busy with the turn this hook just answered) gets the CPU first
            os.nice(BOOKKEEPING_NICE)
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        drain()
    finally:
        os._exit(0)
