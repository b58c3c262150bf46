"""What remem left on disk, for tests that audit it: every path under a root, and which of them another local
account could read (mode bits; the tests' own stat, not remem's helpers)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterable


def every_path(*roots: str | os.PathLike[str]) -> list[Path]:
    """Every folder and file under ``roots`` (roots included), without following symlinks."""
    out: list[Path] = []
    for root in roots:
        if not os.path.lexists(root):
            continue
        out.append(Path(root))
        for folder, dirs, files in os.walk(root):
            out += [Path(folder) / name for name in dirs + files]
    return out


def every_file(*roots: str | os.PathLike[str]) -> list[Path]:
    """Every regular file under ``roots``: what a content audit (secrets, PII) reads."""
    return [p for p in every_path(*roots) if stat.S_ISREG(os.lstat(p).st_mode)]


def open_to_others(paths: Iterable[Path]) -> list[str]:
    """``"<mode> <path>"`` for each folder or file (sockets too) that group or others can access at all."""
    bad = []
    for path in paths:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            bad.append(f"{stat.S_IMODE(st.st_mode):04o} {path}")
    return bad
