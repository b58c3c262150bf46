"""The docs a reader meets: the site builds with --strict (a broken link or a missing API reference fails the
suite), every variable the code reads is in the configuration reference, and the README stays short and tells
the truth about how the tests run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = re.compile(r"\bREMEM_[A-Z0-9]+(?:_[A-Z0-9]+)*\b")
NOT_SETTINGS = {"REMEM_MARK"}  # a constant's name, not an environment variable


def test_the_docs_site_builds_with_strict(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text("utf-8")
    assert "remember" in api and "default_scope" in api  # the reference is generated from the docstrings


def test_every_variable_the_code_reads_is_in_the_configuration_reference() -> None:
    sources = [p for p in ROOT.rglob("*.py") if not {".venv", "tests", "build", "site"} & set(p.parts)]
    sources += [ROOT / "hooks" / "remem-hook", ROOT / ".ci" / "run"]
    used = {m for p in sources if p.is_file() for m in VARIABLE.findall(p.read_text("utf-8", errors="replace"))}
    documented = set(VARIABLE.findall((ROOT / "docs" / "configuration.md").read_text("utf-8")))
    assert used - NOT_SETTINGS - documented == set()


def test_the_readme_is_short_and_runs_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 250
    assert not re.search(r"\bissue \d+|\.\./", readme, re.IGNORECASE)  # no internal history, no paths outside
    assert "bash .ci/run" in readme and "pip install . && remem demo" in readme
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    assert 'pip install -q -e ".[dev]" && python -m pytest -q' in ci
    for link in re.findall(r"\]\(([^)#]+)\)", readme):
        assert link.startswith("http") or (ROOT / link).exists(), link


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_python_a_newcomer_copies_runs_as_written(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Every ```python block of the page, in order, in one namespace, on a fresh embedded store."""
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REMEM_SERVICE", "off")
    monkeypatch.setenv("REMEM_EMBEDDER", "none")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text("utf-8"), re.S)
    assert blocks
    namespace: dict[str, object] = {}
    try:
        for block in blocks:
            exec(compile(block, page, "exec"), namespace)  # noqa: S102 - the page's own example
    finally:
        mem = namespace.get("mem")
        if mem is not None:
            mem.close()  # type: ignore[attr-defined]
    assert "Alice prefers green tea" in capsys.readouterr().out  # what the example prints is what it promises
