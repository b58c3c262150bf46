"""How a name is compared: its key (what two spellings of one name share) and how much it says.

A key is casefolded NFKC text without accents, punctuation or a leading article, its words joined by one space:
"ClickHouse", "clickhouse" and "Click-House" share ``clickhouse``/``click house``'s squashed form (see
:func:`squashed`). Scripts without case or accents (CJK, Arabic, ...) keep their characters: a key is never empty
for a name that has letters.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter

_ARTICLES = ("the ", "a ", "an ", "our ", "my ", "their ", "your ")
_POSSESSIVE = re.compile(r"['’]s$|['’]$")
_NON_WORD = re.compile(r"[^\w.#@/+-]+|(?<!\w)[.#@/+-]+|[.#@/+-]+(?!\w)")
_SPACES = re.compile(r"\s+")


_FOLD = str.maketrans({"ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "ı": "i", "đ": "d", "Đ": "D", "æ": "ae",
                       "Æ": "AE", "œ": "oe", "Œ": "OE", "þ": "th", "ð": "d"})  # letters NFKD keeps whole


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@functools.lru_cache(maxsize=8192)  # names repeat: most mentions are of a name said before
def key(name: str) -> str:
    """The comparison key of ``name``: "Dana's" -> "dana", "The Ingest Worker" -> "ingest worker"."""
    ascii_ = name.isascii()  # NFKC and accent folding leave ASCII as it is: skipped
    text = (name if ascii_ else unicodedata.normalize("NFKC", name)).strip()
    text = _POSSESSIVE.sub("", text)
    text = (text if ascii_ else _strip_accents(text)).casefold()
    text = _SPACES.sub(" ", _NON_WORD.sub(" ", text)).strip()
    for article in _ARTICLES:
        if text.startswith(article) and len(text) > len(article):
            text = text[len(article):]
            break
    return text


def squashed(k: str) -> str:
    """A key without spaces, hyphens, dots or underscores: "click house", "click-house", "clickhouse" agree."""
    return re.sub(r"[\s_.-]+", "", k)


def entropy(text: str) -> float:
    """Shannon entropy of the characters (bits): "aaaa" says less than "kafka"."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def informative(k: str, *, min_chars: int = 6, min_entropy: float = 2.0) -> bool:
    """Whether a key says enough for a near-spelling to be trusted as the same name (a similarity gate refuses
    short or repetitive names: "Ann"/"Anne", "svc1"/"svc2", "aaab"/"aaac" are not merged on spelling)."""
    s = squashed(k)
    return len(s) >= min_chars and entropy(s) >= min_entropy


def words(k: str) -> list[str]:
    return [w for w in k.split(" ") if w]


__all__ = ["entropy", "informative", "key", "squashed", "words"]
