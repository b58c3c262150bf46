"""A question that names someone who spoke ranks what that person said higher.

Messages from a conversation between named people carry their speaker (``metadata["speaker"]``, the message's
``name``; :mod:`remem.core.distill.episodes`). "What recipes has Nate made?" is answered by what Nate said far
more often than by what was said to him, but BM25 barely helps: Nate's name is in half the conversation's lines.
So a hit said by a person the question names gets its score multiplied by :data:`SPEAKER_BOOST` — a boost, not a
filter: what the other person said still comes back when it matches better (LoCoMo through ``remember()``, BM25
only: any@10 0.888 -> 0.890 / 0.894 / 0.890 at 1.3 / 1.6 / 2.5, answer tokens 0.759 -> 0.766 at 1.6; minilm at
1.6: 0.885 -> 0.892). Conversations without names (a coding assistant's user and assistant) are unaffected.
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


def _fold(text: str) -> str:
    """Case, Unicode composition and apostrophes folded: "José" = "Jose\u0301", "O’Brien" = "o'brien"."""
    return unicodedata.normalize("NFC", text).casefold().replace("\u2019", "'")


def _names(query: str) -> set[str]:
    """The question's words, folded, possessives as the name ("Nate's" -> "nate")."""
    return {re.sub(r"'s$", "", w) for w in _WORD.findall(_fold(query))}


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
