"""Base forms of English words for BM25, so "when did I meet Jean?" finds "I met Jean", and "which database did
we choose?" finds "we chose Postgres".

Qdrant's BM25 stems words (Snowball), which joins regular inflections (paint, painted, painting) but not
irregular ones: find/found, meet/met, choose/chose, write/wrote, child/children. So each word of a memory (and
of its context) whose base form stems differently has that base form added to the text BM25 indexes: the
memory is found by the base form, which is how questions ask ("did we choose", "when did she meet").

Queries are left as they are. Adding base forms to them too measured no better on LoCoMo (any@5 0.712 against
0.716 documents-only, any@10 0.802 both), and it would put the dictionary on every search's path: a search, and
so a prompt's recall, never loads it. The base forms come from simplemma's English dictionary, loaded once on
the first write in its low-memory form (about 0.15 s and 7 MB; the service loads it at start).

Measured on LoCoMo through ``remember()``, BM25 only: any@10 0.798 -> 0.802, any@5 0.705 -> 0.716.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Callable, Collection

log = logging.getLogger("remem.recall.lemmas")

_WORD = re.compile(r"(?<![\w-])[A-Za-z]{3,}(?![\w-])")  # a word, not a piece of found_items or Wi-Fi
MAX_WORD_CHARS = 30  # longer runs of letters are identifiers or noise, not words with a dictionary form
_SENTENCE_START = re.compile(r"(?:^|[.!?:\n]\s*|^\W+)$")
# base forms that say less than the word: "better" is not "good", the Lit framework is not "light", an LED is not
# "lead"
SKIPPED = frozenset({"good", "well", "light", "lead", "lie", "stick", "medium", "datum", "bad", "far"})


@functools.lru_cache(maxsize=1)
def _lemmatizer() -> Callable[[str], str] | None:
    try:
        import simplemma
    except ImportError:  # a broken install must not break recall: BM25 still works on the stems alone
        log.warning("simplemma is not installed: irregular word forms (met/meet) will not match")
        return None
    return lambda word: simplemma.lemmatize(word, lang="en", low_memory=True)


Terms = Callable[[str], Collection[int]]
"""The index terms a word is stored under (lexical.bm25_terms: its stem; none for a stopword)."""


@functools.lru_cache(maxsize=65536)
def base_form(word: str, terms: Terms) -> str:
    """``word``'s dictionary form when it is indexed under other ``terms`` than ``word``, else ``""``."""
    lemmatize = _lemmatizer()
    if lemmatize is None:
        return ""
    lower = word.lower()
    try:
        lemma = lemmatize(lower)
    except Exception as exc:  # noqa: BLE001 - a dictionary problem costs this word its base form, nothing more
        log.debug("lemmatizing %r failed: %s", lower, exc)
        return ""
    if lemma == lower or not lemma.isalpha() or lemma in SKIPPED:
        return ""
    wanted = terms(lemma)
    return lemma if wanted and set(wanted) != set(terms(lower)) else ""


def with_base_forms(text: str, terms: Terms) -> str:
    """``text`` followed by the base forms its words' ``terms`` would not reach (each once). Capitalised words
    inside a sentence are names and are left alone."""
    extra: dict[str, None] = {}
    for m in _WORD.finditer(text):
        word = m.group(0)
        if len(word) > MAX_WORD_CHARS:
            continue
        if word[0].isupper() and not _SENTENCE_START.search(text[max(0, m.start() - 3):m.start()]):
            continue  # a name mid-sentence ("Men at Work", "the Kinder app") has no dictionary form
        if lemma := base_form(word, terms):
            extra[lemma] = None
    return f"{text}\n{' '.join(extra)}" if extra else text


def warm() -> None:
    """Load the dictionary now (the service does, so a hook's first search does not pay for it)."""
    lemmatize = _lemmatizer()
    if lemmatize is not None:
        lemmatize("went")


__all__ = ["base_form", "warm", "with_base_forms"]
