"""Nothing a hook meets may stall Claude Code or the service behind it: a transcript path naming a FIFO, a
capture stuck in flight when the service stops, a hung (stopped) service. Each case also checks that the turn is
still captured. Driven through the plugin's launcher like test_hooks_served.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from pathlib import Path

import pytest

from remem.core.service.client import stop_service
from remem.core.service.lifecycle import pid_alive
from remem.hooks.common import safe_name
from test_hooks import DECISION, Plugin
from test_hooks_served import seed, served, service_pid, stored  # noqa: F401 - the fixture

NOTE = "Decision: the nightly export moves to 02:30 UTC because the backup window ends at 02:00."


def _free_fifo(path: Path) -> None:
    """Let a reader blocked opening ``path`` go (only the old code ever blocks there)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_transcript_path_naming_a_fifo_keeps_the_final_answer_and_blocks_nothing(served: Plugin) -> None:
    seed(served, "first")
    proj = served.project("fifo")
    fifo = served.tmp / "transcript.fifo"
    os.mkfifo(fifo)
    try:
        assert served.stop(proj, "s-fifo", fifo, NOTE).returncode == 0
        assert any("02:30 UTC" in r.text for r in stored(served, proj, "02:30 UTC"))  # what the payload held
        # the session's next Stop is not queued behind a read that never ends
        t = served.transcript("session1_decision.jsonl", proj, name="fifo.jsonl")
        assert served.stop(proj, "s-fifo", t, DECISION).returncode == 0
        assert any("SKIP LOCKED" in r.text for r in stored(served, proj, "SKIP LOCKED"))
        pid = service_pid(served)
        stop_service(served.home / "store", wait=False)
        assert _gone(pid, 20), "the service did not exit"
    finally:
        _free_fifo(fifo)


def test_a_stopping_service_frees_the_store_from_a_capture_stuck_in_flight(served: Plugin) -> None:
    seed(served, "first")
    pid = service_pid(served)
    proj = served.project("stuck")
    t = served.transcript("session1_decision.jsonl", proj, name="stuck.jsonl")
    folder = served.home / "hooks" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{safe_name('s-stuck')}.lock", "a+") as held:  # another capture of the session hangs
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert served.stop(proj, "s-stuck", t, DECISION).returncode == 0
        stop_service(served.home / "store", wait=False)
        # it waits a while for the capture, then closes the store and exits (it used to wait forever)
        assert _gone(pid, 25), "the service never exited: the store stays locked"
    assert served.memories(proj) == []  # the store opens in-process again
    assert served.stop(proj, "s-stuck", t, DECISION).returncode == 0  # the turn waited in the transcript
    assert any("SKIP LOCKED" in r.text for r in stored(served, proj, "SKIP LOCKED"))


def test_a_hung_service_holds_no_capture_hook_and_loses_no_capture(served: Plugin) -> None:
    seed(served, "first")
    pid = service_pid(served)
    proj = served.project("hung")
    t = served.transcript("session1_decision.jsonl", proj, name="hung.jsonl")
    detached = {"REMEM_HOOK_DETACH": "1"}
    took: dict[str, float] = {}
    os.kill(pid, signal.SIGSTOP)
    try:
        for event, extra in (("Stop", {"last_assistant_message": DECISION}), ("PreCompact", {"trigger": "auto"}),
                             ("SessionEnd", {"reason": "exit"})):
            start = time.monotonic()
            proc = served.run(event, {"session_id": "s-hung", "transcript_path": str(t), "cwd": str(proj), **extra},
                              env=detached)
            took[event] = time.monotonic() - start
            assert proc.returncode == 0
        start = time.monotonic()
        served.run("SessionStart", {"session_id": "s-hung", "cwd": str(proj), "source": "compact"},
                   env={"REMEM_HOOK_DIGEST_DEADLINE": "0.5"})
        took["SessionStart compact"] = time.monotonic() - start
    finally:
        os.kill(pid, signal.SIGCONT)
    # each used to wait 5 s for the service (SessionEnd's hook timeout is 2 s: Claude Code killed it first)
    assert all(s < 2.5 for s in took.values()), took
    deadline = time.monotonic() + 60
    while not any("SKIP LOCKED" in r.text for r in served.memories(proj, "auto")):
        assert time.monotonic() < deadline, f"the capture was lost: {json.dumps(served.spool())[:300]}"
        served.run("drain", {}, args=["drain"])  # what the session's next capture does
        time.sleep(0.5)


def test_a_store_another_process_has_open_costs_a_prompt_the_normal_deadline_not_the_cold_one(
        served: Plugin) -> None:
    """Review: with the store open in another process (Memory(service="off")), no service could ever start, yet
    every prompt waited the cold deadline (4 s) for one."""
    import subprocess
    import sys

    proj = seed(served, "first")
    stop_service(served.home / "store", wait=True)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom remem import Memory\n"
                               "m = Memory(path=sys.argv[1], embedder='none', service='off')\n"
                               "print('ready', flush=True)\ntime.sleep(60)", str(served.home / "store")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        started = time.monotonic()
        text, proc = served.prompt(proj, "s-held", "which queue library did we pick?",  # the shipped deadlines
                                   REMEM_HOOK_RECALL_DEADLINE="0.95", REMEM_HOOK_COLD_DEADLINE="4")
        assert time.monotonic() - started < 3.0, proc.stderr  # the cold deadline alone is 4 s
        assert text == ""  # nothing recalled: the store is someone else's right now, and the prompt goes on
        started = time.monotonic()  # /remem:memory says why at once (it retried for about 10 s first)
        cmd = served.run("memory", {}, args=["memory", "search", "queue library"], cwd=proj)
        said = cmd.stderr.decode()
        assert cmd.returncode == 1 and "open in another process" in said and "Traceback" not in said, said
        assert time.monotonic() - started < 5.0
    finally:
        holder.kill()
        holder.wait()


def test_only_a_live_holder_that_is_no_service_counts_as_holding_the_store(
        served: Plugin, monkeypatch: "pytest.MonkeyPatch") -> None:
    """Review: a pid left in remem.lock by a process that had closed the store, or a service still starting,
    made a hook skip the cold deadline the first prompt needs."""
    import subprocess
    import sys

    from remem.hooks.common import store_held_elsewhere

    monkeypatch.setenv("REMEM_HOME", str(served.home))
    seed(served, "first")
    assert store_held_elsewhere() is False  # the service has it
    stop_service(served.home / "store", wait=True)
    code = ("import sys, time\nfrom remem import Memory\n"
            "m = Memory(path=sys.argv[1], embedder='none', service='off')\n"
            "if sys.argv[2] == 'close':\n    m.close()\nprint('ready', flush=True)\ntime.sleep(60)")
    for mode, held in (("close", False), ("hold", True)):
        proc = subprocess.Popen([sys.executable, "-c", code, str(served.home / "store"), mode],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            assert store_held_elsewhere() is held, mode
        finally:
            proc.kill()
            proc.wait()
