"""Nothing said is lost: turns said while the plugin sets itself up (kept as transcript pointers by the stdlib-only
bootstrap) are captured by the first hook that runs with remem, and a capture the service acknowledged survives
the service being killed (its journal is taken up by the next service, once). Driven through the launcher.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from remem.core.service.client import stop_service
from test_hooks import LAUNCHER, ROOT, Plugin
from written import data_of

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX signals and sockets")


def plugin_stamp() -> str:
    """The launcher's stamp of this plugin folder (hooks/remem-hook: plugin_stamp)."""
    script = ('printf \'%s|%s\' "$(printf \'%s\' "$1" | cksum)" '
              '"$(cat "$1/.claude-plugin/plugin.json" "$1/pyproject.toml" | cksum)"')
    return subprocess.run(["/bin/sh", "-c", script, "sh", str(ROOT)], capture_output=True, text=True,
                          check=True).stdout


def bare_python3() -> bool:
    exe = shutil.which("python3", path="/usr/bin:/bin")
    return exe is not None and subprocess.run([exe, "-c", "import remem"], capture_output=True).returncode != 0


def write_turns(path: Path, project: Path, session: str, turns: list[tuple[str, str]], append: bool = False) -> None:
    """A Claude Code transcript (the stable core of its format) with these (prompt, answer) turns."""
    with open(path, "a" if append else "w") as fh:
        for prompt, reply in turns:
            for role, content in (("user", prompt), ("assistant", [{"type": "text", "text": reply}])):
                fh.write(json.dumps({"type": role, "uuid": str(uuid.uuid4()), "sessionId": session, "cwd": str(project),
                                     "timestamp": "2026-12-01T10:00:00.000Z",
                                     "message": {"role": role, "content": content}}) + "\n")


@pytest.mark.skipif(not bare_python3(), reason="needs a python3 without remem on /usr/bin:/bin")
def test_turns_said_while_remem_sets_itself_up_are_captured_in_order_by_the_first_working_hook(
        tmp_path: Path, store_factory) -> None:  # type: ignore[no-untyped-def]
    plugin = Plugin(tmp_path, store_factory("none"))
    proj = plugin.project("app")
    data = tmp_path / "plugin-data"
    transcript = tmp_path / "t1.jsonl"
    secret = "ghp_" + "S3tupWindowTokenDoNotStore0123456789ab"
    write_turns(transcript, proj, "s1", [(f"We deploy with fly.io; the deploy token is {secret}.", "Noted.")])
    # no remem for the launcher: no REMEM_PYTHON, no remem-hook, a python3 without remem; the plugin's data
    # folder is where bootstrap.py would build the venv (its setup is kept from starting: a venv is slow)
    bare = {k: v for k, v in plugin.env.items() if k not in ("REMEM_PYTHON",)}
    bare.update(PATH="/usr/bin:/bin", CLAUDE_PLUGIN_DATA=str(data), CLAUDE_PLUGIN_ROOT=str(ROOT))
    (data / "venv").mkdir(parents=True)  # a setup under way (this process stands for its worker)
    (data / "setup.json").write_text(json.dumps({"stamp": plugin_stamp(), "pid": os.getpid(), "started": time.time(),
                                                 "status": "running", "said": []}))

    for event, extra in (("UserPromptSubmit", {"prompt": "We deploy with fly.io"}), ("Stop", {})):
        payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(proj),
                   "hook_event_name": event, **extra}
        proc = subprocess.run([str(LAUNCHER), event], input=json.dumps(payload).encode(), capture_output=True,
                              env=bare, cwd=str(proj), timeout=60)
        assert proc.returncode == 0, proc.stderr
    pointers = list((plugin.home / "hooks" / "pending").glob("*.json"))
    assert len(pointers) == 1 and oct(pointers[0].stat().st_mode & 0o777) == oct(0o600)
    assert oct((plugin.home / "hooks" / "pending").stat().st_mode & 0o777) == oct(0o700)
    kept = pointers[0].read_text()
    assert "fly.io" not in kept and secret not in kept and json.loads(kept)["offset"] == transcript.stat().st_size
    # a second session, also while setting up: kept after the first
    t2 = tmp_path / "t2.jsonl"
    write_turns(t2, proj, "s2", [("Never use tabs, always 4 spaces.", "Understood.")])
    payload = {"session_id": "s2", "transcript_path": str(t2), "cwd": str(proj), "hook_event_name": "Stop"}
    subprocess.run([str(LAUNCHER), "Stop"], input=json.dumps(payload).encode(), env=bare, cwd=str(proj), timeout=60,
                   check=True, capture_output=True)
    assert not any(plugin.memories(proj))

    # remem is there now: the next session's first capture takes both up, first session first, redacted
    t3 = tmp_path / "t3.jsonl"
    write_turns(t3, proj, "s3", [("What is the staging database?", "Postgres 16.")])
    proc = plugin.stop(proj, "s3", t3, "Postgres 16.")
    assert proc.returncode == 0, proc.stderr
    records = plugin.memories(proj)
    text = "\n".join(r.text for r in records)
    assert "fly.io" in text and "4 spaces" in text and "staging database" in text, text
    assert secret not in text and not plugin.spool()
    assert not list((plugin.home / "hooks" / "pending").glob("*.json"))
    taken = [line for line in plugin.log_lines() if line.get("event") == "pending"]
    assert len(taken) == 2
    said = sorted(records, key=lambda r: r.created_at)
    firsts = [next(i for i, r in enumerate(said) if needle in r.text)
              for needle in ("fly.io", "4 spaces", "staging database")]
    assert firsts == sorted(firsts)  # in the order they were said
    for folder, _, names in os.walk(plugin.home):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                assert secret.encode() not in data_of(path), path
    # taken up once: the same session's next Stop stores nothing twice
    before = len(plugin.memories(proj))
    plugin.stop(proj, "s1", transcript, "Noted.")
    assert len(plugin.memories(proj)) == before


def _served(tmp_path: Path, store_factory) -> Plugin:  # type: ignore[no-untyped-def]
    p = Plugin(tmp_path, store_factory("none"))
    p.env.update(REMEM_SERVICE="auto", REMEM_SERVICE_IDLE="60")
    return p


def test_captures_the_service_acknowledged_survive_a_sigkill_and_are_stored_once(
        tmp_path: Path, store_factory) -> None:  # type: ignore[no-untyped-def]
    plugin = _served(tmp_path, store_factory)
    proj = plugin.project("burst")
    try:
        warm = tmp_path / "warm.jsonl"
        write_turns(warm, proj, "warm", [("Hello, the repo is a Django monolith.", "Got it.")])
        plugin.stop(proj, "warm", warm, "Got it.")  # starts the service
        state = plugin.home / "store" / "service.json"
        deadline = time.monotonic() + 30
        while not state.exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = int(json.loads(state.read_text())["pid"])
        facts = [f"Decision {i}: service number {i} is written in {lang} and deployed to region eu-{i}"
                 for i, lang in enumerate(["Go", "Rust", "Elixir", "Kotlin", "Zig", "OCaml", "Scala", "Swift",
                                           "Haskell", "Julia", "Crystal", "Nim"])]
        for i, fact in enumerate(facts):
            write_turns(tmp_path / f"b{i}.jsonl", proj, f"b{i}", [(fact, f"Recorded decision {i}.")])
        with ThreadPoolExecutor(len(facts)) as pool:  # twelve sessions end at once
            procs = list(pool.map(lambda i: plugin.stop(proj, f"b{i}", tmp_path / f"b{i}.jsonl",
                                                         f"Recorded decision {i}."), range(len(facts))))
        assert all(p.returncode == 0 and p.stdout == b"" for p in procs), [p.stderr for p in procs]
        journal = plugin.home / "store" / "hook-journal"
        os.kill(pid, signal.SIGKILL)  # an OOM kill right after the burst was acknowledged
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        left = sorted(journal.glob("*.json"))
        assert left, "every capture was done before the kill: nothing here tested the journal"
        for entry in left:
            assert oct(entry.stat().st_mode & 0o777) == oct(0o600)
            assert "Decision" not in entry.read_text()  # a pointer, no text
        # the next service (the next hook starts it) takes up what the journal holds
        deadline = time.monotonic() + 90
        while True:
            records = plugin.memories(proj, service="auto")
            kept = [i for i in range(len(facts)) if any(re.search(rf"region eu-{i}\b", r.text) for r in records)]
            if len(kept) == len(facts) and not list(journal.glob("*.json")):
                break
            assert time.monotonic() < deadline, (len(kept), len(left), [r.text for r in records][:5])
            time.sleep(0.3)
        episodes = [r.text for r in records if r.kind == "user"]
        assert len(episodes) == len(set(episodes)), "a capture was stored twice"
    finally:
        stop_service(plugin.home / "store", wait=False)
