"""The hooks Claude Code waits for, answered by the warm local service through the stdlib-only thin client
(hooks/fast.py): the same answers as the full hook, each project's settings kept apart, and the full hook run
instead whenever no service can answer. Driven through the plugin's launcher like test_hooks.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from remem.core.service.client import stop_service
from remem.core.service.paths import service_paths
from remem.core.service.wire import dumps_line
from remem.hooks import fast
from store_services import service_pids
from test_hooks import DECISION, RECALL_MARK, Plugin

FAST = Path(fast.__file__)


@pytest.fixture
def served(tmp_path: Path, store_factory) -> Plugin:  # type: ignore[no-untyped-def]
    """A plugin whose hooks reach the local service (started by the first hook that opens the store)."""
    p = Plugin(tmp_path, store_factory("none"))
    p.env.update(REMEM_SERVICE="auto", REMEM_SERVICE_IDLE="60")
    yield p
    stop_service(p.home / "store", wait=False)
    deadline = time.monotonic() + 15  # a service a hook was still starting is stopped once it listens
    while service_pids(p.home / "store") and time.monotonic() < deadline:
        time.sleep(0.3)
        stop_service(p.home / "store", wait=True)


def service_pid(plugin: Plugin) -> int:
    state = json.loads((plugin.home / "store" / "service.json").read_text())
    return int(state["pid"])


def stored(plugin: Plugin, proj: Path, needle: str, timeout: float = 60.0) -> list:
    """The project's memories once one holds ``needle`` (a served capture is distilled after its answer)."""
    deadline = time.monotonic() + timeout
    while True:
        records = plugin.memories(proj, service="auto")
        if any(needle in r.text for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


def seed(plugin: Plugin, name: str) -> Path:
    proj = plugin.project(name)
    plugin.stop(proj, f"{name}-s1", plugin.transcript("session1_decision.jsonl", proj, name=f"{name}.jsonl"),
                DECISION)
    assert any("SKIP LOCKED" in r.text for r in stored(plugin, proj, "SKIP LOCKED"))
    return proj


def test_a_capture_is_acknowledged_at_once_and_stored_by_the_service(served: Plugin) -> None:
    seed(served, "first")  # no service yet: the full hook captured it (and started the service)
    pid = service_pid(served)
    proj = served.project("second")
    t = served.transcript("session1_decision.jsonl", proj, name="second.jsonl")
    proc = served.stop(proj, "second-s1", t, DECISION)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert any("SKIP LOCKED" in r.text for r in stored(served, proj, "SKIP LOCKED"))
    deadline = time.monotonic() + 30
    while not any(line.get("event") == "stop" and line.get("pid") == pid for line in served.log_lines()):
        assert time.monotonic() < deadline, "the service logged no capture"
        time.sleep(0.1)
    # captured once: the same Stop again finds nothing new, and the spool is empty
    served.stop(proj, "second-s1", t, DECISION)
    assert served.spool() == [] and len(stored(served, proj, "SKIP LOCKED")) == len(served.memories(proj, "auto"))
    # and into its own project only
    assert not any("SKIP LOCKED" in r.text for r in served.memories(served.project("third"), "auto"))


def test_a_prompt_answered_by_the_service_injects_what_the_full_hook_injects(served: Plugin) -> None:
    proj = seed(served, "queue")
    question = "Which database does the job queue use for claiming jobs?"
    thin, _ = served.prompt(proj, "thin-session", question)
    full, _ = served.prompt(proj, "full-session", question, REMEM_HOOK_THIN="0")
    assert RECALL_MARK in thin and "SKIP LOCKED" in thin
    assert thin == full
    pid = service_pid(served)
    done = [line for line in served.log_lines() if line.get("event") == "recall" and line.get("msg") == "injected"]
    assert {line["pid"] for line in done} >= {pid}, "the thin client's prompt was answered in the service"
    # what the session was shown is recorded by the service as by the hook: the same prompt injects nothing new
    again, _ = served.prompt(proj, "thin-session", question + " (again)")
    assert "SKIP LOCKED" not in again


def test_prompts_of_two_projects_served_at_once_never_see_each_other(served: Plugin) -> None:
    a, b = seed(served, "alpha"), served.project("beta")
    served.prompt(a, "warm", "Which database does the job queue use?")  # the service is up from here on
    results: dict[str, list[str]] = {"alpha": [], "beta": []}

    def ask(proj: Path, key: str, i: int) -> None:
        ctx, _ = served.prompt(proj, f"{key}-{i}", "Which database does the job queue use for claiming jobs?")
        results[key].append(ctx)

    threads = [threading.Thread(target=ask, args=(p, k, i)) for i in range(4) for p, k in ((a, "alpha"), (b, "beta"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all("SKIP LOCKED" in ctx for ctx in results["alpha"]) and len(results["alpha"]) == 4
    assert results["beta"] == [""] * 4


def test_each_prompt_is_answered_with_its_own_hook_settings(served: Plugin) -> None:
    proj = seed(served, "queue")
    served.prompt(proj, "warm", "Which database does the job queue use?")
    other = served.project("elsewhere")
    # REMEM_HOOK_TENANT in the hook's environment (not the service's) decides the project
    ctx, _ = served.prompt(other, "s-tenant", "Which database does the job queue use for claiming jobs?",
                           REMEM_HOOK_TENANT=str(proj.resolve()))
    assert "SKIP LOCKED" in ctx
    # and so does its deadline: past it nothing is injected, and the reason still reaches the hook's stderr
    ctx, proc = served.prompt(proj, "s-late", "how do workers claim jobs from the queue?",
                              REMEM_HOOK_RECALL_DEADLINE="0.001")
    assert ctx == "" and b"deadline" in proc.stderr


def test_session_start_after_a_compaction_gets_its_digest_from_the_service(served: Plugin) -> None:
    proj = seed(served, "queue")
    served.prompt(proj, "warm", "Which database does the job queue use?")
    proc = served.run("SessionStart", {"session_id": "c1", "cwd": str(proj), "source": "compact"},
                      args=["SessionStart"], cwd=proj)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "Postgres" in out["additionalContext"]


def test_a_session_start_wakes_the_service_so_the_first_prompt_is_served(served: Plugin) -> None:
    """No service yet (the day's first session): SessionStart starts it in the background, and the session's
    first prompt is then answered by it, not by a full hook of its own opening the store."""
    proj = served.project("queue")
    assert not (served.home / "store" / "service.json").exists()
    proc = served.run("SessionStart", {"session_id": "s1", "cwd": str(proj), "source": "startup"},
                      args=["SessionStart", "--background"], cwd=proj, env={"REMEM_HOOK_DETACH": "1"})
    assert proc.returncode == 0 and proc.stdout == b""
    deadline = time.monotonic() + 30
    while not (served.home / "store" / "service.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = service_pid(served)
    served.prompt(proj, "s1", "Which database does the job queue use?")
    deadline = time.monotonic() + 30
    while not (prompts := [line for line in served.log_lines() if line["event"] == "userpromptsubmit"]):
        assert time.monotonic() < deadline, served.log_lines()
        time.sleep(0.05)  # a hook logs after its answer
    assert [line["pid"] for line in prompts] == [pid]  # the service ran the prompt's hook


def test_without_a_usable_service_the_full_hook_runs_with_the_same_stdin(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "REMEM_HOME": str(tmp_path / "home"), "REMEM_SERVICE": "off"}
    echo = [sys.executable, "-c", "import sys; print('FULL ' + sys.argv[1] + ' ' + sys.stdin.read())", "UPS"]
    payload = b'{"prompt": "caf\xc3\xa9 \\"quoted\\""}'
    for extra in ({}, {"REMEM_SERVICE": "auto"}, {"REMEM_SERVICE": "auto", "REMEM_URL": "http://x:6333"}):
        proc = subprocess.run([sys.executable, "-I", "-S", str(FAST), "UserPromptSubmit", "--", *echo],
                              input=payload, capture_output=True, env={**env, **extra}, timeout=30)
        assert proc.returncode == 0 and proc.stdout == b"FULL UPS " + payload + b"\n", (extra, proc.stderr)


def test_a_service_that_cannot_serve_hooks_gets_the_full_hook_instead(tmp_path: Path) -> None:
    """A service from before the hook protocol answers with an error: nothing was done, so the full hook runs."""
    home = tmp_path / "home"
    folder = home / "store"
    folder.mkdir(parents=True, mode=0o700)
    path = service_paths(folder).socket
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    seen: list[bytes] = []

    def old_service() -> None:
        conn, _ = listener.accept()
        with conn:
            seen.append(conn.makefile("rb").readline())
            conn.sendall(dumps_line({"e": {"type": "RememError", "message": "the remem service has no method '_hook'"}}))

    t = threading.Thread(target=old_service)
    t.start()
    echo = [sys.executable, "-c", "import sys; print('FULL', sys.stdin.read())"]
    proc = subprocess.run([sys.executable, "-I", "-S", str(FAST), "UserPromptSubmit", "--", *echo],
                          input=b'{"prompt": "hello there"}', capture_output=True, timeout=30,
                          env={"PATH": os.environ["PATH"], "REMEM_HOME": str(home)})
    t.join(5)
    listener.close()
    assert proc.returncode == 0 and proc.stdout == b'FULL {"prompt": "hello there"}\n', proc.stderr
    request = json.loads(seen[0])
    assert request["m"] == "_hook" and request["k"]["payload"] == '{"prompt": "hello there"}'


def test_the_thin_client_finds_the_socket_where_the_service_listens(tmp_path: Path) -> None:
    short = tmp_path / "s"
    long = tmp_path / ("x" * 120)
    for folder, env in ((short, {"REMEM_PATH": str(short)}), (tmp_path / "h" / "store", {"REMEM_HOME": str(tmp_path / "h")}),
                        (long, {"REMEM_PATH": str(long), "XDG_RUNTIME_DIR": str(tmp_path / "run")})):
        saved = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR",)}
        os.environ.update({k: v for k, v in env.items() if k == "XDG_RUNTIME_DIR"})
        try:
            expected = service_paths(folder)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        assert fast.socket_path(env) == (str(expected.socket), expected.socket_elsewhere)


@pytest.mark.parametrize("text", ["", "plain", 'quotes " and \\ backslashes', "line\nbreaks\ttabs",
                                  "caf\u00e9 \u2603 \U0001f600", '{"r":{"stdout":"nested"}}'])
def test_requests_and_answers_cross_the_wire_intact(text: str) -> None:
    request = {"v": 1, "event": "UserPromptSubmit", "payload": text, "env": {"REMEM_X": text, "HOME": "/h"},
               "cwd": text, "age": 0.0123, "background": False}
    line = fast.request_line(request)
    assert line.endswith(b"\n") and json.loads(line) == {"m": "_hook", "a": [], "k": request}
    assert fast.parse_answer(dumps_line({"r": {"stdout": text}})) == {"stdout": text}
    assert fast.parse_answer(dumps_line({"r": {"stdout": text, "stderr": text}})) == {"stdout": text, "stderr": text}
    with pytest.raises(fast.NoService):
        fast.parse_answer(dumps_line({"e": {"type": "ValueError", "message": text}}))


def test_a_served_capture_redacts_with_the_hooks_own_redaction_settings(served: Plugin, tmp_path: Path) -> None:
    seed(served, "first")  # the service runs from here on, started without the setting below
    config = tmp_path / "team-redact.json"
    config.write_text(json.dumps({"patterns": {"acme_ticket": "ACME-[0-9]{6}"}}))
    proj = served.project("second")
    t = served.transcript("session1_decision.jsonl", proj, name="second.jsonl")
    with open(t, "a") as fh:
        fh.write(json.dumps({"type": "user", "uuid": "u-ticket", "message": {"role": "user", "content":
                             "Track the queue migration in ticket ACME-123456 and link it from the runbook."}}) + "\n")
    served.stop(proj, "second-s1", t, DECISION, REMEM_REDACT_CONFIG=str(config))
    records = stored(served, proj, "acme_ticket")
    assert any("[REDACTED:acme_ticket]" in r.text for r in records)
    assert not any("ACME-123456" in r.text for r in records)


def test_the_thin_client_sends_settings_but_no_credentials() -> None:
    env = {"REMEM_HOOK_RECALL_TOKENS": "900", "REMEM_HOME": "/h", "CLAUDE_PROJECT_DIR": "/p", "HOME": "/home/u",
           "REMEM_API_KEY": "sk-1", "REMEM_LLM_API_KEY": "sk-2", "CLAUDE_CODE_OAUTH_TOKEN": "oauth", "PATH": "/bin",
           "AWS_SECRET_ACCESS_KEY": "x"}
    assert fast.sent_env(env) == {"REMEM_HOOK_RECALL_TOKENS": "900", "REMEM_HOME": "/h",
                                  "CLAUDE_PROJECT_DIR": "/p", "HOME": "/home/u"}


def test_a_detached_full_hook_gets_a_payload_larger_than_a_pipe_intact(tmp_path: Path) -> None:
    out = tmp_path / "got.bin"
    payload = json.dumps({"prompt": "x" * 300_000}).encode()
    writer = [sys.executable, "-c", f"import sys; open({str(out)!r}, 'wb').write(sys.stdin.buffer.read())"]
    proc = subprocess.run([sys.executable, "-I", "-S", str(FAST), "Stop", "--background", "--", *writer],
                          input=payload, capture_output=True, timeout=30,
                          env={"PATH": os.environ["PATH"], "REMEM_SERVICE": "off"})
    assert proc.returncode == 0
    deadline = time.monotonic() + 30
    while not (out.exists() and out.stat().st_size == len(payload)):
        assert time.monotonic() < deadline, "the detached hook never got its stdin"
        time.sleep(0.05)
    assert out.read_bytes() == payload


def test_state_files_written_by_concurrent_hooks_in_one_process_stay_whole(tmp_path: Path) -> None:
    from remem.hooks.common import read_json, write_json

    path = tmp_path / "state.json"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(50):
            try:
                write_json(path, {"writer": n, "i": i, "shown": {"x": "y" * 200}})
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert read_json(path)["i"] == 49 and oct(path.stat().st_mode & 0o777) == oct(0o600)
