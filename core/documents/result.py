"""What ``Memory.index()`` reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DOCUMENT_KIND = "document"


@dataclass
class IndexResult:
    """Files read, chunks added, kept as they were (not written or embedded again), and removed (an edited
    file's old chunks, a deleted or newly ignored file's chunks); files skipped, with why."""

    files: int = 0
    added: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        """Files read: what ``progress`` counts (through the service it is told once, at the end)."""
        return self.files

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "added": self.added, "unchanged": self.unchanged, "removed": self.removed,
                "skipped": dict(self.skipped)}


__all__ = ["DOCUMENT_KIND", "IndexResult"]
