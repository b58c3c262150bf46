"""Operations are declared once: every facade, the service and the in-process implementation agree on each one."""

from __future__ import annotations

import inspect

import pytest

from remem import AsyncMemory, Memory
from remem.core.local import LocalMemory
from remem.core.operations import OPERATIONS, RETRYABLE, SLOW
from remem.core.service import client as service_client


def _params(sig: inspect.Signature) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_has_one_signature_everywhere(name: str) -> None:
    op = OPERATIONS[name]
    sync, aio = getattr(Memory, name), getattr(AsyncMemory, name)
    assert inspect.signature(sync) == op.signature == inspect.signature(aio)
    assert inspect.iscoroutinefunction(aio) and not inspect.iscoroutinefunction(sync)
    assert sync.__doc__ == aio.__doc__ == op.doc and op.doc
    # the in-process implementation (what the service runs too) takes exactly these parameters
    impl = getattr(LocalMemory, name)
    impl_sig = inspect.signature(getattr(impl, "plan", impl))
    assert _params(impl_sig) == _params(op.signature), f"LocalMemory.{name} drifted from the declaration"


def test_the_service_client_derives_timeouts_and_retries_from_the_table() -> None:
    assert service_client.SLOW_METHODS == SLOW
    assert RETRYABLE <= service_client.RETRYABLE
    assert all(not OPERATIONS[n].slow or n in SLOW for n in OPERATIONS)
    writes = {"add", "add_many", "update", "supersede", "forget", "remember", "import_", "reembed"}
    assert not writes & RETRYABLE  # never sent twice after a dropped connection


def test_unknown_and_missing_arguments_are_clear_errors_before_anything_runs(mem: Memory) -> None:
    with pytest.raises(TypeError, match="usr"):
        mem.add("x", usr="alice")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mem.get()  # type: ignore[call-arg]
    assert mem.count() == 0


async def test_async_update_of_tags_keeps_the_dense_vector(dense_mem: Memory) -> None:
    """Was: the async twin re-implemented update and stored the record without its vector (pending)."""
    amem = AsyncMemory(memory=dense_mem)
    rec = await amem.add("The quarterly report is due on the fifth working day", scope={"tenant": "acme"})
    await amem.update(rec.id, tags=["finance"], scope=rec.scope)
    got = await amem.get(rec.id, scope=rec.scope)
    assert got.embedded and got.tags == ("finance",)
    assert (await amem.stats(scope=rec.scope)).pending_embeddings == 0
    hits = await amem.search("when is the quarterly report due", scope=rec.scope)
    assert hits and hits[0].record.id == rec.id
