"""Whole-store work the pages must not wait for: tenant counts with the memories-over-time chart, and audits.

Both scan every memory (seconds at 100k), so they run in one background thread each and the pages show the
last result with its age. A change made through the inspector marks the summary stale, and the next page
load starts a fresh scan.
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .store import all_records, scope_of, tenant_key

SUMMARY_TTL = 60.0
FRESH_BELOW = 0.05  # a scan this quick (a small store) is simply redone for every page that shows it


@dataclass
class TenantInfo:
    count: int = 0
    superseded: int = 0
    newest: _dt.datetime | None = None
    kinds: Counter[str] = field(default_factory=Counter)
    sessions: set[str] = field(default_factory=set)


@dataclass
class Summary:
    """One scan of the store: per tenant counts, and stored memories per day and kind (the chart)."""

    tenants: dict[str, TenantInfo] = field(default_factory=dict)
    all_days: Counter[tuple[_dt.date, str]] = field(default_factory=Counter)  # every tenant: the chart
    total: int = 0
    at: float = 0.0
    seconds: float = 0.0

    @property
    def kinds(self) -> list[str]:
        return sorted({k for info in self.tenants.values() for k in info.kinds})


def scan_summary(mem: Any) -> Summary:
    start = time.perf_counter()
    out = Summary()
    for rec in all_records(mem):
        key = tenant_key(rec)
        info = out.tenants.get(key)
        if info is None:
            info = out.tenants[key] = TenantInfo()
        info.count += 1
        info.kinds[rec.kind] += 1
        if rec.superseded_by is not None:
            info.superseded += 1
        if rec.scope.session and len(info.sessions) < 200:
            info.sessions.add(rec.scope.session)
        if info.newest is None or rec.created_at > info.newest:
            info.newest = rec.created_at
        out.all_days[(rec.created_at.date(), rec.kind)] += 1
        out.total += 1
    out.at, out.seconds = time.time(), time.perf_counter() - start
    return out


class Background:
    """One result computed off the request path: ``get`` returns the latest (or None) and refreshes when asked."""

    def __init__(self, compute: Callable[[], Any], ttl: float | None) -> None:
        self._compute, self._ttl = compute, ttl
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.value: Any = None
        self.error: str | None = None
        self.at = 0.0
        self.seconds = 0.0
        self._stale = False

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            self._done.clear()
            self._stale = False
            self._thread = threading.Thread(target=self._run, name="remem-ui-job", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        start = time.perf_counter()
        try:
            self.value, self.error = self._compute(), None
        except Exception as exc:  # noqa: BLE001 - shown on the page instead of killing the server
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.at, self.seconds = time.time(), time.perf_counter() - start
            self._done.set()

    def mark_stale(self) -> None:
        self._stale = True

    def get(self, wait: float = 0.0) -> Any:
        """The latest value; starts a refresh when there is none, it is stale, or older than the TTL, and
        waits up to ``wait`` seconds for it (a small store is scanned within that, a big one is not)."""
        ttl = None if self._ttl is None else 0.0 if self.seconds < FRESH_BELOW else self._ttl
        expired = ttl is not None and time.time() - self.at > ttl
        if (self.value is None and self.error is None) or self._stale or expired:
            self.start()
        if wait > 0 and self.running:
            self._done.wait(wait)
        return self.value

    def join(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


class Jobs:
    """The summary and one audit per tenant, for one store."""

    def __init__(self, mem: Any) -> None:
        self.mem = mem
        self.summary = Background(lambda: scan_summary(mem), SUMMARY_TTL)
        self._audits: dict[str, Background] = {}
        self.removed: set[str] = set()  # forgotten here since the audits ran: hidden from their results

    def audit(self, tenant: str) -> Background:
        job = self._audits.get(tenant)
        if job is None:
            job = self._audits[tenant] = Background(lambda: self.mem.audit(scope=scope_of(tenant)), None)
        return job

    def changed(self, removed: Iterable[str] = ()) -> None:
        """A change went through the inspector: the counts are out of date (rescanned on the next page load);
        audits are re-run only when asked, and hide what was forgotten since."""
        self.removed.update(removed)
        self.summary.mark_stale()

    def join(self, timeout: float = 10.0) -> None:
        self.summary.join(timeout)
        for job in self._audits.values():
            job.join(timeout)


__all__ = ["Background", "Jobs", "Summary", "TenantInfo", "scan_summary"]
