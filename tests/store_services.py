"""The local service processes of one test store, found by their command line (Linux /proc): a fixture ends the
ones it cannot reach through the store's socket (started late by a hook, or kept off the socket by a test)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def service_pids(store: Path) -> list[int]:
    """Live ``remem.core.service --path STORE`` processes (none where there is no /proc)."""
    mark = f"--path\0{store}\0".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes()
            if b"remem.core.service" in cmd and mark in cmd and b"State:\tZ" not in (proc / "status").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def end_services(store: Path, timeout: float = 10.0) -> None:
    """SIGTERM every service of ``store`` (it drains and exits), SIGKILL what is left after ``timeout``."""
    deadline = time.monotonic() + timeout
    while (pids := service_pids(store)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        time.sleep(0.2)
    for pid in service_pids(store):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
