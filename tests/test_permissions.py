"""Nothing remem writes is readable by another local account: folders 0700, files 0600, whatever the umask.

Checked by ``stat`` on what real runs leave behind (tests/written.py lists it). Every test starts from the
permissive umask most systems use (022), so a pass means remem set the modes, not the environment.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from remem import Memory, Scope
from remem.core.doctor import diagnose
from remem.core.service.client import service_paths, stop_service
from written import data_of, every_file, every_path, open_to_others

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "remem-hook"
TRANSCRIPT = Path(__file__).parent / "fixtures" / "transcripts" / "session1_decision.jsonl"
S = Scope(tenant="acme")


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_store_opened_in_process_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    store = tmp_path / "nested" / "deeper" / "store"
    with Memory(path=store, embedder="none", service="off") as mem:
        mem.add("the staging password rotates monthly", scope=S)
        folders = [p for p in every_path(tmp_path / "nested") if p.is_dir()]
        assert folders and all(_mode(p) == 0o700 for p in folders), open_to_others(folders)
        assert _mode(store / "remem.json") == 0o600
        assert any(p.parent.name == "wal" for p in every_file(store))
    assert open_to_others(every_path(tmp_path / "nested")) == []  # the WAL and segments too


def test_looser_modes_of_an_existing_home_are_repaired_on_open_and_reported_by_doctor(
        tmp_path: Path, store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    template = store_factory("none")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("REMEM_HOME", str(home))
    store = home / "store"
    os.rename(template, store)
    (home / "hooks" / "sessions").mkdir(parents=True)
    (home / "hooks" / "sessions" / "s1.json").write_text("{}")
    (home / "logs").mkdir()
    (home / "logs" / "hooks.log").write_text("{}\n")
    mine = home / "notes.txt"  # the user's own file in REMEM_HOME: not remem's to change
    mine.write_text("mine")
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    (store / "link").symlink_to(outside)  # never followed
    for path in every_path(home) + [outside]:
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    foreign = store / "foreign.txt"
    if os.getuid() == 0:  # something another account owns is left alone
        foreign.write_text("theirs")
        os.chmod(foreign, 0o644)
        os.chown(foreign, 4242, 4242)
    before = open_to_others(every_path(home))
    report = diagnose(path=store, embedder="none")["permissions"]
    assert f"{len(before) - (1 if foreign.exists() else 0) - 1} path(s) readable by other accounts" in report
    assert open_to_others(every_path(home)) == before  # doctor changes nothing

    Memory(path=store, embedder="none", service="off").close()
    left = open_to_others(every_path(home))
    expected = {f"0644 {mine}"} | ({f"0644 {foreign}"} if foreign.exists() else set())
    assert set(left) == expected
    assert _mode(outside) == 0o644 and _mode(home) == 0o700
    assert diagnose(path=store, embedder="none")["permissions"].startswith("private")


# ---------------------------------------------------------------------------------------------- a full run
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hook(env: dict[str, str], event: str, payload: dict[str, Any], cwd: Path) -> None:
    import json

    done = subprocess.run([str(LAUNCHER), event], input=json.dumps({**payload, "hook_event_name": event}).encode(),
                          capture_output=True, env=env, cwd=str(cwd), timeout=120)
    assert done.returncode == 0, done.stderr


async def _mcp_over_http(env: dict[str, str], home: Path) -> None:
    import httpx
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem.cli", "mcp", "--http", "--port", str(port),
                             "--embedder", "none", "--tenant", "acme"], env=env, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, "the MCP server did not start"
                time.sleep(0.1)
        token = (home / "mcp-token").read_text().strip()
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with Client(streamable_http_client(url, http_client=http)) as c:
            r = await c.call_tool("memory_save", {"text": "The acme VPN key is vpn-key-7781", "kind": "fact"})
            assert not r.is_error, r.content[0].text
            r = await c.call_tool("memory_search", {"query": "acme VPN key"})
            assert "vpn-key-7781" in r.content[0].text
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_full_run_leaves_nothing_other_accounts_can_read(tmp_path: Path, srv: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Service, MCP over HTTP, hooks, export, backup and the pending queue with the LLM down, in one home: no
    file readable by other accounts, and none of the secrets fed in anywhere on disk (WAL and segments too)."""
    gh = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    aws_id, aws_secret = "AKIA" + "QX7DL2PZ4MNB6TRW", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ZuR3xKp9Lm"
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9."
           + "Yb9s0Kx2Lm3Nq4Rt5Uv6Wx7Yz8Ab9Cd0Ef1Gh2Ij3Kl")
    db_pass = "Sup3rS3cretPw9"
    secrets_fed = [gh, aws_id, aws_secret, jwt, db_pass]
    home, exports, project = tmp_path / "home", tmp_path / "exports", tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env_vars = {"REMEM_HOME": str(home), "REMEM_SERVICE": "auto", "REMEM_EMBEDDER": "none",
                "REMEM_SERVICE_IDLE": "60", "REMEM_LLM_MODEL": "test-mini", "REMEM_LLM_BASE_URL": srv.base_url,
                "REMEM_LLM_API_KEY": "test-key", "REMEM_PENDING_RETRY": "3600", "REMEM_HOOK_DRAIN": "inline",
                "REMEM_PYTHON": sys.executable, "REMEM_HOOK_RECALL_DEADLINE": "30"}
    for key, value in env_vars.items():
        monkeypatch.setenv(key, value)
    for key in ("REMEM_PATH", "REMEM_URL", "REMEM_MCP_TOKENS", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(key, raising=False)
    env = dict(os.environ)
    srv.fail("chat", status=429, code="insufficient_quota", times=100)  # the LLM is down for the whole run
    store = home / "store"
    try:
        mem = Memory(embedder="none", service="require")  # the service creates the store from scratch
        mem.add(f"The acme deploy token lives in the vault; it is {gh}", scope=S)
        res = mem.remember([{"role": "user", "content": f"We moved the nightly export to 03:00 UTC. The export "
                                                        f"bucket key is {aws_id} / {aws_secret}"},
                            {"role": "assistant", "content": "Noted: the export runs at 03:00 UTC."}],
                           scope=S, session="outage-1")
        assert res.queued
        exports.mkdir(mode=0o700)  # an export goes into a folder that exists (a mistyped one is an error)
        assert mem.export(exports / "all.jsonl", scope=S) >= 1
        backup = mem.backup()
        transcript = tmp_path / "t.jsonl"
        transcript.write_text(TRANSCRIPT.read_text().replace("__PROJECT__", str(project)))
        _hook(env, "Stop", {"session_id": "sess-1", "transcript_path": str(transcript), "cwd": str(project),
                            "permission_mode": "default", "stop_hook_active": False,
                            "last_assistant_message": f"Decision: jobs are claimed with SKIP LOCKED. Session "
                                                      f"token {jwt}"}, project)
        _hook(env, "UserPromptSubmit", {"session_id": "sess-2", "transcript_path": str(transcript),
                                        "cwd": str(project), "permission_mode": "default",
                                        "prompt": "How do workers claim jobs from the queue? The DB is "
                                                  f"postgres://app:{db_pass}@db.internal:5432/jobs"}, project)
        await _mcp_over_http(env, home)
        paths = service_paths(store)
        running = every_path(home, exports)
        assert paths.socket in running and paths.state in running and paths.log in running
        assert open_to_others(running) == []
        assert diagnose(embedder="none")["permissions"].startswith("private")
    finally:
        stop_service(store, timeout=10)
    written = every_path(home, exports)
    names = {p.relative_to(tmp_path).parts[:3] for p in written}
    for expected in (("home", "hooks", "sessions"), ("home", "hooks", "last_recall"), ("home", "logs", "hooks.log"),
                     ("home", "store", "pending"), ("home", "store", "shard"), ("home", "mcp-token"),
                     ("exports", "all.jsonl")):
        assert expected in names, (expected, sorted(names))
    assert backup in written and any(p.parent.name == "pending" and p.suffix == ".json" for p in written)
    assert open_to_others(written) == []
    # the secrets did reach these files, redacted: the test would see them if redaction missed one
    assert b"[REDACTED:" in (exports / "all.jsonl").read_bytes()
    assert any(b"[REDACTED:" in p.read_bytes() for p in written if p.parent.name == "pending" and p.suffix == ".json")
    for path in written:
        if path.is_file() and not path.is_symlink():
            data = data_of(path)
            if path.suffix == ".gz":
                import gzip

                data += gzip.decompress(path.read_bytes())
            leaked = [s for s in secrets_fed if s.encode() in data]
            assert not leaked, (path, [s[:6] for s in leaked])


def test_an_export_writes_a_file_no_one_else_could_plant(mem: Memory, tmp_path: Path) -> None:
    """An export to a shared folder: a file or symlink planted where a predictable temporary name would be is
    never written through; the export is a new 0600 file renamed into place, and a missing folder is an error."""
    mem.add("the deploy key rotates on Mondays", scope=Scope(tenant="acme"))
    shared = tmp_path / "shared"
    shared.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (shared / "all.jsonl.part").symlink_to(victim)
    assert mem.export(shared / "all.jsonl", scope=Scope(tenant="acme")) == 1
    assert victim.read_text() == "untouched"
    assert stat.S_IMODE((shared / "all.jsonl").stat().st_mode) == 0o600
    assert sorted(p.name for p in shared.iterdir()) == ["all.jsonl", "all.jsonl.part"]  # no temporary left
    with pytest.raises(FileNotFoundError, match="create it first"):
        mem.export(tmp_path / "no-such-folder" / "all.jsonl", scope=Scope(tenant="acme"))
    assert not (tmp_path / "no-such-folder").exists()


def test_remems_own_files_are_never_opened_through_a_symlink(tmp_path: Path) -> None:
    from remem.core.config import private_opener

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (tmp_path / "log").symlink_to(victim)
    with pytest.raises(OSError):
        open(tmp_path / "log", "a", opener=private_opener)
    assert victim.read_text() == "untouched"


def test_a_script_that_ends_without_close_leaves_no_store_file_open_to_others(tmp_path: Path) -> None:
    """Under umask 022, Qdrant Edge writes its last files as the shard is dropped at interpreter exit: the store
    closes itself first, so they are private too."""
    script = ("import os; os.umask(0o022)\nfrom remem import Memory, Scope\nmem = Memory(service='off')\n"
              "mem.add('we deploy on Fridays', scope=Scope(tenant='acme'))\nraise SystemExit('no close()')\n")
    env = {**os.environ, "REMEM_HOME": str(tmp_path / "home"), "REMEM_EMBEDDER": "none"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no close()" in done.stderr
    assert open_to_others(every_path(tmp_path / "home")) == []


def test_a_state_write_that_fails_leaves_the_old_file_whole_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.core.config import write_private

    state = tmp_path / "state.json"
    write_private(state, '{"n": 1}')
    assert state.read_text() == '{"n": 1}' and stat.S_IMODE(state.stat().st_mode) == 0o600

    def full_disk(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        write_private(state, '{"n": 2}', durable=True)
    assert state.read_text() == '{"n": 1}' and [p.name for p in tmp_path.iterdir()] == ["state.json"]


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="another account's files: chown needs root")


@needs_root
def test_a_store_folder_or_file_another_account_owns_is_refused_not_used(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: a REMEM_HOME another account prepared was used as it was, its planted 0666 log appended to."""
    from remem.core.config import private_opener

    home = tmp_path / "shared-remem"
    (home / "store").mkdir(parents=True)
    os.chown(home / "store", 4242, 4242)
    monkeypatch.setenv("REMEM_HOME", str(home))
    with pytest.raises(PermissionError, match="belongs to uid 4242"):
        Memory(path=home / "store", embedder="none", service="off")
    assert list((home / "store").iterdir()) == []
    assert "refused" in diagnose(home / "store")["permissions"]  # `remem doctor` says why, too
    planted = tmp_path / "service.log"
    planted.write_text("")
    os.chown(planted, 4242, 4242)
    with pytest.raises(PermissionError, match="another account's file"):
        open(planted, "a", opener=private_opener)


@needs_root
def test_a_redaction_config_another_account_wrote_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An allow-list turns redaction off: one another account wrote must not be obeyed."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("REMEM_HOME", str(home))
    config = tmp_path / "redact.json"
    config.write_text(json.dumps({"allow": ["[\\s\\S]+"]}))
    os.chown(config, 4242, 4242)
    monkeypatch.setenv("REMEM_REDACT_CONFIG", str(config))
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    with Memory(path=home / "store", embedder="none", service="off") as mem:
        with pytest.raises(PermissionError, match="redaction rules another account"):
            mem.add(f"the key is {key}", scope=S)
        assert mem.count(scope=S) == 0
        os.chown(config, os.getuid(), os.getgid())
        mem.add("the deploy runs at six", scope=S)
        assert mem.count(scope=S) == 1  # the user's own config is taken as before


@needs_root
def test_a_service_state_file_another_account_planted_is_not_trusted(tmp_path: Path) -> None:
    """Review: over TCP, a service.json another account wrote sent our unredacted requests to its listener."""
    from remem.core.service.paths import read_state

    paths = service_paths(tmp_path / "store")
    paths.folder.mkdir(mode=0o700)
    paths.state.write_text(json.dumps({"transport": "tcp", "port": 1, "secret": "theirs"}))
    os.chmod(paths.state, 0o600)
    assert read_state(paths) == {"transport": "tcp", "port": 1, "secret": "theirs"}  # ours: read
    os.chown(paths.state, 4242, 4242)
    assert read_state(paths) is None
    os.chown(paths.state, os.getuid(), os.getgid())
    os.chmod(paths.state, 0o666)  # others could have written it
    assert read_state(paths) is None
