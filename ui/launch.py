"""Open the inspector in the user's browser without putting a secret on the browser's command line.

``webbrowser.open(url)`` starts the browser with ``url`` as an argument, and every local account can read a
process's arguments (``ps``, ``/proc/*/cmdline``). So the browser is given a ``file://`` path instead: a 0600
page in a 0700 folder under ``$REMEM_HOME`` (only the owner can read it) that refreshes to a sign-in link with a
one-time code, good once and for :data:`~.security.CODE_TTL` seconds (the approach Jupyter takes, with a code
that dies instead of the server's token). The file goes once the code is used, and when the inspector stops.
"""

from __future__ import annotations

import html
import os
import secrets
import stat
import tempfile
import webbrowser
from pathlib import Path

from remem.core.config import private_dir, write_private

from .security import Guard


def signin_page(url: str) -> str:
    """A page that goes straight on to ``url`` (and shows it as a link if the browser does not follow)."""
    target = html.escape(url, quote=True)
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={target}">'
            f'<title>remem inspector</title></head>\n<body><p><a href="{target}">Open the remem inspector</a> '
            f'(a one-time link)</p></body></html>\n')


def write_signin_file(guard: Guard, folder: Path, path: str = "/", **params: str) -> Path:
    """A fresh 0600 page in ``folder`` (made 0700) that signs a browser in through a one-time code."""
    try:
        folder = _own_private(private_dir(folder))
    except OSError:  # a file where the folder should be, a read-only home: a folder of our own instead
        folder = Path(tempfile.mkdtemp(prefix="remem-ui-"))
    target = folder / f"open-{guard.port}-{secrets.token_hex(4)}.html"
    code = guard.one_time_code(on_spent=lambda: remove(target))
    write_private(target, signin_page(guard.signin_url(code, path, **params)))
    return target


def _own_private(folder: Path) -> Path:
    """``folder`` if only we can change what is in it; else a fresh 0700 one of ours. In a folder someone else
    may write to, the page could be swapped for theirs between our write and the browser's read."""
    try:
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and (not hasattr(os, "getuid") or st.st_uid == os.getuid()) \
                and not st.st_mode & 0o022:
            return folder
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="remem-ui-"))


def open_browser(page: Path) -> bool:
    """Open ``page`` in the default browser: its argument is a ``file://`` URL, no secret in it."""
    try:
        return bool(webbrowser.open(page.resolve().as_uri()))
    except Exception:  # noqa: BLE001 - no browser is not an error: the printed link still works
        return False


def remove(page: Path | None) -> None:
    """Delete the sign-in page (and the temporary folder made for it, if it had one of its own)."""
    if page is None:
        return
    try:
        os.unlink(page)
    except OSError:
        pass
    if page.parent.name.startswith("remem-ui-") and page.parent.parent == Path(tempfile.gettempdir()):
        try:
            page.parent.rmdir()
        except OSError:
            pass


__all__ = ["open_browser", "remove", "signin_page", "write_signin_file"]
