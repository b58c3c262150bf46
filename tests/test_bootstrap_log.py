"""The plugin's first-run setup keeps pip's output only through remem's redactor (hooks/bootstrap.py): an index URL
with credentials or an e-mail address pip prints never reaches setup.log in clear."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remem.hooks import bootstrap

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PIP_OUTPUT = (f"Looking in indexes: https://bob:{TOKEN}@pypi.example.com/simple\n"
              "ERROR: could not reach the index; contact bob.builder@builders-inc.io\n")


def test_pip_output_is_kept_redacted_by_the_venv_python() -> None:
    kept = bootstrap._redacted_text(Path(sys.executable), PIP_OUTPUT)
    assert TOKEN not in kept and "bob.builder@builders-inc.io" not in kept
    assert "Looking in indexes" in kept and "could not reach the index" in kept


def _python_without_remem() -> str | None:
    exe = shutil.which("python3", path="/usr/bin:/bin")
    if exe is None:
        return None
    has = subprocess.run([exe, "-c", "import remem"], capture_output=True, timeout=30).returncode == 0
    return None if has else exe


@pytest.mark.skipif(_python_without_remem() is None, reason="no python3 without remem on /usr/bin:/bin")
def test_output_that_cannot_be_redacted_is_not_kept() -> None:
    kept = bootstrap._redacted_text(Path(_python_without_remem()), PIP_OUTPUT)  # type: ignore[arg-type]
    assert TOKEN not in kept and "builders-inc.io" not in kept and "pypi.example.com" not in kept
    assert "is not kept" in kept and "2 lines" in kept
