"""Deciding what to rotate out of a conversation, capturing it, and confirming the capture before the cut.

A conversation over ``max_tokens`` (tiktoken) is cut so that what remains is at most ``target_tokens``, never
fewer than ``keep_last`` messages, and only where a new exchange may start (an adapter says where: before a user
message, never between a tool call and its result). The messages before the cut are sent to
``memory.remember()`` with their ids (so a message captured twice is stored once) in a worker thread; the cut
is made only when that capture has returned. It is waited for up to ``wait`` seconds inside the turn; one that
takes longer goes on in the background and the cut is made at a later model call, when it has finished. A
capture that fails drops nothing: the next call tries again.

:meth:`Rotator.flush` waits for captures still running; it runs at ``close()``, at interpreter exit and at the
end of a LangGraph run, so nothing rotated is lost when a process stops.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import re
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..recall.tokens import count_tokens
from ..tooling import sync_memory, turn_timeout
from ..types import Scope

log = logging.getLogger("remem.rotation")

DIGEST_MARK = "remem_rotation_digest"
MESSAGE_OVERHEAD = 4  # tokens a chat format adds around each message
DIGEST_TOPICS = 8  # the first words of this many rotated user messages are named in the digest
_LIVE: "weakref.WeakSet[Rotator]" = weakref.WeakSet()


def message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one OpenAI-style message: its text, its tool calls' arguments, and the format's overhead."""
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        text += f" {fn.get('name', '')} {fn.get('arguments', '')}"
    return count_tokens(text) + MESSAGE_OVERHEAD


def cut_point(tokens: Sequence[int], can_start: Sequence[bool], *, max_tokens: int, target_tokens: int,
              keep_last: int, first: int = 0) -> int:
    """Where to cut (0: nowhere): when ``sum(tokens)`` passes ``max_tokens``, the first message at which what
    remains (the ``first`` leading messages, which stay, plus everything from the cut on) is ``target_tokens``
    or less, among those that ``can_start`` a conversation and leave at least ``keep_last`` messages. When no
    cut reaches the target, the latest one allowed."""
    if sum(tokens) <= max_tokens:
        return 0
    head = sum(tokens[:first])
    suffix = [0] * (len(tokens) + 1)
    for i in range(len(tokens) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + tokens[i]
    best = 0
    for cut in range(first + 1, len(tokens) - keep_last + 1):
        if not can_start[cut]:
            continue
        best = cut
        if head + suffix[cut] <= target_tokens:
            return cut
    return best


def _key(message: Mapping[str, Any]) -> str:
    """A message's identity for "already captured": its id, else what it says, by whom and when."""
    if message.get("id"):
        return str(message["id"])
    said = "\x1f".join(str(message.get(k) or "") for k in ("role", "name", "timestamp", "content"))
    return "h:" + hashlib.sha256(said.encode("utf-8", "replace")).hexdigest()[:24]


@dataclass
class _Capture:
    ids: frozenset[str]
    future: Future[Any]


class Rotator:
    """Captures rotated messages into ``memory`` and says when a capture is confirmed (see the module doc)."""

    def __init__(self, memory: Any, *, wait: float | None = None, max_workers: int = 1) -> None:
        self.memory = sync_memory(memory)
        self.wait = wait
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="remem-rotation")
        self._lock = threading.RLock()  # a capture that fails at once settles inside confirmed()
        self._confirmed: dict[tuple[Any, ...], set[str]] = {}
        self._running: dict[tuple[Any, ...], _Capture] = {}
        self._closed = False
        _LIVE.add(self)

    def confirmed(self, scope: Scope, session: str | None, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether ``messages`` are stored in memory: true at once when an earlier capture stored them all; else a
        capture is started (or the running one awaited) for up to ``wait`` seconds. Never raises."""
        ids = frozenset(_key(m) for m in messages)
        key = (scope, session)
        with self._lock:
            if ids <= self._confirmed.get(key, set()):
                return True
            running = self._running.get(key)
            if running is None or not ids <= running.ids or (running.future.done() and not self._ok(running.future)):
                if self._closed:
                    return False
                running = _Capture(ids, self._pool.submit(self._remember, list(messages), scope, session))
                self._running[key] = running
                running.future.add_done_callback(lambda fut, c=running: self._settle(key, c))
                owner_track = getattr(self.memory, "track", None)
                if callable(owner_track):  # Memory.close() waits for it
                    owner_track(running.future)
        try:
            running.future.result(timeout=turn_timeout() if self.wait is None else self.wait)
        except TimeoutError:
            log.info("memory rotation: the capture goes on in the background; the cut waits for it")
            return False
        except Exception as exc:  # noqa: BLE001 - a failed capture drops nothing; the next call tries again
            log.warning("memory rotation: capture failed, nothing dropped: %s", exc)
            self._settle(key, running)
            return False
        self._settle(key, running)
        return True

    def _settle(self, key: tuple[Any, ...], capture: _Capture) -> None:
        """A finished capture: its messages are confirmed stored when it succeeded (also when nobody waited)."""
        with self._lock:
            if capture.future.exception() is None:
                self._confirmed.setdefault(key, set()).update(capture.ids)
            if self._running.get(key) is capture:
                del self._running[key]

    def stored(self, scope: Scope, session: str | None, message: Mapping[str, Any]) -> bool:
        """Whether a capture of this rotator confirmed ``message`` stored."""
        with self._lock:
            return _key(message) in self._confirmed.get((scope, session), set())

    @staticmethod
    def _ok(future: Future[Any]) -> bool:
        return future.exception() is None

    def _remember(self, messages: list[Mapping[str, Any]], scope: Scope, session: str | None) -> Any:
        return self.memory.remember(messages, scope=scope, session=session)

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait for the captures still running (their failures were logged)."""
        with self._lock:
            running = [c.future for c in self._running.values()]
        for fut in running:
            try:
                fut.result(timeout=timeout)
            except Exception:  # noqa: BLE001
                pass

    def close(self, timeout: float | None = 30.0) -> None:
        """Flush, then refuse new captures."""
        self.flush(timeout)
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False)


def digest(rotated: Sequence[Mapping[str, Any]], previous: str | None = None) -> str:
    """The short text that stands in for rotated messages: how many, when, what they were about, and that
    memory holds them (the words are recalled by search)."""
    topics = digest_topics(rotated)
    lines = [digest_summary(rotated, previous)]
    if topics:
        lines.append("The latest of them asked about: " + " | ".join(topics))
    return "\n".join(lines)


def digest_summary(rotated: Sequence[Mapping[str, Any]], previous: str | None = None) -> str:
    """The digest's own words (how many messages, where they went): nothing in it was written by the user, so an
    adapter may give it the application's voice; :func:`digest_topics` is the user's text and must not get it."""
    earlier = re.search(r"(\d+) messages were moved", previous or "")
    total = len(rotated) + (int(earlier.group(1)) if earlier else 0)
    return (f"[Earlier in this conversation: {total} messages were moved to long-term memory; "
            f"search memory to bring back what they said.]")


def digest_topics(rotated: Sequence[Mapping[str, Any]]) -> list[str]:
    """The first words of the latest rotated user messages, as the user wrote them (quoted, never rephrased)."""
    users = [" ".join(str(m.get("content") or "").split()) for m in rotated if m.get("role") == "user"]
    return [u[:80] + ("…" if len(u) > 80 else "") for u in users if u][-DIGEST_TOPICS:]


@atexit.register
def _flush_all() -> None:
    for rot in list(_LIVE):
        rot.flush(30.0)


__all__ = ["DIGEST_MARK", "Rotator", "cut_point", "digest", "digest_summary", "digest_topics", "message_tokens"]
