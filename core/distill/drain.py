"""Draining the pending queue: captures the LLM could not distil yet are distilled again, oldest first."""

from __future__ import annotations

import logging
from typing import Any

from .keyless import KeylessDistiller
from .pending import PendingQueue, queue_for
from .pipeline import remember, resolve_distiller
from ..redact.redactor import redact
from ..types import ProviderError

log = logging.getLogger("remem.distill")


def pending_count(engine: Any) -> int:
    """Captures waiting for the LLM, counting one a retry is distilling now (for stats and ``remem doctor``)."""
    return sum(1 for e in queue_for(engine).peek(in_flight=True) if e.of_store(engine))


def drain_pending(engine: Any, distiller: Any = None, *, limit: int | None = None,
                  queue: PendingQueue | None = None, max_attempts: int = 5) -> int:
    """Distil queued captures (oldest first); returns how many were stored.

    A provider-wide failure (quota, credentials, rate limit, connection) stops the drain: the entry stays queued
    with its attempt counted. An entry the LLM keeps failing on by itself (bad responses) is retried up to
    ``max_attempts`` times, then distilled keyless so the queue never clogs. With no LLM configured the keyless
    distiller does the work, so draining always makes progress."""
    q = queue or queue_for(engine)
    dist_obj = resolve_distiller(distiller)
    done = 0
    for peeked in q.peek():
        if limit is not None and done >= limit:
            break
        if not peeked.of_store(engine):
            continue
        entry = q.claim(peeked.id)
        if entry is None:  # another worker took it
            continue
        data = entry.data
        use = dist_obj if entry.attempts < max_attempts else KeylessDistiller()
        try:
            remember(engine, data.get("messages") or [], scope=data.get("scope"), session=data.get("session"),
                     distiller=use, metadata=data.get("metadata"), source=data.get("source"),
                     tags=data.get("tags"), queue=False)
        except ProviderError as exc:
            q.release(entry, str(exc))
            log.warning("pending capture %s still failing: %s", entry.id, exc)
            if exc.kind != "bad_response":
                break
            continue
        except Exception as exc:  # noqa: BLE001 - keep the capture, report, go on
            q.release(entry, redact(f"{type(exc).__name__}: {exc}").text)  # the queue is a file: no secret in it
            log.warning("pending capture %s failed: %s", entry.id, redact(str(exc)).text)
            continue
        q.done(entry)
        done += 1
    return done


__all__ = ["drain_pending", "pending_count"]
