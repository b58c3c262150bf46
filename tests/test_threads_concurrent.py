"""Threads under concurrent writers: two ``add()`` calls of one thread at the same time keep its order.

Each call reads where the thread ends and stores its note after it; two calls that both read the end before
either stored would give their notes the same position and make both continue the same note. The embedder here
is a user's own (the Embedder protocol) that holds every writer until all of them are embedding, so the writers
really are in flight together; the store, the threads and the plans are the real ones.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from remem import AsyncMemory, Memory, ProviderError, Scope
from thread_clock import DANA, at

WRITERS = 4


class MeetingEmbedder:
    """Embeds by hashing; once ``meet(n)`` is called, each embedding waits until ``n`` writers are embedding."""

    name, dim = "meeting-test", 8

    def __init__(self) -> None:
        self.barrier: threading.Barrier | None = None
        self.abarrier: asyncio.Barrier | None = None
        self.down = False  # the provider fails
        self.texts: list[str] = []

    def meet(self, n: int) -> None:
        self.barrier = threading.Barrier(n, timeout=20)

    def ameet(self, n: int) -> None:
        self.abarrier = asyncio.Barrier(n)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.barrier is not None:
            self.barrier.wait()
        if self.down:
            raise ProviderError("connection", "the embedding service is down")
        self.texts.extend(texts)
        return [self.embed_query(t) for t in texts]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.abarrier is not None:
            await asyncio.wait_for(self.abarrier.wait(), 20)
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [b / 255 + 0.01 for b in hashlib.sha256(text.encode()).digest()[:8]]


def at_once(write: Callable[[int], None], writers: int) -> list[BaseException]:
    """``write(0)`` .. ``write(writers - 1)``, each in its own thread, all started together; what they raised."""
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            write(k)
        except BaseException as exc:  # noqa: BLE001 (reported by the caller, in the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return errors


def thread_in_order(mem: Memory, name: str) -> list[Any]:
    notes = [r for r in mem.list(scope=DANA, limit=100) if r.metadata.get("thread") == name]
    return sorted(notes, key=lambda r: r.metadata["position"])


def assert_one_chain(notes: list[Any], expected: int) -> None:
    """Positions 0..n-1, each note continuing the two before it and continued by the two after it."""
    assert len(notes) == expected
    assert [r.metadata["position"] for r in notes] == list(range(expected))
    ids = [r.metadata["message_id"] for r in notes]
    for k, rec in enumerate(notes):
        assert rec.metadata.get("follows", []) == ids[max(0, k - 2):k], (k, rec.text)
        assert rec.metadata.get("followed_by", []) == ids[k + 1:k + 3], (k, rec.text)
        if k:
            assert notes[k - 1].text in rec.context


@pytest.mark.parametrize("named", [False, True], ids=["dated", "named"])
def test_concurrent_adds_to_one_thread_keep_its_order(tmp_path: Path, named: bool) -> None:
    emb = MeetingEmbedder()
    mem = Memory(path=tmp_path / "s", embedder=emb, service="off")
    meta = {"thread": "standup"} if named else None
    try:
        first = mem.add("Ben: where are we with the release?", scope=DANA, occurred_at=at(0), metadata=meta)
        emb.meet(WRITERS)
        errors = at_once(lambda k: mem.add(f"Ana: update number {k} on the release", scope=DANA,
                                           occurred_at=at(1 + k), metadata=meta), WRITERS)
        assert not errors, errors
        assert_one_chain(thread_in_order(mem, first.metadata["thread"]), WRITERS + 1)
    finally:
        mem.close()


def test_concurrent_async_adds_to_one_thread_keep_its_order(tmp_path: Path) -> None:
    emb = MeetingEmbedder()
    mem = Memory(path=tmp_path / "s", embedder=emb, service="off")
    amem = AsyncMemory(memory=mem)

    async def run() -> Any:
        first = await amem.add("Ben: where are we with the release?", scope=DANA, occurred_at=at(0))
        emb.ameet(WRITERS)
        await asyncio.gather(*(amem.add(f"Ana: update number {k} on the release", scope=DANA,
                                        occurred_at=at(1 + k)) for k in range(WRITERS)))
        return first

    try:
        first = asyncio.run(run())
        assert_one_chain(thread_in_order(mem, first.metadata["thread"]), WRITERS + 1)
    finally:
        mem.close()


def test_concurrent_add_many_calls_interleave_no_positions(tmp_path: Path) -> None:
    """Two bulk calls of one named thread at once, in batches: one call's notes come after the other's."""
    emb = MeetingEmbedder()
    mem = Memory(path=tmp_path / "s", embedder=emb, service="off")
    try:
        emb.meet(2)
        done: list[int] = []

        def write(k: int) -> None:
            items = [{"text": f"call {k} says thing {i}", "metadata": {"thread": "log"}} for i in range(3)]
            mem.add_many(items, scope=DANA, batch_size=8, progress=done.append)

        assert not at_once(write, 2)
        notes = thread_in_order(mem, "log")
        assert_one_chain(notes, 6)
        assert len({r.text.split()[1] for r in notes[:3]}) == 1  # one call's notes, then the other's
        assert sum(done) == 6
    finally:
        mem.close()


def pending_first_note(tmp_path: Path) -> tuple[Memory, MeetingEmbedder, Any]:
    """A store whose first note of Dana's chat was stored while its embedder was down (its vector pending)."""
    emb = MeetingEmbedder()
    mem = Memory(path=tmp_path / "s", embedder=emb, service="off")
    emb.down = True
    first = mem.add("Ben: where are we with the release?", scope=DANA, occurred_at=at(0))
    emb.down = False
    return mem, emb, first


def test_continuing_a_note_whose_vector_is_pending_embeds_only_the_new_note(tmp_path: Path) -> None:
    """The stored note a new one continues gets a new context in the same locked step that stores the new one;
    no embedding runs there (a provider timing out would hold every writer): its vector stays pending."""
    mem, emb, first = pending_first_note(tmp_path)
    try:
        second = mem.add("Ana: it ships on Friday", scope=DANA, occurred_at=at(1))
        assert emb.texts == ["Ana: it ships on Friday"]
        first = mem.get(first.id, scope=DANA)
        assert first.metadata["followed_by"] == [second.metadata["message_id"]] and "Friday" in first.context
        assert not first.embedded and mem.stats(scope=DANA).pending_embeddings == 1
    finally:
        mem.close()


def test_a_call_without_dated_notes_is_stored_as_it_is_embedded(tmp_path: Path) -> None:
    """Facts and other undated items are stored batch by batch while the rest is still embedding (a progress bar
    moves during the slow part), and the progress callback runs outside the write lock: another thread's add()
    from inside it completes instead of waiting for the whole call."""
    mem = Memory(tmp_path / "store", embedder=MeetingEmbedder(), service="off")
    seen: list[tuple[int, int]] = []
    other: list[str] = []

    def progress(n: int) -> None:
        seen.append((n, mem.count(scope=DANA)))
        writer = threading.Thread(target=lambda: other.append(mem.add(f"side note {len(seen)}", scope=Scope(
            tenant="acme", user="eli"), kind="fact").id))
        writer.start()
        writer.join(timeout=10)
        assert not writer.is_alive(), "an add() from the progress callback waited on the write lock"

    try:
        items = [{"text": f"Service {k} listens on port {8000 + k}", "kind": "fact"} for k in range(10)]
        mem.add_many(items, scope=DANA, batch_size=4, progress=progress)
        assert [n for n, _ in seen] == [4, 4, 2] and [c for _, c in seen] == [4, 8, 10] and len(other) == 3
    finally:
        mem.close()


def test_concurrent_adds_between_stored_notes_keep_the_order_said(tmp_path: Path) -> None:
    """Late messages arriving together, all dated between two stored notes: each goes where it was said (the
    later notes moved down under the write lock), one chain in date order."""
    emb = MeetingEmbedder()
    mem = Memory(path=tmp_path / "s", embedder=emb, service="off")
    try:
        first = mem.add("Ben: where are we with the release?", scope=DANA, occurred_at=at(0))
        mem.add("Ben: thanks all, shipping it", scope=DANA, occurred_at=at(10))
        emb.meet(WRITERS)
        errors = at_once(lambda k: mem.add(f"Ana: update number {k} on the release", scope=DANA,
                                           occurred_at=at(1 + k)), WRITERS)
        assert not errors, errors
        notes = thread_in_order(mem, first.metadata["thread"])
        assert [r.occurred_at for r in notes] == sorted(r.occurred_at for r in notes)
        assert_one_chain(notes, WRITERS + 2)
    finally:
        mem.close()


def test_a_note_put_between_stored_ones_embeds_only_itself(tmp_path: Path) -> None:
    """The stored notes around a late one get new links and context without being embedded again: a pending
    vector stays pending, a stored one is kept as it was."""
    mem, emb, first = pending_first_note(tmp_path)
    try:
        last = mem.add("Ben: great, see you at the demo", scope=DANA, occurred_at=at(2))
        backend = mem._connection.local.backend
        vector = backend.dense_vectors([last.id])[last.id]
        late = mem.add("Ana: it ships on Friday", scope=DANA, occurred_at=at(1))
        assert emb.texts == ["Ben: great, see you at the demo", "Ana: it ships on Friday"]
        first, last = mem.get(first.id, scope=DANA), mem.get(last.id, scope=DANA)
        assert first.metadata["followed_by"] == [late.metadata["message_id"], last.metadata["message_id"]]
        assert last.metadata["follows"] == [first.metadata["message_id"], late.metadata["message_id"]]
        assert "Friday" in first.context and "Friday" in last.context
        assert not first.embedded and mem.stats(scope=DANA).pending_embeddings == 1
        assert last.embedded and backend.dense_vectors([last.id])[last.id] == vector
    finally:
        mem.close()
