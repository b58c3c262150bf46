"""Room on the disk for a Qdrant Edge shard: a full disk is a clear error, never a dead process.

Qdrant Edge creates its files at full size with holes (a WAL segment, a page file) and maps them. When it writes a
page into a hole on a disk with no room left, the kernel kills the process with SIGBUS: the agent itself when the
store is open in-process, the local service otherwise. So a shard needs its holes plus a margin free on its disk
(``REMEM_MIN_FREE_MB``, 64 by default; 0 turns the check off), and a compaction, which writes a copy beside it,
needs that again plus what the copy fills. It is checked when the store opens, before every write and before
every compaction. The free space is read on each check (one ``statvfs``); the holes are counted (a walk of the
shard's files) at most once a second, and again whenever the disk looks too full.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

from ...types import DiskFullError

MIN_FREE = 64 * 2**20  # bytes free beyond the holes, unless REMEM_MIN_FREE_MB says otherwise
RECOUNT_AFTER = 1.0  # seconds a count of the holes is trusted


def margin() -> int:
    """The free space asked for beyond the holes, in bytes (0: no check)."""
    try:
        return max(0, int(float(os.environ.get("REMEM_MIN_FREE_MB") or MIN_FREE / 2**20) * 2**20))
    except ValueError:
        return MIN_FREE


def allocation(shard: Path) -> tuple[int, int]:
    """(bytes in holes, bytes written) of the files under ``shard``."""
    holes = used = 0
    for folder, _, files in os.walk(shard):
        for name in files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue  # a file Edge removed meanwhile
            blocks = getattr(st, "st_blocks", None)  # None on Windows: no holes are known there
            on_disk = st.st_size if blocks is None else blocks * 512
            holes += max(0, st.st_size - on_disk)
            used += on_disk
    return holes, used


class DiskRoom:
    """Refuses an open, a write or a compaction of the shard at ``shard`` when its disk has too little room."""

    def __init__(self, shard: Path) -> None:
        self.shard = shard
        self._holes = self._used = 0
        self._counted = -math.inf

    def check(self, doing: str, *, copy: bool = False) -> None:
        """Raise :class:`DiskFullError` if ``doing`` (e.g. "writing to") the store could fill the disk; ``copy``:
        it writes a second shard as large as this one (a compaction)."""
        extra = margin()
        if extra <= 0:
            return
        free = shutil.disk_usage(self.shard.parent).free
        now = time.monotonic()
        if now - self._counted > RECOUNT_AFTER or free < self._need(extra, copy):
            self._holes, self._used = allocation(self.shard)
            self._counted = now
        need = self._need(extra, copy)
        if free < need:
            raise DiskFullError(f"only {free // 2**20} MB are free on the disk of {self.shard.parent}; {doing} the "
                                f"store needs about {need // 2**20} MB (a full disk kills the process that maps its "
                                f"files): free some space, or set REMEM_MIN_FREE_MB=0 to turn this check off")

    def _need(self, extra: int, copy: bool) -> int:
        return extra + self._holes + (self._holes + self._used if copy else 0)
