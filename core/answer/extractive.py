"""The keyless answer: the sentence(s) of the recalled passages that answer the question, cited.

Each recalled record is cut into sentences; a sentence is scored by the share of the question's content words it
holds (each weighed by how rare it is among the candidates, so a name every line repeats counts little), with
the words of its record around it counting half (who said it, the sentence before), times a prior that falls
with its hit's rank. The best sentence is the answer, with a second one when it is nearly as good and comes from
another record (a question asked across two memories). A "when" question is answered with the date the sentence
was said or happened (or the day it names: "yesterday" said on 8 May is 7 May).

Below :data:`FOUND_AT` coverage there is no answer: the question is about something memory does not hold, and
the best match would be a guess.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..recall.fencing import one_line
from .evidence import Item, citations
from .question import content_words, named, wants_time, words
from .result import Answer, not_found

FOUND_AT = 0.45  # share of the question's (weighted) words the best sentence must hold (tuned on LoCoMo, see bench)
SECOND_AT = 0.85  # a second sentence is added when it scores this share of the best
RANK_DECAY = 0.08  # prior of the hit at rank r: 1 / (1 + RANK_DECAY * r)
AROUND = 0.5  # weight of a word found only in the sentence's record around it
MAX_SENTENCE_CHARS = 400
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_SPEAKER = re.compile(r"^\s*([^\W\d_][\w .'-]{0,40}):\s+")


@dataclass(frozen=True)
class Sentence:
    item: Item
    text: str
    keys: frozenset[str]
    around: frozenset[str]


def sentences(item: Item) -> list[Sentence]:
    """The sentences of one record (a speaker's "Name: " prefix kept as context, not as answer)."""
    text = " ".join(item.record.text.split()) if "\n" not in item.record.text else item.record.text
    speaker = ""
    if (m := _SPEAKER.match(text)) is not None:
        speaker, text = m.group(1), text[m.end():]
    when = item.record.event_time  # "in June", "in 2022": the date it was said is part of what it says
    around = frozenset(words(f"{speaker} {item.record.metadata.get('speaker') or ''} {item.record.text} "
                             f"{when:%B} {when.year}"))
    out = []
    for part in _SPLIT.split(text):
        part = one_line(part)  # the answer quotes a memory: data, one line, no tag-like "<" (issue 44)
        if len(part) < 3:
            continue
        if len(part) > MAX_SENTENCE_CHARS:
            part = part[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
        out.append(Sentence(item=item, text=part, keys=frozenset(words(part)), around=around))
    return out


def _weights(question_keys: Sequence[str], pool: Sequence[Sentence], names: set[str]) -> dict[str, float]:
    """Each question word's weight: rarer among the candidates, heavier. A plain word no candidate holds weighs
    as the lightest one held: it cannot tell the candidates apart, and most often it is a word of the asking
    ("how does X work"). A name no candidate holds ("GraphQL") weighs the most: the question is about it."""
    n = len(pool) or 1
    df = {k: sum(1 for s in pool if holds(s.keys, k) or holds(s.around, k)) for k in question_keys}
    held = {k: math.log(1 + n / (1 + d)) + 0.1 for k, d in df.items() if d}
    floor = min(held.values(), default=1.0)
    return {k: held[k] if k in held else math.log(1 + n) + 0.1 if k in names else floor for k in question_keys}


def holds(keys: frozenset[str], key: str) -> bool:
    """Whether ``keys`` hold ``key``, or a word it starts ("OOM" in "OOMKilled") or that starts it ("lint" of
    "linter"): what the dictionary form does not join."""
    if key in keys:
        return True
    return any((len(key) >= 3 and k.startswith(key)) or (len(k) >= 4 and key.startswith(k)) for k in keys)


def score(sentence: Sentence, weights: dict[str, float]) -> float:
    """Weighted share of the question's words the sentence holds (those only around it count :data:`AROUND`)."""
    total = sum(weights.values())
    if not total:
        return 0.0
    got = sum(w if holds(sentence.keys, k) else AROUND * w if holds(sentence.around, k) else 0.0
              for k, w in weights.items())
    return got / total


def _same(a: str, b: str) -> bool:
    """One sentence retold (a memory distilled from a message says what the message said)."""
    x, y = set(words(a)), set(words(b))
    return len(x & y) >= 0.8 * min(len(x), len(y))


def when_said(sentence: Sentence) -> str:
    """The day a sentence tells of: the one it names relative to when it was said, else when it was said."""
    rec = sentence.item.record
    if rec.occurred_at is not None:
        from ..recall.timeframe import mentions

        found = mentions(sentence.text, rec.occurred_at)
        if found:
            m = found[0]
            return _day(m.start) if (m.end - m.start).days <= 1 else m.describe()
    return _day(rec.event_time)


def _day(when: Any) -> str:
    return f"{when.day} {when:%B %Y}"


def answer(question: str, items: Sequence[Item]) -> Answer:
    """The extractive answer to ``question`` from the recalled ``items`` (in rank order)."""
    keys = content_words(question)
    pool = [s for it in items for s in sentences(it)]
    if not keys or not pool:
        return not_found("extractive")
    weights = _weights(keys, pool, named(question))
    ranked = sorted(((score(s, weights) / (1 + RANK_DECAY * s.item.rank), score(s, weights), i, s)
                     for i, s in enumerate(pool)), key=lambda t: (-t[0], t[2]))
    best_prior, best_cover, _, best = ranked[0]
    if best_cover < FOUND_AT:
        return not_found("extractive")
    chosen = [best]
    for prior, cover, _, s in ranked[1:4]:
        if (s.item.record.id != best.item.record.id and cover >= FOUND_AT and prior >= SECOND_AT * best_prior
                and not _same(s.text, best.text)):
            chosen.append(s)
            break
    text = " ".join(s.text for s in chosen)
    if wants_time(question):
        text = f"{when_said(best)}: {text}"
    confidence = round(min(1.0, best_prior), 3)
    return Answer(text=text, citations=citations(s.item for s in chosen), confidence=confidence, found=True,
                  method="extractive")


__all__ = ["FOUND_AT", "answer", "score", "sentences"]
