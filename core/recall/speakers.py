"""A question that names someone who spoke ranks what that person said higher.

Messages from a conversation between named people carry their speaker (``metadata["speaker"]``, the message's
``name``; :mod:`remem.core.distill.episodes`). "What recipes has Nate made?" is answered by what Nate said far
more often than by what was said to him, but BM25 barely helps: Nate's name is in half the conversation's lines.
So a hit said by a person the question names gets its score multiplied by :data:`SPEAKER_BOOST` — a boost, not a
filter: what the other person said still comes back when it matches better (LoCoMo through ``remember()``, BM25
only: any@10 0.888 -> 0.890 / 0.894 / 0.890 at 1.3 / 1.6 / 2.5, answer tokens 0.759 -> 0.766 at 1.6; minilm at
1.6: 0.885 -> 0.892). Conversations without names (a coding assistant's user and assistant) are unaffected.
A name that is also a word (Will, May, Mark) is named only as a name: capitalised, and not as the question word
opening a sentence ("Will Ana come?").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from typing import Sequence

from ..types import SearchHit

SPEAKER_BOOST = 1.5
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")
# words a name part must not be: a speaker "The Doctor" or "A" is not named by "the" or "a"
_NOT_NAMES = frozenset("a an the i me my we you he she it they of to in on at by for and or is was what who "
                       "user assistant system bot ai".split())
# words that open a question: capitalised there for the sentence's sake, not as a name ("Will Ana come?")
_QUESTION_WORDS = frozenset("will may can could would should shall must might did do does is are was were has have "
                            "had what when where who whom whose why how which if".split())
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|[.!?][\"'\u201d)]\s*)\W*$")


def _composed(text: str) -> str:
    """Unicode composition and apostrophes folded, case kept: "Jose\u0301" = "José", "O’Brien" = "O'Brien"."""
    return unicodedata.normalize("NFC", text).replace("\u2019", "'")


def _fold(text: str) -> str:
    """:func:`_composed`, and case folded: "José" = "Jose\u0301", "O’Brien" = "o'brien"."""
    return _composed(text).casefold()


def _names(query: str) -> set[str]:
    """The question's words that can name someone, folded, possessives as the name ("Nate's" -> "nate").

    Names are written with a capital: in a question that has capitals, a word in lower case is not a name, so a
    speaker called Will, May or Mark is not named by "what will Ana bring?" or "did she mark the date?"; a
    capitalised question word opening a sentence ("Will Ana come?") is not one either. A question written all
    in lower case cannot say, so each of its words may be a name."""
    text = _composed(query)
    cased = any(c.isupper() for c in text)
    names = set()
    for m in _WORD.finditer(text):
        word = m.group(0)
        if cased and not word[0].isupper():
            continue
        folded = re.sub(r"'s$", "", word.casefold())
        if cased and folded in _QUESTION_WORDS and _SENTENCE_START.search(text[max(0, m.start() - 64):m.start()]):
            continue
        names.add(folded)
    return names


def _named(speaker: object, words: set[str]) -> bool:
    """Whether the question names ``speaker``: their whole name, or its first word ("Ana" for "Ana Lima"); name
    parts of one letter or that are common words never count."""
    if not isinstance(speaker, str):
        return False
    parts = [p for p in _WORD.findall(_fold(speaker)) if len(p) > 1 and p not in _NOT_NAMES]
    return bool(parts) and parts[0] in words


def boost_named_speakers(hits: Sequence[SearchHit], query: str) -> list[SearchHit]:
    """``hits`` re-ranked with what a speaker the question names said scored :data:`SPEAKER_BOOST` higher.
    Unchanged, in order, when no hit's speaker is named."""
    words = _names(query)
    boosted = [replace(h, score=h.score * SPEAKER_BOOST)
               if any(_named(r.metadata.get("speaker"), words) for r in h.records) else h for h in hits]
    if all(b is h for b, h in zip(boosted, hits)):
        return list(hits)
    return sorted(boosted, key=lambda h: h.score, reverse=True)


__all__ = ["SPEAKER_BOOST", "boost_named_speakers"]
