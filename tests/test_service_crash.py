"""A service killed by a signal while opening the store (SIGBUS from Qdrant's mapped files on a full disk) is
reported, not retried in the caller's own process, where the same failure would kill the agent."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from remem import Memory, RememError
from remem.core.service.lifecycle import start_error
from remem.core.service.paths import service_paths
from remem.core.service.wire import ServiceCrashedError, ServiceError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_a_service_killed_by_a_signal_is_a_clear_error_and_no_in_process_fallback(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    Memory(path=store, embedder="none", service="off").close()
    err = start_error(service_paths(store), -signal.SIGBUS)
    assert isinstance(err, ServiceCrashedError) and not isinstance(err, ServiceError)
    assert "SIGBUS" in str(err) and "MB free" in str(err) and "will not open it in this process" in str(err)
    # Memory() lets it through: only a ServiceError (no service could start) falls back to opening in-process.
    # The service's death is injected where the client learns of it (a real SIGBUS needs a full disk)
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))

    def crashed(*args: object, **kwargs: object) -> dict[str, object]:
        raise err

    monkeypatch.setattr("remem.core.service.client.ServiceClient.hello", crashed)
    with pytest.raises(ServiceCrashedError):
        Memory(path=store, embedder="none", service="auto")
    with Memory(path=store, embedder="none", service="off") as mem:  # the store was not left open by the attempt
        assert mem.count() == 0


def test_a_store_on_a_nearly_full_disk_is_refused_with_a_clear_error_not_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    with Memory(path=store, embedder="none", service="off") as mem:
        mem.add("the staging database is Postgres 16")
    monkeypatch.setattr("remem.core.store.backends.disk_room.MIN_FREE", 2**62)  # more than any disk has free
    with pytest.raises(RememError, match="MB are free on the disk"):
        Memory(path=store, embedder="none", service="off")
    monkeypatch.undo()
    with Memory(path=store, embedder="none", service="off") as mem:  # nothing was left half-open or locked
        assert mem.count() == 1


def test_the_service_log_is_written_redacted_tracebacks_included() -> None:
    """service.log is a file on disk: a record quoting a request (a failed value, an echoed key) goes redacted."""
    import logging

    from remem.core.service.server import _RedactingFormatter

    key = "sk-proj-Xq7vT2mLp9RwZ4kB8nYc3HdF6jGs1AeU5oIi0VbNtKrMx"
    try:
        raise ValueError(f"could not store {key}")
    except ValueError:
        record = logging.LogRecord("remem.service", logging.ERROR, __file__, 1, "request failed: %s", (key,),
                                   sys.exc_info())
    text = _RedactingFormatter("%(message)s").format(record)
    assert key not in text and text.count("[REDACTED:openai_api_key]") == 2 and "Traceback" in text
