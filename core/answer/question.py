"""Reading a question: its content words (in a form that matches inflections), and what sort of answer it wants.

Words are compared by a key: the dictionary form (simplemma, which recall already depends on, so "met" matches
"meet") with a plain suffix cut on top ("painting"/"painted"/"paints" -> "paint"). A question's own words
("what", "did", "many") are not content: they appear in every sentence and say nothing about where the answer is.
"""

from __future__ import annotations

import functools
import re
from typing import Callable

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
STOP = frozenset("""
a an the and or but if of to in on at by for with from as is are was were be been being it its it's this that these
those there their them they then than into about over would could should will can may might must shall our ours
his her hers him she he i me my mine we us you your yours do does did doing done have has had having not no so up
what which who whom whose when where why how whats anything something some any all every each also just very
ever still yet too more most much many often times time kind sort thing things one ones get got go went gone make
made like say said tell told know think thought way s t ll ve re d m let lets please use uses used using
work works worked happen happened
""".split())
COUNT_RE = re.compile(r"\b(?:how many|how often|number of|count of|list (?:all|every|the|of)|what are all|name all|"
                      r"all (?:the )?(?:\w+ ){0,2}(?:that|which|who|we|i|you|she|he|they)\b|every (?:\w+ ){0,2}"
                      r"(?:that|which|we|i|you|she|he|they)\b|which \w+ (?:has|have|did) .* all\b)", re.I)
TIME_RE = re.compile(r"^\s*(?:when\b|what (?:date|day|year|month|time|week)\b|in (?:what|which) (?:year|month)\b|"
                     r"how long ago\b|since when\b)", re.I)
_SUFFIXES = ("ings", "ing", "edly", "ed", "ies", "es", "s", "ly")


@functools.lru_cache(maxsize=1)
def _lemmatizer() -> Callable[[str], str]:
    try:
        import simplemma
    except ImportError:  # keyless answers still work on the suffix cut alone
        return lambda word: word
    return lambda word: simplemma.lemmatize(word, lang="en", low_memory=True)


@functools.lru_cache(maxsize=65536)
def key(word: str) -> str:
    """The form two words are compared in: lower-cased, dictionary form, common suffix cut."""
    low = word.lower().replace("'", "")
    try:
        low = _lemmatizer()(low).lower() or low
    except Exception:  # noqa: BLE001 - a dictionary problem costs this word its base form, nothing more
        pass
    for suffix in _SUFFIXES:
        if low.endswith(suffix) and len(low) - len(suffix) >= 4:
            low = low[: -len(suffix)]
            break
    return low


def words(text: str) -> list[str]:
    """Every word of ``text``, as keys (stop words included)."""
    return [key(w) for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """The words of ``text`` that say what it is about, as keys, each once, in order."""
    out: dict[str, None] = {}
    prev = ""
    for raw in _WORD.findall(text):
        low = raw.lower().replace("'", "")
        after_how, prev = prev == "how", low  # "how long", "how far": asking words, not the topic
        if after_how or low in STOP or (len(low) < 3 and not (raw.isupper() or any(c.isdigit() for c in raw))):
            continue
        k = key(raw)
        if k not in STOP:
            out[k] = None
    return list(out)


def named(text: str) -> set[str]:
    """The keys of the words in ``text`` that name something (a capital inside the sentence, a digit, a capital
    inside the word: "GraphQL", "Kafka", "v2"): what a question asks about, not how it asks."""
    out = set()
    for i, m in enumerate(_WORD.finditer(text)):
        raw = m.group(0)
        if raw.lower() in STOP:
            continue
        if (i > 0 and raw[0].isupper()) or any(c.isdigit() for c in raw) or any(c.isupper() for c in raw[1:]):
            out.add(key(raw))
    return out


def is_count(question: str) -> bool:
    """A "how many" / "list all" question: its answer is spread over every matching memory, not the top few."""
    return bool(COUNT_RE.search(question))


def wants_time(question: str) -> bool:
    """A "when" question: the answer is a date, which a memory holds as when it was said or happened."""
    return bool(TIME_RE.search(question))


__all__ = ["STOP", "content_words", "is_count", "key", "named", "wants_time", "words"]
