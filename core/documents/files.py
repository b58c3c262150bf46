"""Which files an index reads: text documents under the given paths, as git would see them.

Under a folder: files with a document suffix (:data:`~.chunking.SUFFIXES`), not in a hidden folder (``.git``,
``.venv``) or a dependency folder (``node_modules``), and not ignored by a ``.gitignore`` on the way down from
the repository's root (each file's patterns apply below its folder, as git reads them; matched with
``pathspec``'s git rules). A file named explicitly is read whatever its suffix, unless it is binary (a NUL byte
in its first 8 KiB, or not UTF-8) or larger than :data:`MAX_FILE_BYTES`.

Each file is named by its path from the repository's root (the folder holding ``.git``), or else from the
folder given: the same file has the same name whichever folder under the root is indexed, and whatever the
current directory is (the service runs elsewhere).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .chunking import SUFFIXES

MAX_FILE_BYTES = 5_000_000
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "dist", "build"})


@dataclass(frozen=True)
class Found:
    path: Path  # absolute
    name: str  # the name its chunks are stored under (posix, from the repository root or the folder given)
    root: Path  # the folder (or file) it was found under


def repo_root(path: Path) -> Path | None:
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _ignore_specs(root: Path, folder: Path) -> list[tuple[Path, object]]:
    """The ``.gitignore`` patterns that apply in ``folder``: those of every folder from ``root`` down to it."""
    import pathspec

    specs: list[tuple[Path, object]] = []
    chain = [folder, *folder.parents]
    for parent in reversed(chain[: len(chain) - len(root.parents)]):
        ignore = parent / ".gitignore"
        if ignore.is_file():
            try:
                lines = ignore.read_text("utf-8", errors="replace").splitlines()
            except OSError:
                continue
            specs.append((parent, pathspec.GitIgnoreSpec.from_lines(lines)))
    return specs


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, object]]) -> bool:
    for base, spec in specs:
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if spec.match_file(rel):  # type: ignore[attr-defined]
            return True
    return False


def why_unreadable(path: Path) -> str | None:
    """Why a file is not read as text (None: it is)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return f"larger than {MAX_FILE_BYTES // 1_000_000} MB"
        with path.open("rb") as fh:
            head = fh.read(8192)
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    if b"\0" in head:
        return "binary"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the 8 KiB boundary
            return "binary (not UTF-8)"
    return None


def walk(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Found], dict[str, str], list[Path]]:
    """(the files to read, files skipped with why, the folders walked). A path that does not exist is an error."""
    found: dict[Path, Found] = {}
    skipped: dict[str, str] = {}
    folders: list[Path] = []
    for given in paths:
        path = Path(given).expanduser().resolve()
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {given}")
        repo = repo_root(path if path.is_dir() else path.parent)
        if path.is_file():
            base = repo or path.parent
            reason = why_unreadable(path)
            if reason:
                skipped[str(path)] = reason
            else:
                found[path] = Found(path, path.relative_to(base).as_posix(), path)
            continue
        folders.append(path)
        base = repo or path
        for file in _walk_folder(path, repo or path, skipped):
            found.setdefault(file, Found(file, file.relative_to(base).as_posix(), path))
    return sorted(found.values(), key=lambda f: f.name), skipped, folders


def _walk_folder(top: Path, root: Path, skipped: dict[str, str]) -> Iterator[Path]:
    for folder, dirs, files in os.walk(top):
        here = Path(folder)
        specs = _ignore_specs(root, here)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                         and not _ignored(here / d, True, specs))
        for name in sorted(files):
            file = here / name
            if file.suffix.lower() not in SUFFIXES or name.startswith(".") or _ignored(file, False, specs):
                continue
            if file.is_symlink() and not file.resolve().is_relative_to(root):
                skipped[str(file)] = "a link out of the folder"
                continue
            reason = why_unreadable(file)
            if reason:
                skipped[str(file)] = reason
                continue
            yield file


__all__ = ["Found", "MAX_FILE_BYTES", "repo_root", "walk", "why_unreadable"]
