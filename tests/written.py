"""What remem left on disk, for tests that audit it: every path under a root, which of them another local
account could read (mode bits; the tests' own stat, not remem's helpers), and a file's written bytes."""

from __future__ import annotations

import errno
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


def data_of(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path`` that were ever written, its holes left out, each run of data joined to the next by one
    NUL byte: a text without NUL bytes (a secret, a word) is in the result exactly when it is in the file.

    Qdrant Edge preallocates its WAL and segment files as sparse files (~290 MB per store that read as zeros), and
    a content audit that read them whole spent most of its time and memory on zeros. Where the file system cannot
    say where the holes are, the whole file is read."""
    runs = []
    with open(path, "rb") as fh:
        if not hasattr(os, "SEEK_DATA"):
            return fh.read()
        fd = fh.fileno()
        size, pos = os.fstat(fd).st_size, 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                fh.seek(0)
                return fh.read()
            end = os.lseek(fd, start, os.SEEK_HOLE)
            fh.seek(start)
            runs.append(fh.read(end - start))
            pos = end
    return b"\0".join(runs)
