"""The environment a hook runs in: its own process's, or, when the local service answers the hook for a thin
client (:mod:`remem.hooks.fast`), the client's, carried with the request.

A hook reads its settings (``REMEM_HOOK_*``), its project (``CLAUDE_PROJECT_DIR``, the working folder) and its
clock (time since the hook process started) through these functions, never from ``os.environ`` directly, so the
same hook code gives the same answer in its own process and in the service, and two hooks the service answers at
once (two projects) never see each other's settings. Stdlib only.
"""

from __future__ import annotations

import contextvars
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping
from contextlib import contextmanager

from .fast import process_age


@dataclass
class ServedCall:
    """One hook answered inside the service on behalf of a hook process."""

    env: Mapping[str, str]                   # the hook process's REMEM_*, CLAUDE_* and HOME variables
    cwd: str                                 # its working folder
    started: float                           # time.monotonic() (here) when the hook process started
    memory: Callable[[], Any]                # a Memory on the service's open store
    pending: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)  # what the hook would have printed on its stderr


_CALL: contextvars.ContextVar[ServedCall | None] = contextvars.ContextVar("remem_hook_call", default=None)


def served() -> ServedCall | None:
    """The served call this code runs for, or None in a hook's own process."""
    return _CALL.get()


@contextmanager
def serving(call: ServedCall) -> Iterator[ServedCall]:
    token = _CALL.set(call)
    try:
        yield call
    finally:
        _CALL.reset(token)


def getenv(name: str, default: str | None = None) -> str | None:
    """An environment variable of the hook (of the client process when served: the service's own are not)."""
    call = _CALL.get()
    if call is not None:
        return call.env.get(name, default)
    return os.environ.get(name, default)


def environ() -> Mapping[str, str] | None:
    """The served client's environment, for code that takes one whole (None: this process's own)."""
    call = _CALL.get()
    return call.env if call is not None else None


def expand(path: str) -> str:
    """``~`` and relative paths as the hook process means them (its home and working folder)."""
    if path == "~" or path.startswith("~/"):
        path = home() + path[1:]
    return path if os.path.isabs(path) else os.path.join(getcwd(), path)


def getcwd() -> str:
    call = _CALL.get()
    return call.cwd if call is not None else os.getcwd()


def home() -> str:
    """The user's home folder (``~``) as the hook process sees it."""
    value = getenv("HOME")
    return value if value else os.path.expanduser("~")


_started = time.monotonic() - process_age()


def elapsed() -> float:
    """Seconds since the hook process started (the deadline clock: budgets count interpreter start-up)."""
    call = _CALL.get()
    return time.monotonic() - (call.started if call is not None else _started)


__all__ = ["ServedCall", "elapsed", "environ", "expand", "getcwd", "getenv", "home", "served", "serving"]
