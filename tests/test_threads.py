"""Threads: a conversation stored turn by turn with ``add(text, occurred_at=...)`` is recalled as one.

What users rely on: an answer added on its own ("Yes, every Tuesday at Boulderhaus.") is found by the words of
its question and shown with it, in the order said; turns far apart in time, of another scope, or of another
tenant never join; the same note said twice is still one note; facts are never threaded; ``thread_gap_minutes=0``
turns it off, and a named thread needs no date. Real stores (Qdrant Edge, qdrant-client local mode).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any, Callable

import pytest

from remem import AsyncMemory, Memory, Scope
from thread_clock import DANA, at
from written import data_of, every_file

CHAT = ["Ben: Do you still go climbing these days?",
        "Ana: Yes, every Tuesday at Boulderhaus with my brother.",
        "Ben: Nice, I should come along some time.",
        "Ana: I also adopted a greyhound called Pixel last month."]


def add_chat(mem: Memory, scope: Scope = DANA, start: float = 0.0, one_by_one: bool = True) -> list[Any]:
    if one_by_one:
        return [mem.add(t, scope=scope, occurred_at=at(start + i), sources=[f"m{start:g}-{i}"])
                for i, t in enumerate(CHAT)]
    return mem.add_many([{"text": t, "occurred_at": at(start + i), "sources": [f"m{start:g}-{i}"]}
                         for i, t in enumerate(CHAT)], scope=scope)


def test_an_answer_added_alone_is_found_by_its_question_and_shown_with_it(any_mem: Memory) -> None:
    add_chat(any_mem)
    [hit, *_] = any_mem.search("how often does Ana go climbing", scope=DANA, limit=3)
    said = [r.text for r in hit.records]
    assert CHAT[1] in said and said.index(CHAT[0]) < said.index(CHAT[1]), said  # in the order said
    assert {"m0-0", "m0-1"} <= set(hit.sources)
    ctx = any_mem.context("how often does Ana go climbing", scope=DANA, token_budget=200)
    assert ctx.index("Do you still go climbing") < ctx.index("every Tuesday at Boulderhaus")


def test_add_and_add_many_place_turns_alike(mem: Memory) -> None:
    """One call per turn (later turns extend the context of earlier ones) or one bulk call: the same thread."""
    one = add_chat(mem, DANA)
    bulk = add_chat(mem, Scope(tenant="acme", user="eve"), one_by_one=False)
    for a, b in zip(one, bulk):
        a, b = mem.get(a.id, scope=DANA), mem.get(b.id, scope=Scope(tenant="acme", user="eve"))
        assert a.context == b.context and a.metadata["position"] == b.metadata["position"]
        assert a.metadata.get("follows") == b.metadata.get("follows")
        assert a.metadata.get("followed_by") == b.metadata.get("followed_by")
    assert CHAT[1] in mem.get(one[0].id, scope=DANA).context  # said after it, added later


def test_turns_apart_in_time_or_scope_never_join(mem: Memory) -> None:
    add_chat(mem, DANA)
    eve = Scope(tenant="acme", user="eve")
    other = Scope(tenant="globex", user="dana")
    late = mem.add("Ana: Pixel loves the beach.", scope=DANA, occurred_at=at(24 * 60), sources=["late"])
    for scope in (eve, other):
        mem.add("Zed: my Tuesday climbing partner cancelled again.", scope=scope, occurred_at=at(5), sources=["z"])
    assert "follows" not in late.metadata and late.metadata["thread"] != mem.get(
        add_chat(mem, DANA, start=2)[0].id, scope=DANA).metadata["thread"]
    for scope in (eve, other):
        [z] = mem.list(scope=scope)
        assert "follows" not in z.metadata and not z.context
    mine = [r for r in mem.list(scope=DANA, limit=100)]
    assert not any("Zed" in (r.context or "") for r in mine)
    hits = mem.search("Tuesday climbing", scope=DANA, limit=10)
    assert all(r.scope == DANA for h in hits for r in h.records)


def test_the_same_note_said_twice_is_one_note_and_facts_are_not_threaded(mem: Memory) -> None:
    first = mem.add("Ana drinks oolong tea.", scope=DANA)
    again = mem.add("Ana drinks oolong tea.", scope=DANA, occurred_at=at(1))
    assert again.id == first.id and "thread" not in mem.get(first.id, scope=DANA).metadata
    f1 = mem.add("Ana works at Zalando.", kind="fact", scope=DANA, occurred_at=at(2))
    f2 = mem.add("Ana lives in Berlin.", kind="fact", scope=DANA, occurred_at=at(3))
    assert not f1.context and not f2.context and "thread" not in f2.metadata


def test_a_gap_of_zero_turns_it_off_and_a_named_thread_needs_no_date(memory_factory: Callable[..., Memory]) -> None:
    off = memory_factory(thread_gap_minutes=0)
    recs = add_chat(off)
    assert all(not r.context and "thread" not in r.metadata for r in recs)
    mem = memory_factory()
    a = mem.add("Standup: the release slipped to Thursday.", scope=DANA, metadata={"thread": "standup"})
    b = mem.add("Because the migration is not reviewed yet.", scope=DANA, metadata={"thread": "standup"})
    assert b.metadata["follows"] == [a.id] and "release slipped" in (b.context or "")
    assert "not reviewed" in (mem.get(a.id, scope=DANA).context or "")


def test_the_async_facade_threads_the_same_way(mem: Memory) -> None:
    amem = AsyncMemory(memory=mem)

    async def run() -> list[Any]:
        return [await amem.add(t, scope=DANA, occurred_at=at(i)) for i, t in enumerate(CHAT)]

    recs = asyncio.run(run())
    assert mem.get(recs[1].id, scope=DANA).metadata["follows"] == [recs[0].id]
    assert CHAT[2] in (mem.get(recs[1].id, scope=DANA).context or "")


def test_a_bad_item_in_add_many_stores_nothing(mem: Memory) -> None:
    """An unknown field or a missing text anywhere in the batch is refused before anything is stored, so a retry
    of the corrected batch does not leave half a thread behind (or duplicates)."""
    good = [{"text": t, "occurred_at": at(i)} for i, t in enumerate(CHAT)]
    for bad in ({"text": "Ana: Bye!", "occured_at": at(9)}, {"content": "Ana: Bye!"}):
        try:
            mem.add_many([*good, bad], scope=DANA, batch_size=2)
        except TypeError as exc:
            assert "text" in str(exc) or "occured_at" in str(exc)
        else:
            raise AssertionError("a bad item was accepted")
        assert mem.count(scope=DANA) == 0


SECRET = "ghp_R8xk2LmQ9vTz4WcY7bNp3HdJ6fGs1AeU5oIi"


def test_a_secret_said_later_never_reaches_the_context_of_the_notes_before_it(tmp_path: Path, store_factory: Callable[..., Path]) -> None:
    """What follows a note becomes its recall context, in the same call or a later one: it is redacted like the
    note itself, in the store and in what search shows."""
    mem = Memory(path=store_factory(), embedder="none", service="off")  # under tmp_path
    mem.add("Ben: which token does the deploy job use?", scope=DANA, occurred_at=at(0))
    mem.add(f"Ana: the CI one, {SECRET}", scope=DANA, occurred_at=at(1))
    mem.add_many([{"text": "Ben: and the nightly export?", "occurred_at": at(2)},
                  {"text": f"Ana: same token, {SECRET}", "occurred_at": at(3)}], scope=DANA)
    notes = mem.list(scope=DANA)
    assert len(notes) == 4 and all(SECRET not in (n.context or "") + n.text for n in notes)
    assert all(n.context for n in notes)  # each still has the turns around it
    mem.close()
    raw = b"".join(data_of(p) for p in every_file(tmp_path))
    assert SECRET.encode() not in raw


LONG_KEY = ("sk-proj-Ab3dE5fGh7Jk9LmN0pQr2StU4vWx6Yz8aB1cD3eF5gH7iJ9kL0mN2oP4qR6sT8uV0wX2yZ4AbCdEf12GhIjKl34"
            "MnOpQr56StUvWx78YzAbCd90EfGhIjKlMn")


def test_a_key_cut_by_the_context_clip_leaves_no_fragment(tmp_path: Path, store_factory: Callable[..., Path]) -> None:
    """A neighbour's text is clipped to fit the context; redacted before the clip, so a cut through a key
    cannot leave a tail that no rule recognises without its prefix."""
    mem = Memory(path=store_factory(), embedder="none", service="off")  # under tmp_path
    words = " ".join(f"word{i}" for i in range(110))
    mem.add_many([{"text": "Ben: which key does staging use?", "occurred_at": at(0)},
                  {"text": f"Ana: {words} {LONG_KEY} is the one", "occurred_at": at(1)},
                  {"text": "Ben: and the production one?", "occurred_at": at(2)}], scope=DANA)
    mem.add("Ana: the same, rotated monthly", scope=DANA, occurred_at=at(3))
    mem.close()
    raw = b"".join(data_of(p) for p in every_file(tmp_path))
    assert LONG_KEY[-24:].encode() not in raw and LONG_KEY[8:32].encode() not in raw


def test_odd_dates_and_sources_get_a_clear_answer(mem: Memory) -> None:
    for end in (dt.datetime.max, dt.datetime.min, "9999-12-31T23:50"):
        with pytest.raises(ValueError, match="between the years"):
            mem.add("a note at the end of time", scope=DANA, occurred_at=end)
    assert mem.list(scope=DANA) == []  # nothing half-stored, and the scope still lists
    rec = mem.add("Ana: hello", scope=DANA, occurred_at=at(0), sources=(s for s in ["m-1", "m-2"]))
    assert rec.sources == ("m-1", "m-2") and rec.metadata["message_id"] == "m-1"
    mem.update(rec.id, scope=DANA, metadata={"followed_by": 5})  # it had none yet: set by hand to something odd
    assert mem.add("Ben: hi", scope=DANA, occurred_at=at(1)).metadata["follows"] == ["m-1"]


def test_a_bad_value_in_a_later_batch_of_add_many_stores_nothing(mem: Memory) -> None:
    """Values are checked too (not only types) before the first batch is stored: a failed call leaves no
    half-stored thread whose context quotes a note that was never kept."""
    items = [{"text": f"turn number {i}", "occurred_at": at(i / 10)} for i in range(64)]
    items.append({"text": "my bank PIN is 8812 zebra", "occurred_at": at(7), "importance": 99})
    with pytest.raises(ValueError, match="importance"):
        mem.add_many(items, scope=DANA)
    assert mem.count(scope=DANA) == 0 and not mem.search("bank PIN zebra", scope=DANA)


def test_a_key_given_as_a_source_id_or_a_thread_name_is_stored_redacted_and_the_thread_goes_on(
        tmp_path: Path, store_factory: Callable[..., Path]) -> None:
    mem = Memory(path=store_factory(), embedder="none", service="off")  # under tmp_path
    first = mem.add("Ben: which key is that?", scope=DANA, occurred_at=at(0), sources=[SECRET])
    second = mem.add("Ana: the staging one", scope=DANA, occurred_at=at(1))
    assert SECRET not in "".join(mem.get(first.id, scope=DANA).sources)
    assert mem.get(second.id, scope=DANA).metadata["follows"] == list(mem.get(first.id, scope=DANA).sources)
    named = [mem.add(t, scope=DANA, metadata={"thread": f"deploy {SECRET}"}) for t in ("Ben: ready?", "Ana: go")]
    later = mem.get(named[1].id, scope=DANA)
    assert later.metadata["thread"] == mem.get(named[0].id, scope=DANA).metadata["thread"]
    assert later.metadata["position"] == 1 and later.context == "Ben: ready?"
    mem.close()
    assert SECRET.encode() not in b"".join(data_of(p) for p in every_file(tmp_path))


def test_a_tenant_level_thread_goes_on_while_its_users_talk_more(any_mem: Memory) -> None:
    """A tenant's scope lists its users' notes too: 300 newer ones of users, in the same named thread, do not
    hide the tenant's own thread (its lookup asks for notes with no user, agent or session)."""
    team, mem = Scope(tenant="acme"), any_mem
    first = mem.add("Team: shall we ship on Friday?", scope=team, occurred_at=at(0), metadata={"thread": "ship"})
    mem.add_many([{"text": f"chat number {i}", "occurred_at": at(1), "scope": Scope(tenant="acme", user=f"u{i}"),
                   "metadata": {"thread": "ship"}} for i in range(300)])
    second = mem.add("Team: yes, Friday it is", scope=team, occurred_at=at(2), metadata={"thread": "ship"})
    assert second.metadata["thread"] == first.metadata["thread"] and second.context == first.text


def test_a_history_fetched_newest_first_is_placed_in_the_order_it_was_said(mem: Memory) -> None:
    """Chat APIs page newest first: ``add_many`` places dated notes by their dates, not by the list."""
    recs = mem.add_many([{"text": t, "occurred_at": at(i)} for i, t in reversed(list(enumerate(CHAT)))],
                        scope=DANA)
    by_text = {r.text: mem.get(r.id, scope=DANA) for r in recs}
    positions = [by_text[t].metadata["position"] for t in CHAT]
    assert positions == sorted(positions) and len(set(positions)) == len(CHAT)
    answer = by_text[CHAT[1]]
    assert answer.context.startswith(CHAT[0]) and CHAT[2] in answer.context  # before it, then after it
    [hit] = mem.search("climbing Tuesday Boulderhaus", scope=DANA, limit=1)
    assert [r.text for r in hit.records][:2] == CHAT[:2]  # the passage reads in the order said


def test_an_older_page_of_a_history_goes_before_the_newer_one(mem: Memory) -> None:
    """A chat history paged newest first, one add_many per page: the older page goes before the newer one in
    one thread, each message's past is what was said before it (never what came later), and the newer page's
    first messages now follow the older page's last."""
    newer = mem.add_many([{"text": t, "occurred_at": at(i)} for i, t in enumerate(CHAT) if i >= 2], scope=DANA)
    older = mem.add_many([{"text": t, "occurred_at": at(i)} for i, t in enumerate(CHAT) if i < 2], scope=DANA)
    newer, older = ([mem.get(r.id, scope=DANA) for r in recs] for recs in (newer, older))
    mid = [r.metadata["message_id"] for r in (*older, *newer)]
    assert {r.metadata["thread"] for r in (*older, *newer)} == {newer[0].metadata["thread"]}
    positions = [r.metadata["position"] for r in (*older, *newer)]
    assert positions == sorted(positions) and len(set(positions)) == len(CHAT)
    assert "follows" not in older[0].metadata and older[1].metadata["follows"] == mid[:1]  # no future as its past
    assert older[1].metadata["followed_by"] == mid[2:4] and newer[0].metadata["follows"] == mid[:2]
    [hit] = mem.search("come along to Boulderhaus", scope=DANA, limit=1)  # one passage across both pages
    assert [r.text for r in hit.records] == CHAT[1:4] or [r.text for r in hit.records] == CHAT[:3], hit.records
    late = mem.add("Ana: Pixel loves the park.", scope=DANA, occurred_at=at(3.5))  # within the thread: its place
    assert late.metadata["thread"] == newer[0].metadata["thread"]


def test_a_repeat_is_the_stored_note_only_where_de_duplication_would_merge_it(any_mem: Memory) -> None:
    """A log synced again is not placed twice, but the same words at the same minute said by another speaker,
    in another named thread, or after the stored copy was superseded, are messages of their own; a caller's own
    message id (a chat sync's) is the note's."""
    mem = any_mem
    first = mem.add_many([{"text": "Who can review PR 12?", "occurred_at": at(0), "metadata": {"speaker": "ann"}},
                          {"text": "sounds good", "occurred_at": at(1), "metadata": {"speaker": "bob"}}], scope=DANA)
    again = mem.add("sounds good", scope=DANA, occurred_at=at(1), metadata={"speaker": "bob"})
    other = mem.add("sounds good", scope=DANA, occurred_at=at(1), metadata={"speaker": "cat"})
    assert again.id == first[1].id and other.id != first[1].id
    assert other.metadata["thread"] == first[0].metadata["thread"] and other.metadata["position"] == 2
    ops = mem.add("ok", scope=DANA, occurred_at=at(100), metadata={"thread": "#ops"})
    rnd = mem.add_many([{"text": "lunch?", "occurred_at": at(99), "metadata": {"thread": "#random"}},
                        {"text": "ok", "occurred_at": at(100), "metadata": {"thread": "#random"}}], scope=DANA)
    assert "ok" in mem.get(rnd[0].id, scope=DANA).context and rnd[1].id == ops.id  # merged, yet said in #random
    slack = mem.add("deploy done", scope=DANA, occurred_at=at(200), metadata={"message_id": "1714557600.000100"})
    assert slack.metadata["message_id"] == "1714557600.000100"


def test_a_note_is_linked_to_the_two_notes_before_it_however_far_back_they_were_said(any_mem: Memory) -> None:
    """Notes 20 minutes apart (the gap is 30): each is one conversation with the two said before it, though the
    one two back is 40 minutes away (it used to get only the one before, and the first only one after)."""
    recs = [any_mem.add(f"standup note {k}: deploy {k} is green", scope=DANA, occurred_at=at(20 * k)) for k in range(4)]
    notes = sorted(any_mem.list(scope=DANA, limit=10), key=lambda r: r.metadata["position"])
    mids = [r.metadata["message_id"] for r in notes]
    assert [r.id for r in notes] == [r.id for r in recs]
    assert notes[2].metadata["follows"] == mids[:2] and notes[0].metadata["followed_by"] == mids[1:3]
