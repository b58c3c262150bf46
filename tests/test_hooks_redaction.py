"""Finding 2 of issue 12: nothing the Claude Code hooks write reaches the disk unredacted.

The real hook launcher runs as a subprocess (as Claude Code runs it) on a transcript and Stop payloads that
hold an AWS key id with its secret on one line, a ``ghp_`` token, a URL password and a JWT; afterwards every
file under ``$REMEM_HOME`` (session state, spool, logs, last recall, the store itself) is read as bytes and
must contain none of them.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import copy_store
from written import data_of

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "remem-hook"


def _secrets(seed: int = 12) -> dict[str, str]:
    """Fresh fake credentials of the real shapes (random, so no rule can special-case them)."""
    rng = random.Random(seed)

    def rs(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    b62 = string.ascii_letters + string.digits
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "4242", "name": "Ada"}).encode()).rstrip(b"=").decode()
    return {
        "aws_id": "AKIA" + rs(string.ascii_uppercase + "234567", 16),
        "aws_secret": rs(b62 + "+/", 40),
        "ghp": "ghp_" + rs(b62, 36),
        "url_pw": rs(b62, 10) + "-" + rs(b62, 6),
        "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + claims + "." + rs(b62 + "-_", 43),
    }


def _say(s: dict[str, str]) -> str:
    return (f"Deploy with {s['aws_id']} / {s['aws_secret']} (key id and secret), push with {s['ghp']}, "
            f"the db is postgres://app:{s['url_pw']}@db.internal:5432/app and the session is {s['jwt']}.")


class Hooks:
    def __init__(self, tmp: Path, store: Path) -> None:
        self.home = tmp / "remem-home"
        self.home.mkdir()
        copy_store(store, self.home / "store")
        self.project = tmp / "proj"
        (self.project / ".git").mkdir(parents=True)
        self.env = {**os.environ, "REMEM_HOME": str(self.home), "REMEM_EMBEDDER": "none", "REMEM_SERVICE": "off",
                    "REMEM_PYTHON": sys.executable, "REMEM_HOOK_DRAIN": "off", "REMEM_HOOK_RECALL_DEADLINE": "30",
                    "REMEM_HOOK_DETACH": "0"}  # capture hooks run in the foreground, so the test sees their files
        for key in ("REMEM_PATH", "REMEM_URL", "REMEM_HOOK_TENANT", "CLAUDE_PROJECT_DIR", "REMEM_HOOK_PII",
                    "REMEM_REDACT_CONFIG"):
            self.env.pop(key, None)

    def run(self, args: list[str], payload: dict[str, Any] | None = None, **env: str) -> subprocess.CompletedProcess:
        data = json.dumps({**payload, "hook_event_name": args[0]}).encode() if payload is not None else b""
        proc = subprocess.run([str(LAUNCHER), *args], input=data, capture_output=True, cwd=str(self.project),
                              env={**self.env, **env}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc

    def files(self) -> list[Path]:
        return [p for p in self.home.rglob("*") if p.is_file()]


@pytest.fixture
def hooks(tmp_path: Path, store_factory: Callable[..., Path]) -> Hooks:
    return Hooks(tmp_path, store_factory("none"))


def _grep(files: list[Path], needles: dict[str, str]) -> list[str]:
    found = []
    for path in files:
        data = data_of(path)
        found += [f"{name} in {path}" for name, value in needles.items() if value.encode() in data]
    return found


def test_every_file_the_hooks_write_is_free_of_the_secrets_they_saw(hooks: Hooks, tmp_path: Path) -> None:
    s = _secrets()
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "uuid": "u1", "message": {"role": "user", "content": _say(s)}}) + "\n"
        + json.dumps({"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Done. " + _say(s)}]}}) + "\n")
    stop = {"session_id": "sess-1", "transcript_path": str(transcript), "cwd": str(hooks.project),
            "stop_hook_active": False, "last_assistant_message": "Done. " + _say(s)}

    hooks.run(["Stop"], stop)
    state_files = list((hooks.home / "hooks" / "sessions").glob("*.json"))
    assert state_files and "[REDACTED:" in state_files[0].read_text()  # the final answer is kept, redacted
    hooks.run(["Stop"], stop)                                         # the same Stop again: nothing new
    assert len(list((hooks.home / "hooks" / "spool").glob("*.json"))) == 1
    hooks.run(["UserPromptSubmit"], {"session_id": "sess-1", "cwd": str(hooks.project), "prompt":
                                     "Rotate these now: " + _say(s)})
    hooks.run(["memory", "save", "CI uses", s["ghp"], "and", s["aws_id"], s["aws_secret"]])
    hooks.run(["drain"], None)
    hooks.run(["SessionEnd"], {**stop, "reason": "exit"})
    hooks.run(["drain"], None)

    written = hooks.files()
    assert any(p.parent.name == "sessions" for p in written) and any(p.name == "hooks.log" for p in written)
    assert _grep(written, s) == []
    from remem import Memory, Scope

    with Memory(path=hooks.home / "store", embedder="none", service="off") as mem:
        texts = "\n".join(r.text for r in mem.list(scope=Scope(tenant=str(hooks.project.resolve())), limit=50))
    assert "[REDACTED:" in texts and not [v for v in s.values() if v in texts]


def test_a_log_line_with_an_error_message_is_redacted_before_it_is_written(tmp_path: Path, monkeypatch) -> None:
    from remem.hooks import common

    monkeypatch.setenv("REMEM_HOME", str(tmp_path))
    monkeypatch.delenv("REMEM_REDACT_CONFIG", raising=False)
    s = _secrets(7)
    common.log("drain", f"remember failed (1): ProviderError: POST https://app:{s['url_pw']}@llm.internal/v1 "
               f"with Authorization: Bearer {s['ghp']}", detail=f"key {s['aws_id']} / {s['aws_secret']}")
    text = (tmp_path / "logs" / "hooks.log").read_text()
    line = json.loads(text)
    assert line["event"] == "drain" and "remember failed (1): ProviderError" in line["msg"]
    assert "[REDACTED:" in line["msg"] and "[REDACTED:" in line["detail"]
    assert not [v for v in s.values() if v in text]


def test_a_broken_redact_json_still_redacts_what_the_hooks_write(tmp_path: Path, monkeypatch) -> None:
    from remem.hooks import common

    monkeypatch.setenv("REMEM_HOME", str(tmp_path))
    monkeypatch.delenv("REMEM_REDACT_CONFIG", raising=False)
    (tmp_path / "redact.json").write_text("{not json")
    s = _secrets(9)
    common.write_json(tmp_path / "state.json", {"tenant": "/work/p", "final": _say(s)})
    saved = json.loads((tmp_path / "state.json").read_text())
    assert saved["tenant"] == "/work/p" and "[REDACTED:" in saved["final"]
    assert not [v for v in s.values() if v in json.dumps(saved)]
