"""The sentences of a conversation while the keyless distiller picks and joins memories: how a message splits into
them, and what one may be to the sentences next to it (a reason for a decision, the cause of a fix, words it
shares with another)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..admission import admit
from ..artifacts import FENCE_RE
from ..candidates import Candidate
from ..conversation import Turn
from .cues import FIX_RE, REASON_HINT_RE, REASON_LABEL_RE

QUESTION_RE = re.compile(r"\?\s*$")


_SENT_SPLIT_RE = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])|"
    # "works locally?? it fails in CI": a question or exclamation ends a sentence in lower case too (not "with ?")
    r"(?:(?<=[a-z0-9][?!])|(?<=[a-z0-9][?!][?!]))\s+(?=[a-z])|"
    # a correction opens a sentence of its own ("use 4 spaces. sorry, I meant 2"); any other lower-case start
    # after a full stop does not: it cut causes from their fixes on unseen sessions
    r"(?<=[.!?])\s+(?=(?:sorry|oops|whoops|wait|hmm|actually|scratch that|no wait|correction|update)\b)|"
    # and so does a question: "we're on airflow 2.7 on MWAA. why would a task sit in queued forever?"
    r"(?<=[.!])\s+(?=[a-z][^.!?\n]*\?)|"
    r"(?<=[.!?])\s*\n|\n{2,}|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_BULLET_RE = re.compile(r"^\s*(?:[-*•>]+|\d+[.)]|#+)\s*")


_CODE_SPAN_RE = re.compile(r"(`[^`\n]*`)")


def _unbold(text: str) -> str:
    """``text`` without markdown bold markers, except inside code spans (``-keep class a.b.** { *; }``)."""
    return "".join(p if p.startswith("`") else p.replace("**", "") for p in _CODE_SPAN_RE.split(text))


def split_sentences(text: str) -> list[str]:
    """Prose sentences and bullet items, with code blocks removed."""
    prose = FENCE_RE.sub("\n\n", text or "")
    out = []
    for part in _SENT_SPLIT_RE.split(prose):
        part = _BULLET_RE.sub("", part.strip()).strip()
        part = re.sub(r"\s+", " ", _unbold(part)).strip(" *_")
        if part:
            out.append(part)
    return out


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


def prose_of(text: str) -> str:
    """``text`` on one line without its fenced code blocks: what a message says in words."""
    return " ".join(FENCE_RE.sub(" ", text).split())


def turn_groups(items: Sequence[Said]) -> list[list[Said]]:
    """``items`` grouped by the turn they come from, in the order of the turns (each group in the order said)."""
    by_turn: dict[int, list[Said]] = {}
    for it in items:
        by_turn.setdefault(it.ti, []).append(it)
    return [by_turn[ti] for ti in sorted(by_turn)]


def replies(items: Sequence[Said]) -> Iterator[tuple[list[Said], list[Said]]]:
    """Each user turn that answers an assistant turn, as (the assistant's sentences, the user's)."""
    groups = turn_groups(items)
    for offer, answer in zip(groups, groups[1:]):
        if (offer[0].turn.role, answer[0].turn.role) == ("assistant", "user"):
            yield offer, answer


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


NOT_WANTED_RE = re.compile(r"^(?:and\s+)?(?:we|i)\s+(?:don'?t|do not)\s+want\b", re.I)
"""A clause after a choice saying what it spares ("..., and we don't want to manage IAM roles"): its reason."""


def plain_run(items: list[Said], start: int, ti: int, most: int = 3) -> list[Said]:
    """The sentences (or clauses) from ``start`` on, still in message ``ti``, that are no memory themselves (or
    only a wish not to do something, :data:`NOT_WANTED_RE`)."""
    run: list[Said] = []
    for x in items[start:start + most]:
        if x.ti != ti or x.cand is not None and not NOT_WANTED_RE.match(x.text) or x.consumed \
                or QUESTION_RE.search(x.text):
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
    from ...recall.lexical import identifiers

    caps = {w.lower() for w in re.findall(r"(?<![\w'])[A-Z][\w.+-]*\d*[\w]*", text) if w.lower() not in ("user", "i")}
    return caps | set(identifiers(text))


__all__ = ["NOT_WANTED_RE", "QUESTION_RE", "Said", "clip_words", "prose_of", "replies", "turn_groups", "content_words_of", "ended", "entities", "is_cause",
           "is_reason", "plain_run", "split_sentences"]
