"""One sentence of a conversation while the keyless distiller picks and joins memories, and what it may be to the
sentences next to it: a reason for a decision, the cause of a fix, words it shares with another."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .admission import admit
from .candidates import Candidate
from .conversation import Turn
from .keyless_patterns import FIX_RE, REASON_HINT_RE, REASON_LABEL_RE

QUESTION_RE = re.compile(r"\?\s*$")


@dataclass
class Said:
    """One sentence of one turn while memories are being picked: its candidate (if any) and what it was joined
    with."""

    text: str
    ti: int
    turn: Turn
    scored: tuple[float, Candidate] | None
    consumed: bool = False
    cand: Candidate | None = None
    score: float = 0.0
    extra: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.scored is not None:
            self.score, self.cand = self.scored

    @property
    def turns(self) -> list[Turn]:
        return [self.turn, *self.extra]


def ended(text: str) -> str:
    """``text`` as a sentence: stripped, with its final stop."""
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def clip_words(text: str, n: int) -> str:
    """``text`` cut to its first ``n`` words, marked with "…" when cut."""
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]).rstrip(",;:") + " …"


def is_reason(it: Said) -> bool:
    return bool(REASON_HINT_RE.search(it.text) or REASON_LABEL_RE.match(it.text)) and not QUESTION_RE.search(
        it.text) and admit(it.text)


def plain_run(items: list[Said], start: int, ti: int, most: int = 3) -> list[Said]:
    """The sentences (or clauses) from ``start`` on, still in message ``ti``, that are no memory themselves."""
    run: list[Said] = []
    for x in items[start:start + most]:
        if x.ti != ti or x.cand is not None or x.consumed or QUESTION_RE.search(x.text):
            break
        run.append(x)
    return run


def is_cause(it: Said) -> bool:
    """A sentence that can carry the cause of the fix said after it: a lesson, a fact or event, or plain
    explanatory prose (not a question, a decision, a preference or a narration)."""
    if it.cand is not None:
        return it.cand.kind in ("lesson", "fact", "event") and not FIX_RE.search(it.text)
    return not QUESTION_RE.search(it.text) and admit(it.text) and len(it.text.split()) >= 5


_FUNCTION_WORDS = frozenset("that this with from have been were when then than they them their there what which "
                            "after before because into over just also again still only some made make".split())


def content_words_of(text: str) -> set[str]:
    """Words of four letters or more that are not function words (what a cause and its fix share)."""
    return {w for w in re.findall(r"[a-z][\w.-]*[a-z0-9]", text.lower()) if len(w) >= 4} - _FUNCTION_WORDS


def entities(text: str) -> set[str]:
    """Names and identifiers in ``text`` (what links a decision to the message that argued for it)."""
    from ..recall.lexical import identifiers

    caps = {w.lower() for w in re.findall(r"(?<![\w'])[A-Z][\w.+-]*\d*[\w]*", text) if w.lower() not in ("user", "i")}
    return caps | set(identifiers(text))


__all__ = ["QUESTION_RE", "Said", "clip_words", "content_words_of", "ended", "entities", "is_cause", "is_reason", "plain_run"]
