"""A full disk is a clear error, never a dead process: Qdrant Edge maps its files, and a page written into one of
their holes on a disk with no room left kills the process with SIGBUS (the agent, when the store is open in it).
Writes are refused while the disk has less room than the shard's holes plus a margin, and nothing is lost."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from remem import DiskFullError, Memory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and mounts")

SCOPE = {"tenant": "acme", "user": "alice"}


def test_writes_with_no_room_are_refused_clearly_and_resume_when_there_is_room(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(path=tmp_path / "store", embedder="none", service="off") as mem:
        kept = mem.add("the staging database is Postgres 16", scope=SCOPE)
        monkeypatch.setattr("remem.core.store.backends.disk_room.MIN_FREE", 2**62)  # more than any disk has
        with pytest.raises(DiskFullError, match="MB are free on the disk.*writing to the store"):
            mem.add("deploys go out on Tuesdays", scope=SCOPE)
        with pytest.raises(DiskFullError, match="deleting from the store"):
            mem.forget(kept.id, scope=SCOPE)
        with pytest.raises(DiskFullError, match="compacting the store"):
            mem.compact()
        assert [h.record.text for h in mem.search("staging database", scope=SCOPE)] == [kept.text]  # reads go on
        monkeypatch.setenv("REMEM_MIN_FREE_MB", "0")  # the check turned off
        mem.add("deploys go out on Tuesdays", scope=SCOPE)
        monkeypatch.undo()
        mem.add("the on-call rota is in PagerDuty", scope=SCOPE)
        assert mem.count(scope=SCOPE) == 3


def test_add_many_refused_midway_says_how_many_it_stored_and_a_retry_stores_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.core.store.backends.disk_room import DiskRoom

    real, writes = DiskRoom.check, []

    def filling(self: DiskRoom, doing: str, **kw: object) -> None:  # the disk fills after the third write
        if doing == "writing to":
            writes.append(doing)
            if len(writes) > 3:
                raise DiskFullError("0 MB are free on the disk for writing to the store")
        real(self, doing, **kw)

    items = [{"text": f"fact {i}: the orders service runs in region {i}"} for i in range(6)]
    with Memory(path=tmp_path / "store", embedder="none", service="off") as mem:
        monkeypatch.setattr(DiskRoom, "check", filling)
        with pytest.raises(DiskFullError, match=r"of 6 items were stored as new memories before it") as refused:
            mem.add_many(items, scope=SCOPE)
        monkeypatch.undo()
        stored = int(str(refused.value).split(" of 6 items")[0].rsplit("(", 1)[1])
        assert 0 < stored < 6 and mem.count(scope=SCOPE) == stored  # what it says is what is there
        mem.add_many(items, scope=SCOPE)  # the same call again, once there is room: the first three are found
        assert sorted(r.text for r in mem.list(scope=SCOPE)) == sorted(i["text"] for i in items)


CHAT = [{"role": "user", "content": "Our orders service runs on Postgres 16; MySQL had replication issues."},
        {"role": "assistant", "content": "Noted: Postgres 16 for orders, because of MySQL replication issues."},
        {"role": "user", "content": "We lint with ruff in pre-commit, and never push to main."},
        {"role": "assistant", "content": "Understood: ruff in pre-commit, and no pushes to main."}]


def _stored(mem: Memory) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((r.kind, r.text, r.sources) for r in mem.iter_records(SCOPE))


def test_remember_stopped_by_a_full_disk_says_so_and_the_same_capture_again_stores_the_rest(
        store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Wherever the disk fills (after the messages, between memories, before the summary), the error says to
    send the capture again, and sending it again leaves the store as one capture with room would have."""
    from remem.core.store.backends.disk_room import DiskRoom

    with Memory(path=store_factory(), embedder="none", service="off") as mem:  # fresh stores, copied from one
        mem.remember(CHAT, scope=SCOPE, session="s", distiller="keyless")
        want = _stored(mem)
    real, stops = DiskRoom.check, 0
    for room in range(12):
        writes: list[str] = []

        def filling(self: DiskRoom, doing: str, **kw: object) -> None:
            if doing == "writing to":
                writes.append(doing)
                if len(writes) > room:
                    raise DiskFullError("0 MB are free on the disk for writing to the store")
            real(self, doing, **kw)

        with Memory(path=store_factory(), embedder="none", service="off") as mem:
            monkeypatch.setattr(DiskRoom, "check", filling)
            try:
                mem.remember(CHAT, scope=SCOPE, session="s", distiller="keyless")
            except DiskFullError as exc:
                stops += 1
                assert "call it again with the same messages" in str(exc)
            monkeypatch.undo()
            mem.remember(CHAT, scope=SCOPE, session="s", distiller="keyless")
            assert _stored(mem) == want, f"stopped after {room} writes"
    assert stops >= 4  # the capture has several writes, and each was a place to stop


SCRIPT = textwrap.dedent("""
    import os, sys
    from remem import DiskFullError, Memory
    disk, service = sys.argv[1], sys.argv[2]
    scope = {"tenant": "acme"}
    with Memory(os.path.join(disk, "store"), embedder="none", service=service) as mem:
        for i in range(20):
            mem.add(f"fact {i}: the orders service runs on Postgres 16 in region {i}", scope=scope)
        filler = os.path.join(disk, "filler")
        with open(filler, "wb") as f:  # the disk full: another program wrote it
            try:
                st = os.statvfs(disk)
                f.write(bytes(st.f_bavail * st.f_frsize))
            except OSError:
                pass
        stored = 0
        try:  # enough to need pages the disk has no room for
            for i in range(300):
                mem.add(f"note {i}: deploys go out on Tuesdays, after the review of " + "change " * 60, scope=scope)
                stored += 1
        except DiskFullError as exc:
            print("refused:", exc, flush=True)
        print("stored", stored, flush=True)
        os.remove(filler)
        mem.add("deploys go out on Tuesdays", scope=scope)
        print("count", mem.count(scope=scope), flush=True)
    if service == "auto":  # the service it started lives in this mount namespace only: stop it with the disk
        from remem.core.service.client import stop_service
        stop_service(os.path.join(disk, "store"))
""")


@pytest.mark.parametrize("service", ["off", "auto"])
def test_a_real_full_disk_refuses_writes_instead_of_killing_the_process(tmp_path: Path, service: str) -> None:
    """On a real full disk (a tmpfs of its own, in a mount namespace of its own): in-process and through the
    local service, the write is refused with the reason, the process lives, and the store goes on afterwards."""
    unshare = shutil.which("unshare")
    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run([unshare or "unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=8m tmpfs {disk}"],
                           capture_output=True) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("a tmpfs of its own needs `unshare -m` and mount rights (root)")
    env = {**os.environ, "REMEM_HOME": str(tmp_path / "home")}
    run = subprocess.run([unshare, "-m", "sh", "-c", f'mount -t tmpfs -o size=400m tmpfs "$1" && exec "$2" -c "$3" '
                          f'"$1" "$4"', "sh", str(disk), sys.executable, SCRIPT, service],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode != -signal.SIGBUS and run.returncode != 128 + signal.SIGBUS, run.stderr[-2000:]
    assert run.returncode == 0, run.stderr[-2000:]
    refused, stored, count = run.stdout.splitlines()
    assert "MB are free on the disk" in refused and "REMEM_MIN_FREE_MB" in refused, run.stdout
    assert stored == "stored 0"  # refused before any of it was written
    assert count == "count 21"  # the 20 from before, and the one written once there was room again
