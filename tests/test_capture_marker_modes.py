"""The session-ended marker the capture hook leaves for its drainer is private like every file remem writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from remem.hooks import capture


def test_the_ended_marker_is_0600_in_a_0700_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    old = os.umask(0o022)
    try:
        marker = capture.mark_ended("session-1")
    finally:
        os.umask(old)
    assert marker == capture.ended_marker("session-1") and marker.exists()
    assert stat.S_IMODE(marker.stat().st_mode) == 0o600
    assert stat.S_IMODE(marker.parent.stat().st_mode) == 0o700
