"""``remem import claude-code [PATH]``: memory from the sessions Claude Code already keeps on disk.

Claude Code writes every session to ``~/.claude/projects/<project>/<session-id>.jsonl``. Each one is read with
the same defensive parser as the Stop hook (:mod:`remem.hooks.transcript`), goes to the same tenant the hooks
would give its project (:func:`remem.hooks.common.project_tenant` of the session's ``cwd``) and is distilled by
``Memory.remember`` per session, so it is redacted like any capture and keeps one summary per session. Every
message carries its original ``timestamp``, and the session's time span is in the memories' metadata.

Idempotent: a small ledger (``$REMEM_HOME/imports/claude-code.json``, 0600: session ids, byte offsets, sizes,
no text) remembers how far each transcript was imported, so a second run imports nothing and a session that
grew since imports only its new turns. Sessions the hooks captured live are left to the hooks.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from . import transcript
from .common import find_project_root, project_tenant, read_json, remem_home, write_json

MAX_SESSION_BYTES = 64_000_000      # read at most this much of one transcript
CHUNK_CHARS = 40_000                # one remember() call per this much conversation (as a capture would)
SOURCE = "claude-code-import"


def default_projects_dir() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base) / "projects"


def ledger_path() -> Path:
    return remem_home() / "imports" / "claude-code.json"


def find_sessions(root: Path) -> list[Path]:
    """Top-level session transcripts (``<project>/<session>.jsonl``; subagent files live deeper)."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.glob("*/*.jsonl") if p.is_file())


@dataclass
class SessionFile:
    """What one transcript holds beyond what an earlier import took."""

    path: Path
    session: str
    cwd: str | None
    messages: list[dict[str, str]]
    started: str | None
    ended: str | None
    offset: int
    last_uuid: str | None
    size: int


def read_session(path: Path, offset: int = 0, last_uuid: str | None = None) -> SessionFile:
    size = path.stat().st_size
    result = transcript.read_new(path, offset, last_uuid, max_bytes=MAX_SESSION_BYTES)
    entries = result.entries
    cwd = next((e["cwd"] for e in entries if isinstance(e.get("cwd"), str) and e["cwd"]), None)
    session = next((e["sessionId"] for e in entries if isinstance(e.get("sessionId"), str) and e["sessionId"]),
                   path.stem)
    stamps = sorted(e["timestamp"] for e in entries if isinstance(e.get("timestamp"), str))
    root = find_project_root(cwd) if cwd else None
    messages = transcript.to_messages(transcript.turns(entries, root=root), with_time=True)
    return SessionFile(path, session, cwd, messages, stamps[0] if stamps else None,
                       stamps[-1] if stamps else None, result.offset, result.last_uuid, size)


def chunks(messages: list[dict[str, str]], limit: int = CHUNK_CHARS) -> Iterable[list[dict[str, str]]]:
    """Consecutive runs of whole messages of about ``limit`` characters, oldest first."""
    batch: list[dict[str, str]] = []
    used = 0
    for msg in messages:
        if batch and used + len(msg["content"]) > limit and msg["role"] == "user":
            yield batch
            batch, used = [], 0
        batch.append(msg)
        used += len(msg["content"])
    if batch:
        yield batch


@dataclass
class ImportReport:
    sessions: int = 0            # transcripts looked at
    imported: int = 0            # sessions that had something new
    messages: int = 0
    memories: int = 0            # memories written or changed (summaries included)
    redactions: int = 0
    skipped: dict[str, int] = field(default_factory=dict)   # reason -> sessions
    seconds: float = 0.0
    tenants: set[str] = field(default_factory=set)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "imported": self.imported, "messages": self.messages,
                "memories": self.memories, "redactions": self.redactions, "skipped": dict(self.skipped),
                "projects": len(self.tenants), "seconds": round(self.seconds, 2)}


def _time_kwargs(started: str | None) -> dict[str, Any]:
    """The session's start as the memories' event time, when this remem's remember() takes one."""
    if not started:
        return {}
    from remem.core.distill.pipeline import remember

    params = inspect.signature(remember).parameters
    for name in ("occurred_at", "created_at"):
        if name in params:
            return {name: started}
    return {}


def _captured_by_hooks(mem: Any, scope: Any, session: str) -> bool:
    found = mem.list(scope=scope, kind="summary", where={"meta.session": session}, limit=1)
    return any(r.source != SOURCE for r in found)


def import_sessions(mem: Any, root: Path | None = None, *, tenant: str | None = None, dry_run: bool = False,
                    pii: bool = True, on_session: Callable[[Path], None] | None = None,
                    on_start: Callable[[int], None] | None = None) -> ImportReport:
    """Import every transcript under ``root`` (default ``~/.claude/projects``) into ``mem``."""
    from remem import Scope

    started = time.perf_counter()
    report = ImportReport()
    files = find_sessions(Path(root) if root else default_projects_dir())
    if on_start:
        on_start(len(files))
    ledger = read_json(ledger_path())
    ledger = ledger if isinstance(ledger, dict) else {}
    for path in files:
        report.sessions += 1
        key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
        seen = ledger.get(key) if isinstance(ledger.get(key), dict) else {}
        try:
            if seen.get("size") == path.stat().st_size:
                report.skip("already imported")
                continue
            found = read_session(path, int(seen.get("offset") or 0), seen.get("last_uuid"))
        except (OSError, ValueError):
            report.skip("unreadable")
            continue
        finally:
            if on_session:
                on_session(path)
        if not found.cwd and not tenant:
            report.skip("no project folder in the transcript")
            continue
        scope = Scope(tenant=tenant or project_tenant(found.cwd))
        entry = {"session": found.session, "offset": found.offset, "last_uuid": found.last_uuid,
                 "size": found.size, "at": time.time()}
        if not found.messages:
            report.skip("nothing new" if seen else "no conversation")
            ledger[key] = entry
            continue
        if not seen and _captured_by_hooks(mem, scope, found.session):
            report.skip("captured by the hooks")
            ledger[key] = entry
            continue
        report.imported += 1
        report.messages += len(found.messages)
        report.tenants.add(scope.tenant or "")
        if dry_run:
            continue
        meta = {k: v for k, v in (("session_started", found.started), ("session_ended", found.ended)) if v}
        for part in chunks(found.messages):
            result = mem.remember(part, scope=scope, session=found.session, pii=pii, source=SOURCE,
                                  metadata=meta, **_time_kwargs(part[0].get("timestamp") or found.started))
            report.memories += len(result.stored)
            report.redactions += sum(result.redactions.values())
        ledger[key] = entry
        write_json(ledger_path(), ledger)  # after every session: an interrupted import resumes where it was
    if not dry_run:
        write_json(ledger_path(), ledger)
    report.seconds = time.perf_counter() - started
    return report


__all__ = ["ImportReport", "default_projects_dir", "find_sessions", "import_sessions", "ledger_path",
           "read_session"]
