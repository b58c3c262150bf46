"""A dated note said between stored notes of its thread goes between them, in date order.

What users rely on: a message that arrives late, or a history back-filled out of order, reads where it was said:
``search()`` and ``context()`` show it between the messages dated around it, it is found by their words and they
by its words, the messages it now stands between no longer carry the words of messages that are not their
neighbours any more, and forgetting it leaves none of its words with them. Real stores (Qdrant Edge,
qdrant-client local mode).
"""

from __future__ import annotations

from typing import Any

from remem import Memory, Scope
from thread_clock import DANA, at


# said at minutes 0..4; the one at minute 2 arrives last
CHAT = ["Ben: Are you coming to the offsite in Lisbon?",
        "Ana: Yes, I booked my flight yesterday.",
        "Ben: Which hotel did the organisers pick?",
        "Ana: The Bairro Alto one, close to the tram stop.",
        "Ben: Great, see you at breakfast then."]
LATE = 2


def with_late_message(mem: Memory) -> dict[str, Any]:
    """The chat stored one message at a time, the one at minute 2 last: the stored records by text."""
    for i, text in enumerate(CHAT):
        if i != LATE:
            mem.add(text, scope=DANA, occurred_at=at(i), sources=[f"m{i}"])
    mem.add(CHAT[LATE], scope=DANA, occurred_at=at(LATE), sources=[f"m{LATE}"])
    return {r.text: r for r in mem.list(scope=DANA, limit=100)}


def in_date_order(records: Any) -> bool:
    dates = [r.occurred_at for r in records]
    return dates == sorted(dates)


def test_a_late_message_is_shown_between_the_messages_dated_around_it(mem: Memory) -> None:
    with_late_message(mem)
    [hit, *_] = mem.search("which hotel did they pick, near the tram", scope=DANA, limit=3)
    said = [r.text for r in hit.records]
    assert CHAT[LATE] in said and len(said) > 1, said
    assert in_date_order(hit.records), said  # a passage reads in the order said: the late one in its place
    ctx = mem.context("which hotel did they pick, near the tram", scope=DANA, token_budget=300)
    assert ctx.index("Which hotel did the organisers pick") < ctx.index("The Bairro Alto one"), ctx
    notes = sorted(mem.list(scope=DANA, limit=100), key=lambda r: r.metadata["position"])
    assert [r.text for r in notes] == CHAT  # its thread's order is the order said
    assert len({r.metadata["thread"] for r in notes}) == 1


def test_the_messages_around_a_late_one_are_relinked_and_find_it(any_mem: Memory) -> None:
    """Its past is the two said before it, its sequel the two said after; they name it (and are found by its
    words), and a message it now stands between keeps no words of one that is no longer its neighbour."""
    mem = any_mem
    by_text = with_late_message(mem)
    late, before, after = by_text[CHAT[LATE]], by_text[CHAT[LATE - 1]], by_text[CHAT[LATE + 1]]
    assert late.metadata["follows"] == ["m0", "m1"] and late.metadata["followed_by"] == ["m3", "m4"]
    assert late.context.index(CHAT[1]) < late.context.index(CHAT[3]) and CHAT[4] in late.context
    assert before.metadata["followed_by"] == ["m2", "m3"] and CHAT[4] not in before.context
    assert after.metadata["follows"] == ["m1", "m2"] and CHAT[0] not in after.context
    first, last = by_text[CHAT[0]], by_text[CHAT[4]]
    assert first.metadata["followed_by"] == ["m1", "m2"] and CHAT[3] not in first.context
    assert last.metadata["follows"] == ["m2", "m3"] and CHAT[1] not in last.context
    # found by the words of the late message: the one said just before it, which the search shows with it
    found = [r.text for h in mem.search("organisers hotel", scope=DANA, limit=5) for r in h.records]
    assert CHAT[LATE - 1] in found and CHAT[LATE] in found
    # and the late message by the words said just before it (what it answers)
    found = [r.text for h in mem.search("booked flight yesterday", scope=DANA, limit=5) for r in h.records]
    assert CHAT[LATE] in found, found


def test_forgetting_a_late_message_leaves_its_words_nowhere_and_shows_the_gap(mem: Memory) -> None:
    by_text = with_late_message(mem)
    mem.forget(by_text[CHAT[LATE]].id, scope=DANA)
    left = mem.list(scope=DANA, limit=100)
    assert len(left) == 4 and not any("organisers" in (r.context or "") + r.text for r in left)
    assert not [h for h in mem.search("organisers", scope=DANA, limit=5) if "organisers" in h.text]
    # the messages it stood between show that something was said between them
    ctx = mem.context("booked my flight, Bairro Alto hotel", scope=DANA, token_budget=300)
    lines = ctx.splitlines()
    flight = next(k for k, line in enumerate(lines) if "booked my flight" in line)
    assert "… " in lines[flight + 1] and "Bairro Alto" in lines[flight + 1], ctx
    # a neighbour forgotten after the insertion leaves no words in the late message's place either
    mem.forget(by_text[CHAT[3]].id, scope=DANA)
    assert not any("Bairro" in (r.context or "") for r in mem.list(scope=DANA, limit=100))


def test_one_call_places_notes_between_and_after_stored_ones(any_mem: Memory) -> None:
    """A batch back-filling gaps of a stored thread (in any order) and continuing it: one chain in date order,
    each note continuing the two said before it and continued by the two after it."""
    mem = any_mem
    texts = [f"note {k}: the {w} step of the rollout" for k, w in enumerate(
        ["first", "second", "third", "fourth", "fifth", "sixth", "seventh"])]
    mem.add_many([{"text": texts[k], "occurred_at": at(k)} for k in (0, 2, 4)], scope=DANA)
    mem.add_many([{"text": texts[k], "occurred_at": at(k)} for k in (5, 3, 1, 6)], scope=DANA)
    notes = sorted(mem.list(scope=DANA, limit=100), key=lambda r: r.metadata["position"])
    assert [r.text for r in notes] == texts
    assert len({r.metadata["thread"] for r in notes}) == 1
    ids = [r.metadata["message_id"] for r in notes]
    for k, rec in enumerate(notes):
        assert rec.metadata.get("follows", []) == ids[max(0, k - 2):k], (k, rec.text)
        assert rec.metadata.get("followed_by", []) == ids[k + 1:k + 3], (k, rec.text)
        near = {t for j, t in enumerate(texts) if 0 < abs(j - k) <= 2}
        assert {t for t in texts if t in (rec.context or "")} == near, (k, rec.context)


def test_a_named_thread_synced_out_of_order_reads_in_date_order(mem: Memory) -> None:
    """A channel synced page by page, newest first: each page's messages go where they were said, before the
    newer ones (a named thread has no gap: hours apart are still one thread)."""
    chan = {"thread": "#deploys"}
    said = ["deploy 1 went out at nine", "deploy 2 rolled back", "deploy 3 fixed the cache", "deploy 4 is green"]
    mem.add_many([{"text": t, "occurred_at": at(60 * k), "metadata": chan} for k, t in enumerate(said) if k >= 2],
                 scope=DANA)
    mem.add_many([{"text": t, "occurred_at": at(60 * k), "metadata": chan} for k, t in enumerate(said) if k < 2],
                 scope=DANA)
    notes = sorted(mem.list(scope=DANA, limit=100), key=lambda r: r.metadata["position"])
    assert [r.text for r in notes] == said
    assert notes[2].metadata["follows"] == [notes[0].metadata["message_id"], notes[1].metadata["message_id"]]
    [hit] = mem.search("deploy rolled back", scope=DANA, limit=1)
    assert in_date_order(hit.records) and said[1] in hit.text



def test_a_late_message_finds_its_place_in_a_long_busy_thread(any_mem: Memory) -> None:
    """More notes around it than a lookup reads at once: a message said early in a busy chat (40 messages in
    seven minutes) and a channel back-filled with a long older history, then continued, still read in date
    order."""
    mem = any_mem
    busy = [{"text": f"chat line {k}: item {k * 7 % 40} is {'ok' if k % 2 else 'late'}",
             "occurred_at": at(k / 6)} for k in range(40)]
    mem.add_many(busy, scope=DANA)
    late = mem.add("Ana: the lost message about the cache", scope=DANA, occurred_at=at(5 / 6 + 0.05))
    chat = sorted(mem.list(scope=DANA, limit=100), key=lambda r: r.metadata["position"])
    assert len({r.metadata["thread"] for r in chat}) == 1
    assert [r.text for r in chat].index(late.text) == 6 and in_date_order(chat)
    assert late.metadata["follows"] == [chat[4].metadata["message_id"], chat[5].metadata["message_id"]]
    ops = Scope(tenant="acme", user="ops")
    chan = {"thread": "#ops"}
    mem.add_many([{"text": f"ops day {d}: all green", "occurred_at": at(1440 * d), "metadata": chan}
                  for d in range(100, 105)], scope=ops)
    mem.add_many([{"text": f"ops day {d}: backup ran", "occurred_at": at(1440 * d), "metadata": chan}
                  for d in range(40)], scope=ops)  # the channel's older history, synced after
    mem.add("ops day 105: new release", scope=ops, occurred_at=at(1440 * 105), metadata=chan)
    mem.add("ops day 50: disk replaced", scope=ops, occurred_at=at(1440 * 50), metadata=chan)
    notes = sorted(mem.list(scope=ops, limit=100), key=lambda r: r.metadata["position"])
    assert len(notes) == 47 and in_date_order(notes)
    positions = [r.metadata["position"] for r in notes]
    assert all(isinstance(p, int) for p in positions) and len(set(positions)) == 47  # whole numbers, none shared
    assert notes[-1].text == "ops day 105: new release" and notes[40].text == "ops day 50: disk replaced"


def positions(mem: Memory, scope: Scope = DANA) -> dict[str, int]:
    return {r.id: r.metadata["position"] for r in mem.list(scope=scope, limit=1000)}


def linked_in_date_order(mem: Memory, scope: Scope = DANA) -> list[Any]:
    """The scope's notes in their thread's order, checked: one thread, date order, each note's links the two
    notes said before it and the two after."""
    notes = sorted(mem.list(scope=scope, limit=1000), key=lambda r: r.metadata["position"])
    assert len({r.metadata["thread"] for r in notes}) == 1 and in_date_order(notes)
    mids = [r.metadata["message_id"] for r in notes]
    for k, r in enumerate(notes):
        assert r.metadata.get("follows", []) == mids[max(0, k - 2):k], (k, r.text)
        assert r.metadata.get("followed_by", []) == mids[k + 1:k + 3], (k, r.text)
    return notes


def test_a_channel_synced_newest_page_first_reads_in_date_order_and_moves_nothing(any_mem: Memory) -> None:
    """A named channel of 150 messages synced in pages of 25, newest page first: every page goes before the
    pages stored, no stored message changes position, and the whole channel reads as one conversation."""
    mem, chan = any_mem, {"thread": "#sync"}
    for page in range(5, -1, -1):
        before = positions(mem)
        mem.add_many([{"text": f"sync line {k}: build {k * 37 % 101} is green", "occurred_at": at(k),
                       "metadata": chan} for k in range(25 * page, 25 * page + 25)], scope=DANA)
        after = positions(mem)
        assert all(after[i] == pos for i, pos in before.items())  # nothing stored moved
    notes = linked_in_date_order(mem)
    assert [r.text for r in notes] == [f"sync line {k}: build {k * 37 % 101} is green" for k in range(150)]
    [hit] = mem.search("sync line 75 build", scope=DANA, limit=1)  # a passage across two pages, in order
    assert in_date_order(hit.records) and len(hit.records) > 1


def test_a_chat_back_filled_newest_first_without_a_thread_name_is_one_conversation(any_mem: Memory) -> None:
    """Dated notes with no thread name, one minute apart, back-filled newest first, one by one and in pages of
    ten (a page's first note is further from the stored ones than the thread gap): one thread in date order
    (each page used to start a thread of its own), nothing stored moved."""
    mem, paged = any_mem, Scope(tenant="acme", user="paged")
    for k in range(39, -1, -1):
        before = positions(mem)
        mem.add(f"chat line {k}: item {k * 7 % 40}", scope=DANA, occurred_at=at(k))
        assert all(positions(mem)[i] == pos for i, pos in before.items())
    linked_in_date_order(mem)
    for page in range(5, -1, -1):
        before = positions(mem, paged)
        mem.add_many([{"text": f"paged line {k}", "occurred_at": at(10 * k)} for k in range(10 * page, 10 * page + 10)],
                     scope=paged)
        assert all(positions(mem, paged)[i] == pos for i, pos in before.items())
    assert [r.text for r in linked_in_date_order(mem, paged)] == [f"paged line {k}" for k in range(60)]


def test_one_call_with_a_note_older_than_the_thread_and_a_late_one_keeps_one_thread(any_mem: Memory) -> None:
    mem = any_mem
    mem.add_many([{"text": f"standup {k}: all good", "occurred_at": at(10 + k)} for k in range(5)], scope=DANA)
    mem.add_many([{"text": "standup early: kickoff", "occurred_at": at(8)},
                  {"text": "standup late: the lost note", "occurred_at": at(12.5)}], scope=DANA)
    notes = linked_in_date_order(mem)
    assert [r.text for r in notes][:1] + [r.text for r in notes][4:5] == ["standup early: kickoff",
                                                                          "standup late: the lost note"]


def test_a_note_said_between_with_more_later_notes_than_may_move_goes_after_the_last(mem: Memory) -> None:
    """A note said after the thread's first but before more of it than may move for it goes after the last, as
    before insertion existed: a late note must not rewrite a long thread."""
    chan = {"thread": "#sync"}
    mem.add("sync kickoff", scope=DANA, occurred_at=at(0), metadata=chan)
    mem.add_many([{"text": f"sync line {k}", "occurred_at": at(100 + k), "metadata": chan} for k in range(80)],
                 scope=DANA)
    before = positions(mem)
    late = mem.add("sync line from the older page", scope=DANA, occurred_at=at(10), metadata=chan)
    after = positions(mem)
    assert all(after[i] == pos for i, pos in before.items())  # nothing of the 81 moved
    assert after[late.id] > max(before.values())


def test_a_neighbour_that_cannot_be_relinked_costs_neither_the_note_nor_a_forget(any_mem: Memory) -> None:
    """The relink of a note next to the new one fails (the disk): the new note is stored, add() answers, and a
    forget of it leaves its words found nowhere."""
    mem = any_mem
    for i, text in enumerate(CHAT):
        if i != LATE:
            mem.add(text, scope=DANA, occurred_at=at(i), sources=[f"m{i}"])
    backend = mem._connection.local.backend
    write, calls = backend.upsert, []

    def fails_after_the_note(points):  # type: ignore[no-untyped-def]
        calls.append(len(points))
        if len(calls) == 2:  # the first write stores the note, the next one relinks a neighbour
            raise OSError(28, "No space left on device")
        return write(points)

    backend.upsert = fails_after_the_note  # type: ignore[method-assign]
    try:
        late = mem.add("Ben: the zanzibar hotel was booked by the organisers", scope=DANA, occurred_at=at(LATE),
                       sources=[f"m{LATE}"])
    finally:
        backend.upsert = write  # type: ignore[method-assign]
    assert len(calls) >= 2 and mem.get(late.id, scope=DANA) is not None
    assert mem.forget(late.id, scope=DANA) is True
    assert not [h for h in mem.search("zanzibar", scope=DANA, limit=10) if "zanzibar" in (h.record.context or "")
                or "zanzibar" in h.text]


def test_a_superseded_note_is_no_member_of_its_thread_when_a_late_one_comes(mem: Memory) -> None:
    chan = {"thread": "#codes"}
    recs = [mem.add(f"code line {k}: value {k}", scope=DANA, occurred_at=at(k), metadata=chan) for k in (0, 1, 3, 4)]
    mem.supersede(recs[2].id, "code line 3: value 4417 newcode", scope=DANA)
    late = mem.add("code line 2: value 2", scope=DANA, occurred_at=at(2), metadata=chan)
    links = late.metadata.get("follows", []) + late.metadata.get("followed_by", [])
    assert len(links) == len(set(links))  # no message named twice
    current = [r for r in mem.list(scope=DANA, limit=50) if "newcode" in r.text]
    assert current and all("code line 3: value 3" not in (r.context or "") for r in current)  # not its old text


def test_an_undated_note_of_a_named_thread_does_not_stop_a_back_fill(mem: Memory) -> None:
    chan = {"thread": "#standup"}
    mem.add("standup at ten: api is green", scope=DANA, occurred_at=at(60), metadata=chan)
    mem.add("standup note without a date", scope=DANA, metadata=chan)
    mem.add("standup at twelve: deploy done", scope=DANA, occurred_at=at(180), metadata=chan)
    early = mem.add("standup at nine: kickoff", scope=DANA, occurred_at=at(0), metadata=chan)
    notes = sorted(mem.list(scope=DANA, limit=50), key=lambda r: r.metadata["position"])
    assert notes[0].id == early.id


def test_notes_said_before_a_thread_go_first_whatever_else_the_call_or_the_thread_holds(any_mem: Memory) -> None:
    """Going first holds next to a late note that may not move the thread (it goes after the last), after a
    note placed out of date order, past an undated note and a corrected first message: every position once,
    each note linked to the notes really next to it."""
    mem, chan = any_mem, {"thread": "#long"}
    mem.add_many([{"text": f"msg {k}", "occurred_at": at(100 + k), "metadata": chan} for k in range(100)],
                 scope=DANA)
    mem.add_many([*({"text": f"early {k}", "occurred_at": at(10 + k), "metadata": chan} for k in range(4)),
                  {"text": "late between", "occurred_at": at(110.5), "metadata": chan}], scope=DANA)
    mem.add("oldest", scope=DANA, occurred_at=at(0), metadata=chan)
    mem.add("pinned rules", scope=DANA, metadata=chan)  # undated: after the last
    notes = sorted(mem.list(scope=DANA, limit=200), key=lambda r: r.metadata["position"])
    texts = [r.text for r in notes]
    assert texts[:6] == ["oldest", "early 0", "early 1", "early 2", "early 3", "msg 0"]
    assert texts[-2:] == ["late between", "pinned rules"]  # would have moved 89: after the last, as before
    assert len({r.metadata["position"] for r in notes}) == len(notes)
    mids = {r.text: r.metadata["message_id"] for r in notes}
    assert notes[0].metadata["followed_by"] == [mids["early 0"], mids["early 1"]]
    mem.add("older still", scope=DANA, occurred_at=at(-5), metadata=chan)  # the late note is dated before msg 11
    again = sorted(mem.list(scope=DANA, limit=200), key=lambda r: r.metadata["position"])
    assert [r.text for r in again][:2] == ["older still", "oldest"]
    assert len({r.metadata["position"] for r in again}) == len(again)


def test_a_page_of_an_unnamed_chat_and_a_late_note_in_one_call_join_the_thread_said_next(any_mem: Memory) -> None:
    mem = any_mem
    mem.add_many([{"text": f"x{k}", "occurred_at": at(100 + 10 * k)} for k in range(10)], scope=DANA)
    mem.add_many([*({"text": f"p{k}", "occurred_at": at(60 + 10 * k)} for k in range(3)),
                  {"text": "late between x3 and x4", "occurred_at": at(135)}], scope=DANA)
    texts = [r.text for r in linked_in_date_order(mem)]
    assert texts[:4] == ["p0", "p1", "p2", "x0"] and texts.index("late between x3 and x4") == 7
