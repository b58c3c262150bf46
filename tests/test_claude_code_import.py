"""``remem import claude-code``: backfilling memory from the transcripts Claude Code keeps, on a real store.

The transcripts are shaped like Claude Code's (the hook fixtures plus generated sessions from
bench/bench_claude_import.py); recall through the real UserPromptSubmit hook proves the imported memories sit in
the tenant the hooks use.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

from remem import Memory, Scope
from remem.bench.bench_claude_import import slug, write_session
from remem.hooks.importer import import_sessions, ledger_path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
SECRET = "ghp_" + "ImportTestToken0123456789abcdefABCDEF"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_factory: Callable[..., Path]) -> Path:
    remem_home = tmp_path / "remem-home"
    remem_home.mkdir()
    os.rename(store_factory("none"), remem_home / "store")
    monkeypatch.setenv("REMEM_HOME", str(remem_home))
    monkeypatch.delenv("REMEM_HOOK_TENANT", raising=False)
    monkeypatch.delenv("REMEM_PATH", raising=False)
    return remem_home


def project(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "code" / name
    (path / ".git").mkdir(parents=True, exist_ok=True)
    (path / "src").mkdir(exist_ok=True)
    return path.resolve()


def fixture_session(projects: Path, cwd: Path, fixture: str = "session1_decision.jsonl") -> Path:
    dest = projects / slug(str(cwd)) / FIXTURES.joinpath(fixture).name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text((FIXTURES / fixture).read_text().replace("__PROJECT__", str(cwd)))
    return dest


def memories(home: Path, tenant: Path) -> list[Any]:
    with Memory(path=home / "store", embedder="none", service="off") as mem:
        return mem.list(scope=Scope(tenant=str(tenant)), limit=500)


def run_import(home: Path, projects: Path) -> Any:
    with Memory(path=home / "store", embedder="none", service="off") as mem:
        return import_sessions(mem, projects)


def test_each_project_lands_in_the_tenant_its_hooks_use(tmp_path: Path, home: Path) -> None:
    queue, billing = project(tmp_path, "queue-service"), project(tmp_path, "billing")
    projects = tmp_path / "claude" / "projects"
    fixture_session(projects, queue / "src")                # a session started in a subfolder: the git root counts
    write_session(projects, str(billing), "b0000000-0000-4000-8000-000000000001", 3,
                  datetime(2026, 5, 4, 10, tzinfo=timezone.utc), random.Random(1))
    report = run_import(home, projects)
    assert report.imported == 2 and report.sessions == 2 and len(report.tenants) == 2
    queue_text = "\n".join(r.text for r in memories(home, queue))
    assert "SKIP LOCKED" in queue_text and "Postgres" in queue_text
    billing_text = "\n".join(r.text for r in memories(home, billing))
    assert billing_text and "SKIP LOCKED" not in billing_text

    # the UserPromptSubmit hook of that project, run as Claude Code runs it, recalls what was imported
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "new-session", "cwd": str(queue),
               "prompt": "Which database does the job queue use for claiming jobs?"}
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none",
           "REMEM_PYTHON": sys.executable, "REMEM_HOOK_RECALL_DEADLINE": "30", "CLAUDE_CONFIG_DIR": str(tmp_path)}
    proc = subprocess.run([str(ROOT / "hooks" / "remem-hook"), "UserPromptSubmit"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=120)
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "SKIP LOCKED" in context


def test_a_second_run_imports_nothing_and_a_grown_session_only_its_new_turns(tmp_path: Path, home: Path) -> None:
    queue = project(tmp_path, "queue-service")
    projects = tmp_path / "claude" / "projects"
    path = fixture_session(projects, queue)
    first = run_import(home, projects)
    before = memories(home, queue)
    assert first.imported == 1 and before

    again = run_import(home, projects)
    assert again.imported == 0 and again.memories == 0 and again.skipped == {"already imported": 1}
    assert [(r.id, r.text) for r in memories(home, queue)] == [(r.id, r.text) for r in before]

    with open(path, "a") as fh:  # the session went on after the import
        fh.write((FIXTURES / "session1_turn2.jsonl").read_text().replace("__PROJECT__", str(queue)))
    grown = run_import(home, projects)
    assert grown.imported == 1 and 0 < grown.messages < first.messages + 10
    after = memories(home, queue)
    summaries = [r for r in after if r.kind == "summary"]
    assert len(summaries) == 1                                  # still one summary for the session, updated
    old_summary = next(r for r in before if r.kind == "summary")
    assert summaries[0].id == old_summary.id and summaries[0].text != old_summary.text
    assert sum("SKIP LOCKED" in r.text for r in after if r.kind != "summary") == \
        sum("SKIP LOCKED" in r.text for r in before if r.kind != "summary")  # nothing imported twice


def test_imports_are_redacted_keep_their_times_and_leave_no_text_in_the_ledger(tmp_path: Path, home: Path) -> None:
    app = project(tmp_path, "app")
    projects = tmp_path / "claude" / "projects"
    start = datetime(2026, 3, 2, 8, 30, tzinfo=timezone.utc)
    write_session(projects, str(app), "c0000000-0000-4000-8000-000000000001", 4, start, random.Random(3),
                  secret=SECRET)
    report = run_import(home, projects)
    assert report.imported == 1 and report.redactions >= 1
    stored = memories(home, app)
    assert stored and all(SECRET not in r.text for r in stored)
    assert all(r.metadata.get("session_started", "").startswith("2026-03-02T08:") for r in stored)
    for folder, _, names in os.walk(home):
        for name in names:
            with open(Path(folder) / name, "rb") as fh:
                assert SECRET.encode() not in fh.read(), name
    ledger = ledger_path()
    assert ledger.stat().st_mode & 0o777 == 0o600 and ledger.parent.stat().st_mode & 0o777 == 0o700
    assert b"staging" not in ledger.read_bytes()                # ids, offsets and sizes only


def test_sessions_the_hooks_captured_are_left_to_them(tmp_path: Path, home: Path) -> None:
    queue = project(tmp_path, "queue-service")
    projects = tmp_path / "claude" / "projects"
    path = fixture_session(projects, queue)
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none",
           "REMEM_PYTHON": sys.executable, "REMEM_HOOK_DRAIN": "inline", "REMEM_HOOK_DETACH": "0"}
    stop = {"hook_event_name": "Stop", "session_id": "3f1c2a9e-7b4d-4e8a-9c61-5d2f0b8a1e01",
            "transcript_path": str(path), "cwd": str(queue), "stop_hook_active": False,
            "last_assistant_message": ""}
    subprocess.run([str(ROOT / "hooks" / "remem-hook"), "Stop"], input=json.dumps(stop), text=True, env=env,
                   capture_output=True, timeout=120, check=True)
    before = memories(home, queue)
    assert before
    report = run_import(home, projects)
    assert report.imported == 0 and report.skipped == {"captured by the hooks": 1}
    assert len(memories(home, queue)) == len(before)


def test_the_cli_reports_what_it_imported(tmp_path: Path, home: Path) -> None:
    app = project(tmp_path, "app")
    projects = tmp_path / "claude" / "projects"
    for i in range(3):
        write_session(projects, str(app), f"d0000000-0000-4000-8000-00000000000{i}", 2,
                      datetime(2026, 4, 1 + i, tzinfo=timezone.utc), random.Random(i))
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none"}
    cmd = [sys.executable, "-m", "remem.cli", "import", "claude-code", str(projects)]
    dry = json.loads(subprocess.run([*cmd, "--dry-run", "--json"], capture_output=True, text=True, env=env,
                                    timeout=120, check=True).stdout)
    assert dry["imported"] == 3 and dry["memories"] == 0
    human = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=True)
    assert "imported 3 of 3 sessions" in human.stdout
    again = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120,
                                      check=True).stdout)
    assert again["imported"] == 0 and again["skipped"] == {"already imported": 3}
