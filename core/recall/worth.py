"""Which recalled records are worth a reader's attention in a coding agent's prompt: not a question, not filler.

A user's earlier question ("How do we deploy this service?") recalled as a memory tells the model nothing: the
answer does, and the question stays in the store as the answer's context (an episode is indexed with the
messages around it). Filler ("thanks!", "ok", "You're welcome!") says nothing at all. So the Claude Code prompt
hook leaves out:

* a user message that asks something (a sentence ending in "?"): its statements are the question's context;
* any record whose every sentence is a question or filler (an assistant's "What do you use?", a session
  summary that only says what the user asked).

Stdlib only: the prompt hook imports this on its hot path.
"""

from __future__ import annotations

import re
from typing import Any

from .repeats import EPISODE_KIND, words

FILLER_WORDS = frozenset("""
ok okay k kk yes y yep yeah yup no nope n sure thanks thank you ty thx cheers welcome re youre anytime np problem
noted got it understood great cool nice perfect good awesome fine alright right lgtm done hi hello hey bye
please go ahead on continue proceed sounds looks makes sense agreed will do so much a lot again very the that
this for glad to help happy of course
""".split())
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_LABEL = re.compile(r"^(?:session summary|summary|the user asked|then|outcome|user|assistant)\s*[.:]?\s*", re.I)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text or "") if _WORD.search(s)]


def is_filler(text: str) -> bool:
    """Nothing but acknowledgement, thanks, greeting or emoji ("thanks!", "ok 👍", "You're welcome!")."""
    words = _WORD.findall((text or "").lower())
    return all(w in FILLER_WORDS for w in words)


def _asks(sentence: str) -> bool:
    return sentence.rstrip(" \"')]").endswith("?")


def is_question(text: str) -> bool:
    """Some sentence asks something."""
    return any(_asks(s) for s in sentences(text))


def says_nothing(text: str) -> bool:
    """Every sentence (a summary's labels, "The user asked:", left out) is a question or filler."""
    parts = [_LABEL.sub("", s) for s in sentences(text)]
    parts = [p for p in parts if _WORD.search(p)]
    return all(_asks(p) or is_filler(p) for p in parts)


ACK_WORDS = frozenset("noted got it understood ok okay sure thanks great will do right fine".split())


def echoes(rec: Any) -> bool:
    """An assistant's acknowledgement that repeats what it answers ("Noted: fly.io, app queue-svc." after the
    user said so): it opens with an acknowledgement and nearly all its other words are in the messages just
    before it (its recall ``context``)."""
    if rec.kind != EPISODE_KIND or (rec.metadata or {}).get("role") != "assistant" or not rec.context:
        return False
    first = _WORD.findall(sentences(rec.text)[0].lower())[:2] if sentences(rec.text) else []
    if not first or first[0] not in ACK_WORDS:
        return False
    own = words(rec.text) - FILLER_WORDS
    return bool(own) and len(own & words(rec.context)) >= 0.6 * len(own)


def worth_showing(rec: Any) -> bool:
    """False for a user's question, filler, and anything that only asks (see the module docstring)."""
    text = getattr(rec, "text", "") or ""
    if rec.kind == EPISODE_KIND and (rec.metadata or {}).get("role") == "user" and is_question(text):
        return False
    return not says_nothing(text)


__all__ = ["ACK_WORDS", "FILLER_WORDS", "echoes", "is_filler", "is_question", "says_nothing", "sentences", "worth_showing"]
