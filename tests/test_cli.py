"""The ``remem`` CLI as scripts use it (--json) and as the README's main job (demo).

Most commands run the CLI's ``main()`` in this process (a fresh interpreter per command cost this file a minute
of imports); the demo and a refused cross-tenant ``get`` run it as a user does, ``python -m remem.cli``."""

from __future__ import annotations

import contextlib
import io
import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.cli import main as cli_main
from written import data_of


def run(*args: str, store: Path, check: bool = True, stdin: str | None = None,
        env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``remem ARGS --path STORE`` in a folder outside any git repository, with its own environment, stdin,
    stdout and stderr; the result reads like ``subprocess.run``'s."""
    env = {"REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none", "REMEM_HOME": str(store.parent), **(env_extra or {})}
    saved_env, saved_cwd, saved_stdin = {k: os.environ.get(k) for k in env}, os.getcwd(), sys.stdin
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env)
        os.chdir(store.parent)  # no git repo here
        sys.stdin = io.StringIO(stdin or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main([*args, "--path", str(store)])
            except SystemExit as exc:  # argparse refusing the command line
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    proc = subprocess.CompletedProcess(["remem", *args], code, out.getvalue(), err.getvalue())
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_cli_round_trip_with_json(store_factory, tmp_path: Path) -> None:
    store = store_factory("none")
    added = json.loads(run("add", "We pinned stripe-python to v7.4.0", "--kind", "decision", "--tag", "deps",
                           "--tenant", "acme", "--json", store=store).stdout)
    assert added["kind"] == "decision" and added["tags"] == ["deps"]
    hits = json.loads(run("search", "which stripe version", "--tenant", "acme", "--json", store=store).stdout)["hits"]
    assert hits[0]["record"]["id"] == added["id"]
    empty = json.loads(run("search", "stripe", "--tenant", "other", "--json", store=store).stdout)
    assert empty["hits"] == [] and empty["elsewhere"] == 1  # and it says where the others are
    assert empty["scope_read"] == {"tenant": "other", "user": None, "agent": None, "session": None, "source": "--tenant"}
    listed = json.loads(run("list", "--tenant", "acme", "--json", store=store).stdout)["memories"]
    assert [r["id"] for r in listed] == [added["id"]]
    assert json.loads(run("get", added["id"], "--tenant", "acme", "--json", store=store).stdout)["text"].startswith("We pinned")
    # by id, too, a scope is a wall: another tenant (or the global space) does not see it
    for other in (["--tenant", "globex"], []):
        proc = subprocess.run([sys.executable, "-m", "remem.cli", "get", added["id"], *other, "--path", str(store),
                               "--embedder", "none", "--json"], capture_output=True, text=True, cwd=store.parent)
        assert proc.returncode != 0 and "We pinned" not in proc.stdout + proc.stderr
    assert json.loads(run("get", added["id"], "--all-tenants", "--json", store=store).stdout)["id"] == added["id"]
    stats = json.loads(run("stats", "--tenant", "acme", "--json", store=store).stdout)
    assert stats["count"] == 1 and stats["by_kind"] == {"decision": 1}
    out = tmp_path / "export.jsonl"
    assert json.loads(run("export", str(out), "--json", store=store).stdout)["exported"] == 0  # the global space
    assert json.loads(run("export", str(out), "--all-tenants", "--json", store=store).stdout)["exported"] == 1
    dry = json.loads(run("forget", "--tenant", "acme", "--kind", "decision", "--json", store=store).stdout)
    assert dry == {"count": 1, "ids": [added["id"]], "dry_run": True}
    held = json.loads(run("backup", "--json", store=store).stdout)["path"]  # holds what is about to be forgotten
    run("forget", "--tenant", "acme", "--kind", "decision", "--yes", store=store)
    assert "1 backup(s) taken before the last forget" in run("doctor", store=store).stdout
    assert json.loads(run("list", "--tenant", "acme", "--json", store=store).stdout)["memories"] == []
    assert json.loads(run("import", str(out), "--tenant", "acme", "--json", store=store).stdout)["imported"] == 1
    assert len(json.loads(run("list", "--tenant", "acme", "--json", store=store).stdout)["memories"]) == 1
    last = store.parent / "hooks" / "last_recall" / "acme.json"  # what the prompt hook injected last (a copy)
    last.parent.mkdir(parents=True, exist_ok=True)
    last.write_text(json.dumps({"tenant": "acme", "context": "We pinned stripe-python to v7.4.0"}))
    assert json.loads(run("compact", "--json", store=store).stdout) == {"compacted": 1, "backups_removed": [held]}
    assert not Path(held).exists() and "backups" not in run("doctor", store=store).stdout
    assert not last.exists()  # and the hooks' copy of what they showed
    assert len(json.loads(run("list", "--tenant", "acme", "--json", store=store).stdout)["memories"]) == 1


def test_cli_reads_stdin_and_reports_errors_clearly(store_factory) -> None:
    store = store_factory("none")
    rec = json.loads(run("add", "-", "--json", store=store, stdin="note from a pipe\n").stdout)
    assert rec["text"] == "note from a pipe"
    bad = run("add", "x", "--importance", "42", store=store, check=False)
    assert bad.returncode == 2 and "importance" in bad.stderr
    wipe = run("forget", "--kind", "note", "--yes", store=store, check=False)
    assert wipe.returncode == 2 and "--tenant" in wipe.stderr
    assert len(json.loads(run("list", "--global", "--json", store=store).stdout)["memories"]) == 1
    shown = run("list", "--global", store=store, env_extra={"COLUMNS": "80"}).stdout  # the id a user copies
    assert rec["id"] in shown and run("get", rec["id"], "--global", store=store).returncode == 0


@pytest.mark.timeout(180)
def test_demo_runs_keyless_and_shows_all_three_behaviours(tmp_path: Path) -> None:
    env = {**os.environ, "REMEM_SERVICE": "off", "REMEM_HOME": str(tmp_path), "REMEM_EMBEDDER": "none",
           "COLUMNS": "240"}
    proc = subprocess.run([sys.executable, "-m", "remem.cli", "demo"], capture_output=True, text=True, env=env,
                          timeout=170)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # captured as users capture (remember()): what was said is kept, and each distilled memory names its message
    assert re.search(r"remember\(\) of 3 sessions kept 13 messages as said, [1-9]\d* distilled memories", proc.stdout)
    assert re.search(r"decision +maya: We decided to pin stripe-python to v7\.4\.0 .*\(from s2-3\)", proc.stdout)
    assert "stripe-python to v7.4.0" in proc.stdout
    assert "0 foreign memories" in proc.stdout
    assert "Postgres 16" in proc.stdout and "Postgres 14" in proc.stdout


def test_redact_store_leaves_no_copy_of_what_it_redacted_in_the_store_files_or_backups(store_factory,
                                                                                     tmp_path: Path) -> None:
    """Review: `remem redact --store --yes` said it rewrote the memory while the old text stayed in the WAL,
    the segments and the backups until a `remem compact` it did not mention."""
    store = store_factory("none")
    run("add", "the door code of the lab is ZX-55-7713", "--tenant", "acme", store=store)
    held = json.loads(run("backup", "--json", store=store).stdout)["path"]
    state = store.parent / "hooks" / "sessions" / "s1.json"  # the Claude Code hooks' record of a session
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"offset": 3, "final": "Done: the door code of the lab is ZX-55-7713"}))
    config = tmp_path / "redact.json"
    config.write_text(json.dumps({"patterns": {"door_code": r"ZX-\d\d-\d{4}"}}))
    os.chmod(config, 0o600)
    env = {"REMEM_REDACT_CONFIG": str(config)}
    report = json.loads(run("redact", "--store", "--yes", "--all-tenants", "--json", store=store,
                            env_extra=env).stdout)
    assert report["changed"] == 1 and report["backups_removed"] == [held] and report["hook_files_rewritten"] == 1
    left = [p for p in store.parent.rglob("*") if p.is_file() and b"ZX-55-7713" in data_of(p)]
    assert left == []
    [rec] = json.loads(run("list", "--tenant", "acme", "--json", store=store, env_extra=env).stdout)["memories"]
    assert rec["text"] == "the door code of the lab is [REDACTED:door_code]"


def test_forgetting_a_conversation_by_its_session_name(store_factory) -> None:
    """`remember(session=...)` names a conversation, `--session` a scope: a bulk forget by the wrong one says how
    to reach the conversation, and that way forgets it."""
    from remem import Memory

    store = store_factory("none")
    with Memory(path=store, embedder="none", service="off") as mem:
        mem.remember([{"role": "user", "content": "We deploy the orders service on Tuesdays."}],
                     scope={"tenant": "acme"}, session="chat-42")
    proc = run("forget", "--tenant", "acme", "--session", "chat-42", "--yes", store=store)
    assert proc.stdout.startswith("forgot 0 memories") and "--where meta.session=chat-42" in proc.stdout
    gone = json.loads(run("forget", "--tenant", "acme", "--where", "meta.session=chat-42", "--yes", "--json",
                          store=store).stdout)
    assert gone["count"] >= 2 and not gone["dry_run"]  # the message and what was distilled from it
    assert json.loads(run("list", "--tenant", "acme", "--json", store=store).stdout)["memories"] == []
