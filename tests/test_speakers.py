"""A question naming a person who spoke ranks what that person said higher, on the real store.

What users rely on: in a conversation between named people, "what did Ana ...?" brings Ana's own words first,
what was said to her still comes back, and a conversation without names is ranked as before.
"""

from __future__ import annotations

from typing import Any

from remem import Memory, Scope
from remem.core.recall.speakers import boost_named_speakers

SCOPE = Scope(tenant="club")


def line(name: str | None, mid: str, text: str) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "user", "content": text, "id": mid, "timestamp": "2024-05-02T18:00:00Z"}
    return {**msg, "name": name} if name else msg


def test_what_the_named_person_said_comes_first_and_the_rest_still_comes(mem: Memory) -> None:
    # Ben's line matches the question a little better (it even names Ana); Ana's says what she baked
    for session, msg in (("s1", line("Ben", "b1", "Ana, I baked bread for our picnic and baked buns.")),
                         ("s2", line("Ana", "a1", "For the picnic I baked a plum cake.")),
                         ("s3", line("Ben", "b2", "The lake is lovely on Saturdays."))):
        mem.remember([msg], scope=SCOPE, session=session)  # one message a session: no passages joined
    ana = mem.search("What did Ana bake for the picnic?", scope=SCOPE, kind="episode", limit=3)
    assert [h.sources for h in ana[:2]] == [("a1",), ("b1",)]  # a boost, not a filter: Ben's line still comes
    plain = mem.search("What was baked for the picnic?", scope=SCOPE, kind="episode", limit=3)
    assert plain[0].sources == ("b1",)  # no name, no boost: the best match first


def test_names_match_whole_words_possessives_and_first_names_only() -> None:
    from remem import MemoryRecord, SearchHit

    def hit(speaker: str | None, score: float) -> SearchHit:
        meta = {"speaker": speaker} if speaker else {}
        return SearchHit(record=MemoryRecord(id=f"{speaker}-{score}", text="x", kind="episode", scope=SCOPE,
                                             metadata=meta), score=score, relevance=score)

    hits = [hit("Benedict", 1.0), hit("Ana Lima", 0.9), hit(None, 0.8)]
    assert [h.record.id for h in boost_named_speakers(hits, "What is Ana's favourite cake?")][0] == "Ana Lima-0.9"
    assert boost_named_speakers(hits, "What did Ben say?") == hits  # "Ben" is not "Benedict"
    assert boost_named_speakers(hits, "what did the team decide?") == hits
    assert boost_named_speakers(hits, "Anatomy class notes") == hits


def boosted(speaker: str, query: str) -> bool:
    """Whether a line said by ``speaker`` is lifted above a slightly better one by ``query``."""
    from remem import MemoryRecord, SearchHit

    hits = [SearchHit(record=MemoryRecord(id="other", text="x", kind="episode", scope=SCOPE), score=1.0,
                      relevance=1.0),
            SearchHit(record=MemoryRecord(id="them", text="x", kind="episode", scope=SCOPE,
                                          metadata={"speaker": speaker}), score=0.9, relevance=0.9)]
    return boost_named_speakers(hits, query)[0].record.id == "them"


def test_odd_names_are_matched_by_what_they_are_not_by_common_words() -> None:
    assert not boosted("A", "what is a good name for a dog?") and not boosted("I", "what did I say about Kafka?")
    assert not boosted("The Doctor", "what did the user decide?") and not boosted("user", "what did the user want?")
    assert boosted("The Doctor", "what did the Doctor prescribe?")
    assert boosted("O'Brien", "what did O’Brien say?") and boosted("José", "what did Jose\u0301 say?")
    assert boosted("Bob", "What did Bob’s sister say?") and not boosted("", "anything")


def test_a_name_that_is_also_a_word_is_named_only_as_a_name() -> None:
    # Will, May and Mark are people here; "will", "may" and "mark" in a question are not them
    assert not boosted("Will", "What will Ana bring to the picnic?")
    assert not boosted("Will", "Will Ana bring bread?") and not boosted("May", "May I see what Ana wrote?")
    assert not boosted("Mark", "Did Ana mark the date?")
    assert boosted("Will", "What did Will bring?") and boosted("May", "Will May bring bread?")
    assert boosted("Mark", "Mark's plan? What was it") and boosted("Nate", "Nate said what about it?")
    assert boosted("Will", "what did will bring?")  # all in lower case: any word may be a name
