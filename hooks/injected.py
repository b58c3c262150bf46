"""What a session has already been shown: the memories the digest and earlier recalls injected into its context.

Claude keeps everything injected in its context until the session is compacted or cleared, so injecting a memory
twice only spends tokens. Per session this keeps the injected memory ids with a short hash of their text (a
memory that changed since is shown again) and whether the session still owes its digest. No memory text, no
prompt: ids and hashes only. One small 0600 JSON file per session under ``$REMEM_HOME/hooks/injected``.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .common import hooks_dir, read_json, safe_name, write_json

MAX_SHOWN = 400  # a session that saw more than this has been compacted many times; the oldest are forgotten


def text_hash(text: str) -> str:
    return hashlib.sha256(" ".join((text or "").split()).encode("utf-8", "replace")).hexdigest()[:12]


def state_path(session_id: str) -> Path:
    return hooks_dir() / "injected" / f"{safe_name(session_id or 'no-session')}.json"


@dataclass
class Shown:
    """The injected-memory record of one session."""

    session: str
    digest_pending: bool = True
    shown: dict[str, str] = field(default_factory=dict)  # memory id -> text hash when it was injected
    compacted: bool = False  # the context lost this session's own early turns (compaction, /clear)

    @classmethod
    def load(cls, session: str) -> "Shown":
        data = read_json(state_path(session)) if session else None
        if not isinstance(data, dict):
            return cls(session)
        shown = data.get("shown")
        shown = {str(k): str(v) for k, v in shown.items()} if isinstance(shown, dict) else {}
        return cls(session, digest_pending=data.get("digest_pending") is not False, shown=shown,
                   compacted=data.get("compacted") is True)

    def is_new(self, rec: Any) -> bool:
        """True unless this memory, with this text, is already in the session's context."""
        return self.shown.get(rec.id) != text_hash(rec.text)

    def wanted(self, rec: Any) -> bool:
        """Worth injecting: not in the context already. A memory distilled from this very session is its own
        context, until a compaction dropped the turns it came from (its summary never is: compaction writes one)."""
        if (getattr(rec, "metadata", None) or {}).get("session") == self.session and self.session:
            if not self.compacted or rec.kind == "summary":
                return False
        return self.is_new(rec)

    def mark(self, records: Iterable[Any]) -> None:
        for rec in records:
            self.shown.pop(rec.id, None)
            self.shown[rec.id] = text_hash(rec.text)
        while len(self.shown) > MAX_SHOWN:
            self.shown.pop(next(iter(self.shown)))

    def reset(self, digest_pending: bool, context_lost: bool = False) -> None:
        """A new context (startup), or one compacted or cleared: nothing injected before is there any more."""
        self.shown.clear()
        self.digest_pending = digest_pending
        self.compacted = self.compacted or context_lost

    def save(self) -> None:
        if self.session:
            write_json(state_path(self.session), {"digest_pending": self.digest_pending, "shown": self.shown,
                                                  "compacted": self.compacted, "updated": time.time()})


__all__ = ["MAX_SHOWN", "Shown", "state_path", "text_hash"]
