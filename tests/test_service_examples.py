"""Every example runs offline to the end and leaves no process behind (the conftest fixture fails a test whose
processes outlive it: an example's local service must exit with the example's temporary store)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_example_runs_and_leaves_nothing_running(example: Path, tmp_path: Path) -> None:
    env = {**os.environ, "REMEM_SERVICE": "auto", "REMEM_HOME": str(tmp_path / "home"), "REMEM_SERVICE_IDLE": "600"}
    proc = subprocess.run([sys.executable, str(example)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip()
