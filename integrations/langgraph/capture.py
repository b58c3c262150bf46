"""Capture of new conversation messages into remem, at most once per message per thread."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Sequence

from ...core.tooling import BackgroundCapture, default_capture
from ...core.types import Scope
from .messages import message_key, to_openai_message

log = logging.getLogger("remem.langgraph.capture")

RECALL_ID_PREFIX = "remem-recall-"
MEMORY_TOOLS = frozenset({"memory_search", "memory_save", "memory_forget"})


def capturable(message: Any) -> bool:
    """Skip what would feed memory back into itself: recall system messages and memory tool results."""
    mid = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    if mid and str(mid).startswith(RECALL_ID_PREFIX):
        return False
    conv = to_openai_message(message)
    if conv is None or conv["role"] == "system":
        return False
    if conv["role"] == "tool" and conv.get("name") in MEMORY_TOOLS:
        return False
    return True


class CaptureLedger:
    """Remembers which message keys of each thread were already sent to ``remember()``, whichever scope took them.

    A thread's messages go to the scope of the run that added them: when another user's run continues a thread
    (handed over, shared, or a reused id), what the thread said before is not copied into that user's memory.
    Messages without a thread are tracked per scope. Bounded (least recently used threads are forgotten); it
    lives in the process, so after a restart a thread's old messages may be offered again (``remember`` skips
    the messages a scope has stored already).
    """

    def __init__(self, max_threads: int = 10_000) -> None:
        self._seen: OrderedDict[tuple[Any, ...], set[str]] = OrderedDict()
        self._lock = threading.Lock()
        self.max_threads = max_threads

    @staticmethod
    def _key(thread: tuple[Any, ...]) -> tuple[Any, ...]:
        scope, session = thread
        return ("thread", session) if session is not None else ("scope", scope)

    def take_new(self, thread: tuple[Any, ...], messages: Sequence[Any]) -> list[Any]:
        """The messages of ``thread`` (a ``(scope, session)`` pair) not captured yet; they are marked captured."""
        key = self._key(thread)
        with self._lock:
            seen = self._seen.setdefault(key, set())
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_threads:
                self._seen.popitem(last=False)
            new = []
            for msg in messages:
                mkey = message_key(msg)
                if mkey in seen:
                    continue
                seen.add(mkey)
                if capturable(msg):
                    new.append(msg)
            return new

    def release(self, thread: tuple[Any, ...], messages: Sequence[Any]) -> None:
        """``messages`` were not captured after all (``remember`` failed): the next capture offers them again."""
        with self._lock:
            seen = self._seen.get(self._key(thread))
            if seen is not None:
                seen.difference_update(message_key(m) for m in messages)

    def forget_thread(self, thread: tuple[Any, ...]) -> None:
        with self._lock:
            self._seen.pop(self._key(thread), None)


def submit_capture(memory: Any, messages: Sequence[Any], scope: Scope | None, session: str | None, *,
                   ledger: CaptureLedger, capture: BackgroundCapture | None = None) -> Future[Any] | None:
    """Send the not-yet-captured messages of a thread to ``memory.remember`` in the background. Never raises."""
    if memory is None or scope is None or not messages:
        return None
    try:
        from .messages import to_openai_messages

        thread = (scope, session)
        new = ledger.take_new(thread, messages)
        converted = to_openai_messages(new)
        if not any(m["role"] in ("user", "assistant") and m["content"].strip() for m in converted):
            return None
        try:
            fut = (capture or default_capture()).submit(memory, converted, scope, session)
        except BaseException:
            ledger.release(thread, new)
            raise
        # a failed remember() (it returns None, logged) leaves them to the next capture instead of losing them
        fut.add_done_callback(lambda f: ledger.release(thread, new) if f.exception() or f.result() is None
                              else None)
        return fut
    except Exception as exc:  # noqa: BLE001
        log.warning("memory capture was not submitted: %s", exc)
        return None
