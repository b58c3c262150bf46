"""Forgetting a message forgets its words in recall too: they leave the hidden context of its neighbours.

What users rely on: after ``forget`` (one id, or many) or an edit of what a message said, a search for the old
words finds none of the messages that were said around it, and their context no longer holds them; what the
neighbours said themselves still finds them; a memory distilled from a message can be forgotten without taking
the message's words out of its neighbours' context; the same message ids in another session, scope or tenant are
left alone. Real stores (Qdrant Edge, qdrant-client local mode).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import Iterator

from remem import ErasureIncompleteError, Memory, Scope

DANA = Scope(tenant="acme", user="dana")
PRIVATE = "my diagnosis is narcolepsy, keep that between us"
SESSION = [("user", "Our orders service runs on Postgres 16."),
           ("assistant", "Noted. Why not MySQL for the orders service?"),
           ("user", f"MySQL had replication issues last year. Also, {PRIVATE}."),
           ("assistant", "Understood, I will keep the replication history in mind."),
           ("user", "We lint everything with ruff in pre-commit.")]


def remember(mem: Memory, scope: Scope = DANA, session: str = "s1") -> None:
    mem.remember([{"role": r, "content": c, "id": f"m{i}"} for i, (r, c) in enumerate(SESSION)], scope=scope,
                 session=session, distiller="keyless")


def episode(mem: Memory, mid: str, scope: Scope = DANA, session: str = "s1") -> object:
    [rec] = [r for r in mem.iter_records(scope)
             if r.kind == "episode" and r.sources == (mid,) and r.metadata.get("session") == session]
    return rec


def episodes_found(mem: Memory, query: str, scope: Scope = DANA) -> set[str]:
    return {s for h in mem.search(query, scope=scope, limit=10) for r in h.records if r.kind == "episode"
            for s in r.sources}


def contexts(mem: Memory, scope: Scope = DANA) -> str:
    return " ".join(r.context or "" for r in mem.iter_records(scope))


@contextlib.contextmanager
def disk_full_for(mem: Memory, record_id: str) -> Iterator[None]:
    """Within the block, the store's disk is full whenever a write re-indexes ``record_id`` (a neighbour)."""
    backend = mem._connection.local.backend
    write = backend.set_vectors

    def full_disk(points):  # type: ignore[no-untyped-def]
        if any(p.id == record_id for p in points):
            raise OSError(28, "No space left on device")
        return write(points)

    backend.set_vectors = full_disk  # type: ignore[method-assign]
    try:
        yield
    finally:
        backend.set_vectors = write  # type: ignore[method-assign]


def test_a_forgotten_message_is_not_found_through_the_messages_around_it(any_mem: Memory) -> None:
    remember(any_mem)
    assert {"m1", "m3"} <= episodes_found(any_mem, "narcolepsy")  # its neighbours are found by its words
    assert any_mem.forget(episode(any_mem, "m2").id, scope=DANA) is True
    assert episodes_found(any_mem, "narcolepsy") == set()
    assert "narcolepsy" not in contexts(any_mem)
    # the neighbours keep the rest of their context: m1 is still found by what m0 said before it
    assert "Postgres 16" in episode(any_mem, "m1").context
    assert "ruff" in episode(any_mem, "m3").context


def test_forgetting_many_at_once_cleans_the_messages_that_remain(any_mem: Memory) -> None:
    remember(any_mem)
    said = {r.id for r in any_mem.iter_records(DANA) if r.kind != "summary" and set(r.sources) <= {"m2", "m4"}}
    result = any_mem.forget(scope=DANA, where={"message_id": ["m2", "m4"]}, dry_run=False)
    assert set(result.ids) == said and len(said) == 4  # the two messages, and the facts distilled from them
    assert episodes_found(any_mem, "narcolepsy") == set() and "narcolepsy" not in contexts(any_mem)
    assert "ruff" not in episode(any_mem, "m3").context  # m4 is gone from what followed m3 too


def test_a_dry_run_changes_no_context(any_mem: Memory) -> None:
    remember(any_mem)
    before = contexts(any_mem)
    assert any_mem.forget(scope=DANA, where={"message_id": ["m2"]}).count == 2  # the message and its fact
    assert contexts(any_mem) == before and "narcolepsy" in before


def test_an_edited_message_leaves_its_old_words_nowhere_and_its_new_ones_around_it(any_mem: Memory) -> None:
    t0 = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.timezone.utc)
    notes = [any_mem.add(text, scope=DANA, occurred_at=t0 + dt.timedelta(minutes=i)) for i, text in enumerate(
        ["Call with Ana about the launch plan.", "The launch moves to June, codename Bluefin.",
         "Then we talked about hiring two engineers."])]
    any_mem.update(notes[1].id, text="The launch moves to June.", scope=DANA)
    assert not [h for h in any_mem.search("Bluefin", scope=DANA, limit=10)]
    for rec in (notes[0], notes[2]):
        ctx = any_mem.get(rec.id, scope=DANA).context
        assert "Bluefin" not in ctx and "The launch moves to June." in ctx


def test_forgetting_a_memory_distilled_from_a_message_keeps_the_message_in_context(any_mem: Memory) -> None:
    remember(any_mem)
    distilled = [r for r in any_mem.iter_records(DANA) if r.kind != "episode" and "m2" in r.sources]
    assert distilled  # the keyless distiller kept something of it (the summary at least)
    for rec in distilled:
        any_mem.forget(rec.id, scope=DANA)
    assert "narcolepsy" in episode(any_mem, "m1").context and "m2" in episodes_found(any_mem, "narcolepsy")


def test_the_same_message_ids_elsewhere_are_left_alone(any_mem: Memory) -> None:
    eve, other_tenant = Scope(tenant="acme", user="eve"), Scope(tenant="globex", user="dana")
    remember(any_mem)
    remember(any_mem, session="s2")
    remember(any_mem, scope=eve)
    remember(any_mem, scope=other_tenant)
    any_mem.forget(episode(any_mem, "m2").id, scope=DANA)
    assert "narcolepsy" in episode(any_mem, "m1", session="s2").context  # another session of the same scope
    assert "narcolepsy" in episode(any_mem, "m1", scope=eve).context
    assert "narcolepsy" in episode(any_mem, "m1", scope=other_tenant).context


def test_a_context_that_does_not_quote_the_message_as_stored_is_rebuilt_without_it(mem: Memory) -> None:
    """The words are cut out where they stand as stored; where they read otherwise (an edit by hand, a redaction
    that reads differently in the longer text), the context is rebuilt from the neighbours that remain."""
    remember(mem)
    m1 = episode(mem, "m1")
    mem.update(m1.id, context=m1.context.replace("narcolepsy", "NARCOLEPSY (said twice)"), scope=DANA)
    mem.forget(episode(mem, "m2").id, scope=DANA)
    ctx = episode(mem, "m1").context
    assert "narcolepsy" not in ctx.lower()
    assert "Postgres 16" in ctx and "replication history" in ctx  # m0 before it and m3 after it, as stored


def test_a_context_made_only_of_the_forgotten_message_is_cleared(any_mem: Memory) -> None:
    any_mem.remember([{"role": "user", "content": "The project is called Moonraker and ships in May.", "id": "a"},
                      {"role": "assistant", "content": "Noted: the release ships in May.", "id": "b"}],
                     scope=DANA, session="s9", distiller="keyless")
    any_mem.forget(episode(any_mem, "a", session="s9").id, scope=DANA)
    assert episode(any_mem, "b", session="s9").context is None
    assert "b" not in episodes_found(any_mem, "Moonraker")
    cleared = any_mem.update(episode(any_mem, "b", session="s9").id, sources=[], scope=DANA)
    assert any_mem.get(cleared.id, scope=DANA).sources == ()


def test_a_later_capture_of_the_session_does_not_bring_the_words_back(any_mem: Memory) -> None:
    """The hooks capture a session a few messages at a time: what is said after a forget extends the context
    of the messages before it, and must not carry the forgotten words along."""
    said = [{"role": r, "content": c, "id": f"m{i}"} for i, (r, c) in enumerate(SESSION)]
    any_mem.remember(said[:3], scope=DANA, session="live", distiller="keyless")
    any_mem.forget(episode(any_mem, "m2", session="live").id, scope=DANA)
    any_mem.remember(said[3:], scope=DANA, session="live", distiller="keyless")
    assert "narcolepsy" not in contexts(any_mem)
    assert "replication history" in episode(any_mem, "m1", session="live").context  # what followed, added


def _dated(mem: Memory, texts: list[str], start: dt.datetime, scope: Scope = DANA) -> list:
    return mem.add_many([{"text": t, "occurred_at": start + dt.timedelta(minutes=i)} for i, t in enumerate(texts)],
                        scope=scope)


T0 = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.timezone.utc)
LOCKER = "my locker combination is 4417 9921"


def test_a_note_said_twice_and_merged_is_forgotten_from_around_both_places(any_mem: Memory) -> None:
    first = any_mem.add(LOCKER, scope=DANA, occurred_at=T0)
    later = _dated(any_mem, ["what was that code again?", LOCKER, "thanks, got it"], T0 + dt.timedelta(days=30))
    assert later[1].id == first.id  # the repeat was merged into the note said first
    assert "4417" in contexts(any_mem)  # ... yet its neighbours hold its words as they were said there
    assert any_mem.forget(first.id, scope=DANA) is True
    assert "4417" not in contexts(any_mem) and not any_mem.search("locker combination 4417", scope=DANA, limit=10)


def test_a_repeat_inside_one_batch_is_forgotten_from_around_both_places(any_mem: Memory) -> None:
    recs = _dated(any_mem, [LOCKER, "ok noted, thanks", LOCKER, "anything else?"], T0)
    assert recs[0].id == recs[2].id and any_mem.count(scope=DANA) == 3
    any_mem.forget(recs[0].id, scope=DANA)
    assert "4417" not in contexts(any_mem) and "ok noted" in contexts(any_mem)


def test_editing_a_merged_note_reaches_the_neighbours_of_its_repeat(any_mem: Memory) -> None:
    first = any_mem.add(LOCKER, scope=DANA, occurred_at=T0)
    asked = _dated(any_mem, ["what was that code again?", LOCKER], T0 + dt.timedelta(days=30))[0]
    any_mem.update(first.id, text="my locker is the one by the door", scope=DANA)
    ctx = any_mem.get(asked.id, scope=DANA).context
    assert "4417" not in ctx and "by the door" in ctx


def test_where_a_message_was_said_is_not_edited_so_a_later_forget_still_reaches_its_neighbours(
        any_mem: Memory) -> None:
    before, said, after = _dated(any_mem, ["what did the doctor say", "she found a melanoma, sadly",
                                           "I am so sorry"], T0)
    # replacing the caller's metadata keeps the thread's bookkeeping
    kept = any_mem.update(said.id, metadata={"topic": "health"}, replace_metadata=True, scope=DANA)
    assert kept.metadata["topic"] == "health" and kept.metadata["thread"] == said.metadata["thread"]
    # moving it to another thread, or making it a fact, is refused with a clear error and changes nothing
    for edit in ({"metadata": {"thread": "renamed"}}, {"metadata": {"position": 7}}, {"kind": "fact"}):
        try:
            any_mem.update(said.id, scope=DANA, **edit)
        except ValueError as exc:
            assert "said" in str(exc)
        else:
            raise AssertionError(f"{edit} was accepted")
    assert any_mem.get(said.id, scope=DANA).metadata["thread"] == said.metadata["thread"]
    any_mem.forget(said.id, scope=DANA)
    assert "melanoma" not in contexts(any_mem) and not any_mem.search("melanoma", scope=DANA, limit=10)
    assert any_mem.get(before.id, scope=DANA).context == "I am so sorry"


def test_a_log_synced_again_is_the_same_notes_not_new_repeats(any_mem: Memory) -> None:
    """The same dated notes added again (a nightly sync, no ids): nothing new is stored or linked."""
    log = ["deploy started", "migration 42 applied", "deploy finished"]
    first = _dated(any_mem, log, T0)
    before = {r.id: r for r in any_mem.iter_records(DANA)}
    again = _dated(any_mem, log, T0)
    assert [r.id for r in again] == [r.id for r in first]
    after = {r.id: r for r in any_mem.iter_records(DANA)}
    assert after.keys() == before.keys()
    assert all(after[k].metadata == before[k].metadata and after[k].context == before[k].context for k in after)


def test_edits_that_leave_where_a_note_was_said_alone_are_accepted(any_mem: Memory) -> None:
    plain = any_mem.add("I prefer tea over coffee", scope=DANA)
    assert _dated(any_mem, ["I prefer tea over coffee"], T0)[0].id == plain.id  # a dated repeat merged into it
    assert any_mem.update(plain.id, kind="preference", scope=DANA).kind == "preference"  # it is no message
    assert any_mem.update(plain.id, metadata={"topic": "drinks"}, scope=DANA).metadata["merged_messages"]
    try:  # a caller's key that a thread sets itself is refused, not overwritten
        any_mem.add("Met Dana at the offsite", scope=DANA, occurred_at=T0, metadata={"position": "CTO"})
    except ValueError as exc:
        assert "position" in str(exc)
    else:
        raise AssertionError("metadata position on a dated note was accepted")
    try:  # a memory that has expired before it is stored is refused
        any_mem.add("the sale ends soon", scope=DANA, valid_until=dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    except ValueError as exc:
        assert "valid_until" in str(exc)
    else:
        raise AssertionError("an expired memory was accepted")


def test_a_forget_whose_neighbour_cannot_be_rewritten_is_refused_whole_and_can_be_retried(any_mem: Memory) -> None:
    """A disk that fails while a neighbour is rewritten: the forget (one id, many, or an edit of the text)
    says so with ErasureIncompleteError and deletes nothing, rather than answering yes with the words still in
    the neighbour's context; once the disk works again, calling it again forgets."""
    remember(any_mem)
    m1, m2, m3 = (episode(any_mem, m) for m in ("m1", "m2", "m3"))
    with disk_full_for(any_mem, m3.id):
        for attempt in (lambda: any_mem.forget(m2.id, scope=DANA),
                        lambda: any_mem.forget(scope=DANA, where={"message_id": ["m2"]}, dry_run=False),
                        lambda: any_mem.update(m2.id, text="I would rather not say", scope=DANA)):
            around = any_mem.get(m1.id, scope=DANA).context
            try:
                attempt()
            except ErasureIncompleteError as exc:
                assert m3.id in str(exc) and "No space left" in str(exc)
            else:
                raise AssertionError("a forget that left the words in a neighbour was accepted")
            assert "narcolepsy" in any_mem.get(m2.id, scope=DANA).text  # nothing of it was written
            assert "narcolepsy" in any_mem.get(m3.id, scope=DANA).context
            assert "rather not say" not in any_mem.get(m1.id, scope=DANA).context  # a refused edit: no trace
        assert any_mem.get(m1.id, scope=DANA).context == around  # restored as it was before the edit
    assert any_mem.forget(m2.id, scope=DANA) is True
    assert "narcolepsy" not in contexts(any_mem) and episodes_found(any_mem, "narcolepsy") == set()
    assert "Postgres 16" in any_mem.get(m1.id, scope=DANA).context


def test_a_redaction_rescan_redacts_a_message_whose_neighbour_cannot_be_rewritten(memory_factory) -> None:  # noqa: ANN001
    """`remem redact --store` when a neighbour's write fails: the message's own secret still goes (the scan
    redacts each neighbour's context itself); the failure is counted."""
    key = "ghp_" + "A1b2C3d4" * 4 + "Zz9y"
    mem = memory_factory("none")
    mem.remember([{"role": "user", "content": "We deploy billing with ArgoCD.", "id": "a"},
                  {"role": "user", "content": "CI pushes with the token TOKENHERE for now.", "id": "b"},
                  {"role": "assistant", "content": "Understood, I will rotate it after the release.", "id": "c"}],
                 scope=DANA, session="s1", distiller="keyless")
    backend = mem._connection.local.backend
    for rec in mem.iter_records(DANA):  # the key as a store written before its rule existed holds it
        backend.set_payload([rec.id], {"text": rec.text.replace("TOKENHERE", key),
                                       "context": (rec.context or "").replace("TOKENHERE", key)})
    said, after = episode(mem, "b"), episode(mem, "c")
    assert key in said.text and key in after.context
    with disk_full_for(mem, after.id):
        done = mem.rescan_redactions(scope=DANA, dry_run=False)
    assert key not in mem.get(said.id, scope=DANA).text and done["failed"] >= 1
