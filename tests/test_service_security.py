"""The local service against a local attacker: who may listen, who may connect, what crosses before either side
is sure, and what an unusable socket path does.

Real service processes and real sockets throughout. The cases that need another account (a listener or a client
running as a different uid) create one with ``useradd`` when the tests run as root, and are skipped otherwise.
"""

from __future__ import annotations

import json
import math
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from remem import Memory, Scope
from remem.core.service.client import ServiceSocketError, probe, service_paths, stop_service
from remem.core.service.listener import MAX_UNPROVEN
from remem.core.service.peer import HANDSHAKE_MAX, HANDSHAKE_TIMEOUT

from store_services import end_services

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX sockets, uids and signals")

S = Scope(tenant="acme")
PEER = "remem-peer"


@pytest.fixture
def svc_store(store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")
    path = store_factory("none")
    yield path
    try:
        stop_service(path, timeout=5, wait=False)
    except Exception:  # noqa: BLE001 - a test that broke the socket on purpose
        pass
    end_services(path)  # one its socket could not reach (another account's listener held the path)


def _remote(path: Path, **kw: object) -> Memory:
    return Memory(path=path, embedder="none", service="require", **kw)  # type: ignore[arg-type]


def _wait(pred: Callable[[], bool], timeout: float = 8.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


@pytest.fixture(scope="module")
def other_account() -> tuple[int, int]:
    """(uid, gid) of a second local account, created once with useradd (root only)."""
    if os.getuid() != 0:
        pytest.skip("needs root to create and switch to a second local account")
    try:
        pw = pwd.getpwnam(PEER)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("useradd is not available to create a second local account")
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PEER],
                              capture_output=True, text=True)
        if done.returncode != 0 and "already exists" not in done.stderr:
            pytest.skip(f"could not create a second local account: {done.stderr.strip()}")
        pw = pwd.getpwnam(PEER)
    return pw.pw_uid, pw.pw_gid


def _forked(body: Callable[[], bytes], ready: bool = False) -> tuple[int, int]:
    """Run ``body`` in a forked child; returns (pid, read end of a pipe carrying b'R' when ready, then its
    result). The child never returns into pytest."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(r)
            out = body()
            os.write(w, b"R" + out)
        except BaseException as exc:  # noqa: BLE001
            os.write(w, b"E" + repr(exc).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _collect(pid: int, fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    os.waitpid(pid, 0)
    assert data[:1] == b"R", data
    return data[1:]


def _become(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


# ---------------------------------------------------------------------------------------------- Unix socket
def test_client_refuses_a_listener_of_another_account(svc_store: Path, other_account: tuple[int, int]) -> None:
    """Another account's process listens where the service should (the attack of finding 4): nothing is sent."""
    sock_path = service_paths(svc_store).socket
    fake = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fake.bind(str(sock_path))

    def listener() -> bytes:
        _become(*other_account)
        fake.listen(4)  # the kernel records the listener's credentials now: the other account's
        fake.settimeout(10)
        conn, _ = fake.accept()
        conn.settimeout(1.0)
        got = b""
        try:
            while chunk := conn.recv(65536):
                got += chunk
        except OSError:
            pass
        return got

    pid, fd = _forked(listener)
    fake.close()
    with pytest.raises(ServiceSocketError, match=f"served by uid {other_account[0]}"):
        _remote(svc_store).add("the vault code is 4471", scope=S)
    assert _collect(pid, fd) == b""  # it was connected to, and received not one byte


def test_service_refuses_a_client_of_another_account(svc_store: Path, other_account: tuple[int, int]) -> None:
    mem = _remote(svc_store)
    mem.add("only for the owner: the vault code is 4471", scope=S)
    paths = service_paths(svc_store)
    # as if the socket had been left reachable (a hard link in a shared folder, mode 0777): only the peer check
    # remains between the other account and the memories
    shared = Path(tempfile.mkdtemp(prefix="remem-shared-", dir="/tmp"))
    os.chmod(shared, 0o711)
    os.link(paths.socket, shared / "s.sock")
    os.chmod(paths.socket, 0o777)
    try:
        def intruder() -> bytes:
            _become(*other_account)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(str(shared / "s.sock"))
            got = b""
            try:
                s.sendall(json.dumps({"m": "list", "a": [], "k": {"scope": {"tenant": "acme"}}}).encode() + b"\n")
                while chunk := s.recv(65536):
                    got += chunk
            except (BrokenPipeError, ConnectionResetError):  # closed before or with our request unread
                pass
            return got

        pid, fd = _forked(intruder)
        assert _collect(pid, fd) == b""  # connected, and closed without an answer
    finally:
        os.chmod(paths.socket, 0o600)
        shutil.rmtree(shared)
    assert "vault code" in mem.list(scope=S)[0].text  # and the owner is still served


def _long_store(tmp_path: Path, store_factory: Callable[..., Path]) -> Path:
    """A store whose socket path is too long for AF_UNIX, so the socket moves to the fallback folder."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    store = deep / "store"
    shutil.move(str(store_factory("none")), store)
    assert service_paths(store).socket_elsewhere
    return store


def test_fallback_socket_folder_must_be_ours_and_private(tmp_path: Path, store_factory: Callable[..., Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    store = _long_store(tmp_path, store_factory)
    runtime = tmp_path / "run"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")
    try:
        runtime.mkdir(mode=0o755)
        os.chmod(runtime, 0o755)
        with pytest.raises(ServiceSocketError, match="open to other accounts"):
            _remote(store)
        os.chmod(runtime, 0o700)
        if os.getuid() == 0:  # a folder of another uid (no account needed to own a folder)
            os.chown(runtime, 4242, 4242)
            with pytest.raises(ServiceSocketError, match="belongs to uid 4242"):
                _remote(store)
            os.chown(runtime, 0, 0)
        runtime.rmdir()
        real = tmp_path / "real-run"
        real.mkdir(mode=0o700)
        runtime.symlink_to(real)
        with pytest.raises(ServiceSocketError, match="symbolic link"):
            _remote(store)
        runtime.unlink()
        # absent: the service creates it, 0700, and serves from it
        mem = _remote(store)
        assert mem.remote and mem.add("deep store", scope=S).text == "deep store"
        st = os.lstat(runtime)
        assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
        assert stat.S_ISSOCK(os.lstat(service_paths(store).socket).st_mode)
    finally:
        stop_service(store, timeout=5)


def test_without_a_runtime_folder_a_long_stores_socket_goes_to_the_users_home(
        tmp_path: Path, store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Not /tmp/remem-<uid>, which any account can create first (and so deny the service)."""
    store = _long_store(tmp_path, store_factory)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")
    try:
        assert service_paths(store).socket.parent == tmp_path / "home" / ".remem-run"
        mem = _remote(store)
        assert mem.remote and mem.add("deep store", scope=S).text == "deep store"
        assert stat.S_IMODE(os.lstat(tmp_path / "home" / ".remem-run").st_mode) == 0o700
    finally:
        stop_service(store, timeout=5)


def test_fallback_socket_folder_planted_by_another_account_is_refused(
        tmp_path: Path, store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
        other_account: tuple[int, int]) -> None:
    """/tmp/remem-<uid> made first by someone else, with their listener inside: refused before connecting."""
    store = _long_store(tmp_path, store_factory)
    runtime = tmp_path / "planted"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    runtime.mkdir(mode=0o700)
    os.chown(runtime, *other_account)
    fake = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fake.bind(str(service_paths(store).socket))
    fake.listen(1)
    try:
        with pytest.raises(ServiceSocketError, match=f"belongs to uid {other_account[0]}"):
            _remote(store).add("never sent", scope=S)
        fake.settimeout(0.2)
        with pytest.raises(socket.timeout):
            fake.accept()  # nobody even connected
    finally:
        fake.close()


@pytest.mark.parametrize("kind", ["folder with a file", "empty folder", "plain file"])
def test_a_socket_path_that_is_not_a_socket(svc_store: Path, kind: str) -> None:
    """Finding 7: every client used to fall back to an exclusive in-process store. Now debris of ours is
    replaced, and what might be someone's data is reported, with nothing deleted and no silent fallback."""
    sock_path = service_paths(svc_store).socket
    if kind == "plain file":
        sock_path.write_text("leftover")
    else:
        sock_path.mkdir()
        if kind == "folder with a file":
            (sock_path / "notes.txt").write_text("keep me")
    if kind == "folder with a file":
        with pytest.raises(ServiceSocketError, match="is a folder with files in it"):
            Memory(path=svc_store, embedder="none", service="auto")
        assert (sock_path / "notes.txt").read_text() == "keep me"
        assert probe(svc_store) is None
        return
    mem = Memory(path=svc_store, embedder="none", service="auto")
    assert mem.remote  # served by the service, not opened in-process
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    assert Memory(path=svc_store, embedder="none", service="require").add("shared", scope=S).text == "shared"


# ---------------------------------------------------------------------------------------------- TCP fallback
class Recorder:
    """A plain TCP listener that took a port: records every byte any client sends and answers like an impostor
    would (a made-up handshake reply)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(1.0)
            got = b""
            try:
                got += conn.recv(65536)
                conn.sendall(json.dumps({"nonce": "00" * 16, "proof": "ab" * 32}).encode() + b"\n")
                while chunk := conn.recv(65536):
                    got += chunk
            except OSError:
                pass
            finally:
                conn.close()
            self.received.append(got)

    def close(self) -> None:
        self.sock.close()
        self.thread.join(2)


def test_stale_tcp_port_taken_by_another_process_receives_no_secret(svc_store: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 5: kill -9 leaves service.json pointing at a port someone else then takes."""
    monkeypatch.setenv("REMEM_SERVICE_TRANSPORT", "tcp")
    mem = _remote(svc_store)
    mem.add("warm up", scope=S)
    paths = service_paths(svc_store)
    state = json.loads(paths.state.read_text())
    os.kill(state["pid"], signal.SIGKILL)
    assert _wait(lambda: _gone(state["pid"]))
    recorder = Recorder(state["port"])
    try:
        rec = mem.add("the vault code is 4471", scope=S)  # the impostor fails the handshake: a new service
        assert mem.get(rec.id, scope=S).text == "the vault code is 4471"
    finally:
        recorder.close()
    assert recorder.received, "the client never tried the stale port"
    for got in recorder.received:
        assert state["secret"].encode() not in got and b"vault" not in got and b'"m"' not in got
        assert len(got) < 200  # a hello with a nonce, nothing else
    new_state = json.loads(paths.state.read_text())
    assert new_state["pid"] != state["pid"] and new_state["port"] != state["port"]


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_tcp_service_reads_only_a_few_kb_before_authentication(svc_store: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_SERVICE_TRANSPORT", "tcp")
    mem = _remote(svc_store)
    rec = mem.add("over loopback tcp", scope=S)
    state = json.loads(service_paths(svc_store).state.read_text())
    for opening in (b"x" * (HANDSHAKE_MAX + 1),  # an endless first line
                    json.dumps({"remem": 1, "nonce": "ab" * 16}).encode() + b"\n" + b"y" * (HANDSHAKE_MAX + 1)):
        with socket.create_connection(("127.0.0.1", state["port"]), timeout=5) as s:
            s.sendall(opening)
            got = b""
            try:
                while chunk := s.recv(65536):
                    got += chunk
            except ConnectionResetError:
                pass
        assert b"over loopback" not in got and b'"r"' not in got  # closed after a handshake line at most
    # a client that knows the port but not the secret: the service's proof is useless to it, its own is refused
    with socket.create_connection(("127.0.0.1", state["port"]), timeout=5) as s:
        s.sendall(json.dumps({"remem": 1, "nonce": "cd" * 16}).encode() + b"\n")
        reply = json.loads(s.makefile("rb").readline())
        assert set(reply) == {"nonce", "proof"} and state["secret"] not in json.dumps(reply)
        s.sendall(json.dumps({"proof": "00" * 32}).encode() + b"\n"
                  + json.dumps({"m": "forget", "a": [rec.id], "k": {}}).encode() + b"\n")
        answer = json.loads(s.makefile("rb").readline())
    assert answer["e"]["type"] == "PermissionError"
    assert mem.get(rec.id, scope=S).text == "over loopback tcp"  # the request after the bad proof never ran


def test_a_tcp_peer_trickling_its_handshake_is_cut_off_and_the_owner_still_gets_in(
        svc_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole handshake has HANDSHAKE_TIMEOUT, not each read (a byte every few seconds held a thread and a
    file descriptor for good), and only so many peers may be in it at once."""
    monkeypatch.setenv("REMEM_SERVICE_TRANSPORT", "tcp")
    mem = _remote(svc_store)
    mem.add("over loopback tcp", scope=S)
    port = json.loads(service_paths(svc_store).state.read_text())["port"]
    slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(40)]
    try:
        t0, cut = time.monotonic(), False
        while time.monotonic() - t0 < 3 * HANDSHAKE_TIMEOUT and not cut:
            try:
                slow[0].sendall(b" ")
                slow[0].settimeout(0.5)
                cut = slow[0].recv(1) == b""  # the service shut it
            except socket.timeout:
                pass
            except OSError:
                cut = True
        assert cut, "a peer that never finishes its handshake keeps its connection"
        assert [h.record.text for h in mem.search("loopback", scope=S)] == ["over loopback tcp"]
    finally:
        for c in slow:
            c.close()


async def test_the_async_client_runs_the_same_handshake(svc_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem import AsyncMemory

    monkeypatch.setenv("REMEM_SERVICE_TRANSPORT", "tcp")
    amem = AsyncMemory(path=svc_store, embedder="none", service="require")
    rec = await amem.add("async over loopback tcp", scope=S)
    assert (await amem.get(rec.id, scope=S)).text == "async over loopback tcp"
    await amem.close()


# ---------------------------------------------------------------------------------------------- bad values
def test_bad_values_at_the_service_boundary_are_clear_errors(svc_store: Path) -> None:
    mem = _remote(svc_store)
    mem.add("a fact from 2024", scope=S)
    with pytest.raises(ValueError, match="not a time remem can use"):
        mem.search("fact", scope=S, as_of=1e18)
    with pytest.raises(ValueError, match="not a time remem can use"):
        mem.list(scope=S, since=-1e300)
    with pytest.raises(ValueError, match="numbers must be finite"):
        mem.add("nan metadata", scope=S, metadata={"score": math.nan})
    # a hand-written request carrying NaN (which Python's json reads happily) is refused the same way
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(str(service_paths(svc_store).socket))
        s.sendall(b'{"m":"add","a":["raw nan"],"k":{"scope":{"tenant":"acme"},"metadata":{"x":NaN}}}\n')
        answer = json.loads(s.makefile("rb").readline())
    assert answer["e"]["type"] == "ValueError" and "finite" in answer["e"]["message"]
    assert [r.text for r in mem.list(scope=S)] == ["a fact from 2024"]


def test_peers_holding_their_handshake_open_do_not_keep_the_owner_out(svc_store: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Another local account can open loopback connections and send nothing: with more of them than the service
    lets be in their handshake at once, the owner's client still gets in, before any of them times out (the
    one waiting longest is cut off to make room)."""
    monkeypatch.setenv("REMEM_SERVICE_TRANSPORT", "tcp")
    mem = _remote(svc_store)
    mem.add("over loopback tcp", scope=S)
    port = json.loads(service_paths(svc_store).state.read_text())["port"]
    silent = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2 * MAX_UNPROVEN)]
    try:
        time.sleep(0.2)  # the service has taken them all in
        fresh = _remote(svc_store)  # a new client: a new connection and handshake
        assert [h.record.text for h in fresh.search("loopback", scope=S)] == ["over loopback tcp"]
        held = 0
        for c in silent[-MAX_UNPROVEN // 2:]:  # the newest are still waiting: no timeout let the owner in
            c.settimeout(0.05)
            try:
                held += c.recv(1) != b""
            except socket.timeout:
                held += 1
            except OSError:
                pass
        assert held > 0
        fresh.close()
    finally:
        for c in silent:
            c.close()
