"""``Memory.index()`` / ``remem index``: files kept as ``document`` memories, in step with the files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from remem import Memory, Scope
from remem.core.documents.chunking import MAX_CHUNK_TOKENS, chunks
from remem.core.recall.tokens import count_tokens

SCOPE = Scope(tenant="acme")
FAKE_TOKEN = "ghp_" + "k3Zq9XbV2mN8pL4wR7tY1uE6oI5aS0dF3gH2"
ADR = """# ADR 7: the job queue

## Context
Redis lost jobs on every restart of the worker pods.

## Decision
We use Postgres for the job queue, with SELECT ... FOR UPDATE SKIP LOCKED.

```sh
# not a heading: a comment in a code block
psql -c 'select 1'
```

## Consequences
Migration 0042 creates the jobs table.
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "docs" / "adr").mkdir(parents=True)
    (root / ".gitignore").write_text("drafts/\n*.tmp.md\n")
    (root / "docs" / "adr" / "0007-queue.md").write_text(ADR)
    (root / "docs" / "runbook.rst").write_text("Runbook\n=======\n\nDeploys\n-------\nStaging deploys go through "
                                               "ArgoCD, never kubectl apply.\n")
    (root / "docs" / "notes.txt").write_text(f"The CI token is {FAKE_TOKEN} for now.\n")
    (root / "docs" / "drafts").mkdir()
    (root / "docs" / "drafts" / "secret-plan.md").write_text("# Plan\nignored by git\n")
    (root / "docs" / "scratch.tmp.md").write_text("# Scratch\nignored by git\n")
    (root / "docs" / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('code is not a document')\n")
    return root


def documents(mem: Memory) -> list[Any]:
    return [r for r in mem.list(scope=SCOPE, limit=1000) if r.kind == "document"]


def test_index_keeps_chunks_with_their_source_and_honours_gitignore(mem: Memory, repo: Path) -> None:
    result = mem.index(repo / "docs", scope=SCOPE)
    assert result.files == 3 and result.added > 0 and result.removed == 0
    assert "binary" in result.skipped[str(repo / "docs" / "logo.md")]
    names = {r.metadata["document"] for r in documents(mem)}
    assert names == {"docs/adr/0007-queue.md", "docs/runbook.rst", "docs/notes.txt"}  # named from the repo root
    decision = next(r for r in documents(mem) if "SKIP LOCKED" in r.text)
    assert decision.source == "docs/adr/0007-queue.md: ADR 7: the job queue > Decision (lines 6-12)"
    assert "not a heading" in decision.text  # the code block's comment stayed in its section
    runbook = next(r for r in documents(mem) if "ArgoCD" in r.text)
    assert runbook.metadata["heading"] == "Runbook > Deploys"


def test_recall_and_context_show_documents_with_their_source(mem: Memory, repo: Path) -> None:
    mem.index(repo / "docs", scope=SCOPE)
    hits = mem.search("which database runs the job queue", scope=SCOPE)
    assert all(h.record.kind == "document" for h in hits) and any("Postgres" in h.record.text for h in hits[:2])
    ctx = mem.context("how do staging deploys work", scope=SCOPE)
    assert "ArgoCD" in ctx and "(from docs/runbook.rst: Runbook > Deploys (lines 1-6))" in ctx
    ans = mem.answer("Which migration creates the jobs table?", scope=SCOPE, llm="keyless")
    assert ans.found and "0042" in ans.text


def test_secrets_in_documents_are_redacted_before_they_are_stored(mem: Memory, repo: Path) -> None:
    mem.index(repo / "docs", scope=SCOPE)
    note = next(r for r in documents(mem) if r.metadata["document"] == "docs/notes.txt")
    assert FAKE_TOKEN not in note.text and "REDACTED" in note.text


def test_a_second_run_writes_nothing_and_an_edit_replaces_only_what_changed(mem: Memory, repo: Path) -> None:
    first = mem.index(repo / "docs", scope=SCOPE)
    before = {r.id: r for r in documents(mem)}
    again = mem.index(repo / "docs", scope=SCOPE)
    assert (again.added, again.removed, again.unchanged) == (0, 0, first.added)
    assert {r.id: r.updated_at for r in documents(mem)} == {i: r.updated_at for i, r in before.items()}
    adr = repo / "docs" / "adr" / "0007-queue.md"
    adr.write_text("Status: accepted.\n\n" + ADR.replace("Migration 0042", "Migration 0043"))  # lines move too
    edited = mem.index(repo / "docs", scope=SCOPE)
    assert edited.added == 2 and edited.removed == 1  # the new preamble, the new Consequences; the old one gone
    texts = [r.text for r in documents(mem)]
    assert any("0043" in t for t in texts) and not any("0042" in t for t in texts)
    moved = next(r for r in documents(mem) if "SKIP LOCKED" in r.text)
    assert moved.id in before and moved.source.endswith("(lines 8-14)")  # same memory, its new lines
    assert moved.embedded == before[moved.id].embedded


def test_a_deleted_file_is_forgotten_unless_prune_is_off(mem: Memory, repo: Path) -> None:
    mem.index(repo / "docs", scope=SCOPE)
    (repo / "docs" / "runbook.rst").unlink()
    kept = mem.index(repo / "docs", scope=SCOPE, prune=False)
    assert kept.removed == 0 and any("ArgoCD" in r.text for r in documents(mem))
    pruned = mem.index(repo / "docs", scope=SCOPE)
    assert pruned.removed >= 1 and not any("ArgoCD" in r.text for r in documents(mem))
    # indexing one file does not prune the rest of the folder
    mem.index(repo / "docs" / "notes.txt", scope=SCOPE)
    assert any("SKIP LOCKED" in r.text for r in documents(mem))


def test_scopes_keep_their_own_documents(mem: Memory, repo: Path) -> None:
    mem.index(repo / "docs", scope=SCOPE)
    other = Scope(tenant="globex")
    assert mem.index(repo / "docs", scope=other).added > 0
    assert mem.search("job queue Postgres", scope=other)[0].record.scope == other
    mem.forget(scope=other, kind="document", dry_run=False)
    assert documents(mem)  # acme's are untouched


def test_bad_paths_are_clear_errors(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        mem.index(tmp_path / "missing", scope=SCOPE)
    with pytest.raises(ValueError, match="at least one"):
        mem.index([], scope=SCOPE)


def test_long_sections_are_cut_within_the_size_limit() -> None:
    text = "# Big\n\n" + "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor " * 60 for i in range(12))
    got = chunks(text, ".md")
    assert len(got) > 3 and all(count_tokens(c.text) <= MAX_CHUNK_TOKENS for c in got)
    assert all(c.heading == "Big" for c in got)
    lines = text.splitlines()
    for c in got:  # the lines named are the lines held
        assert "\n".join(lines[c.start - 1:c.end]).strip() == c.text.strip()


def test_cli_index_then_ask(store_factory: Any, repo: Path) -> None:
    store = store_factory("none")
    env = {**os.environ, "REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none", "REMEM_HOME": str(store.parent)}
    env.pop("REMEM_LLM_MODEL", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "remem.cli", *args, "--path", str(store), "--tenant", "acme"],
                              capture_output=True, text=True, env=env, timeout=120, cwd=repo)

    got = run("index", "docs", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["files"] == 3
    again = json.loads(run("index", "docs", "--json").stdout)
    assert again["added"] == 0 and again["unchanged"] > 0
    human = run("index", "docs")
    assert "0 chunks added" in human.stdout and "skipped" in human.stderr
    ans = json.loads(run("ask", "How do staging deploys work?", "--json").stdout)
    assert ans["found"] and "ArgoCD" in ans["text"]


def test_index_and_answer_through_the_local_service(store_factory: Any, repo: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths are resolved in the caller (the service runs elsewhere); the results cross the wire as they are."""
    from remem.core.service.client import stop_service

    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")
    monkeypatch.chdir(repo)
    path = store_factory("none")
    try:
        mem = Memory(path=path, embedder="none", service="require")
        ticks: list[int] = []
        result = mem.index(["docs"], scope=SCOPE, progress=ticks.append)
        assert mem.remote and result.files == 3 and sum(ticks) == 3
        assert mem.index("docs", scope=SCOPE).unchanged == result.added
        ans = mem.answer("Which migration creates the jobs table?", scope=SCOPE)
        assert ans.found and "0042" in ans.text
        mem.close()
    finally:
        stop_service(path, timeout=5, wait=False)


def test_the_claude_code_memory_command_indexes_and_asks_in_the_project(tmp_path: Path, repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``/remem:memory index docs/`` runs ``remem-hook memory index docs/`` in the project."""
    from remem.hooks import memory_cmd

    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REMEM_EMBEDDER", "none")
    monkeypatch.chdir(repo)
    assert memory_cmd.main(["index", "docs/"]) == 0
    assert "3 files:" in capsys.readouterr().out
    assert memory_cmd.main(["ask", "How do staging deploys work?"]) == 0
    assert "ArgoCD" in capsys.readouterr().out
