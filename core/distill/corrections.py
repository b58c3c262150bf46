"""Corrections the keyless distiller can act on: a statement that names the value it replaces.

The LLM distiller reconciles every candidate with what is stored (add / merge / supersede). The keyless one
cannot judge meaning, so it supersedes only when the words say so: "we upgraded the orders DB to Postgres 17,
not 16", "we switched from Jenkins to GitHub Actions", "use pnpm instead of npm", "we no longer use Jenkins",
"replaced Celery with RQ". The stored memory that still says the replaced value, and speaks of the same thing
(another content word in common), is superseded by the new one: recall shows what is true now, and
``search(as_of=...)`` still finds what was. Only a state is replaced (a fact, preference, decision or note; an
event or a lesson is history), only by something said later, and only a change already made: "next sprint we
move the bucket from us-east-1 to eu-west-1" replaces nothing yet.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from .admission import content_words
from .candidates import Candidate
from .llm_distiller import Decision
from ..types import MemoryRecord

REPLACEABLE_KINDS = frozenset({"fact", "preference", "decision", "note"})

_DET = r"(?:(?:the|our|my|a|an|using)\s+)?"
_VALUE_START = r"(?:[^\s.,;:!?()]|\.(?=\w))"  # a dot only inside a value: "1.29", "Fly.io"
_VALUE_REST = r"(?:[^.,;:!?()]|\.(?=\w)){0,40}?"
_OLD = rf"(?P<old>{_VALUE_START}{_VALUE_REST})"
_NEW = rf"(?P<new>{_VALUE_START}{_VALUE_REST})"
_END = r"(?=\s*(?:\.(?!\w)|[,;:!?()]|$|\s(?:for|in|on|at|from|since|now|because|as|so|last|this|when|and|but)\b))"

# each names the replaced value ``old`` (and, where said, the new one)
PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.I) for p in (
    # "upgraded the orders DB from Postgres 16 to 17", "switched CI from Jenkins to GitHub Actions"
    r"\b(?:switch|mov|migrat|upgrad|downgrad|chang|port|convert|renam|bump|transition)\w*\b"
    r"[^.;!?]{0,60}?\bfrom\s+" + _DET + _OLD + r"\s+(?:over\s+)?(?:to|onto|into)\s+" + _DET + _NEW + _END,
    # "... to Postgres 17 last week, not 16." / "we use tabs, not spaces"
    r"[,;\u2014\u2013-]\s*(?:and\s+|but\s+)?not\s+" + _DET + _OLD + r"\s*(?=\.(?!\w)|[;!]|$)",
    # "use pnpm instead of npm", "rather than Celery"
    r"\b(?:instead of|rather than|in place of)\s+" + _DET + _OLD + _END,
    # "we no longer use Jenkins", "stopped using Heroku", "got rid of the cron job"
    r"\b(?:no longer|stopped|quit)\s+(?:use|using|run|running|deploy(?:ing)? (?:to|on)|host(?:ing)? on|need(?:ing)?)"
    r"\s+" + _DET + _OLD + _END,
    r"\b(?:dropped|removed|retired|got rid of|decommissioned)\s+" + _DET + _OLD + _END,
    # "we don't use Jenkins anymore"
    r"\b(?:don'?t|do not|doesn'?t|does not|aren'?t|isn'?t|is not|are not)\s+(?:use|using|run|running|on|in)?\s*"
    + _DET + _OLD + r"\s+any\s?more\b",
    # "replaced Celery with RQ"
    r"\breplac(?:e|ed|ing)\s+" + _DET + _OLD + r"\s+(?:with|by)\s+" + _DET + _NEW + _END,
))

# said of later: announced, planned, proposed, asked; not a change made
FUTURE_RE = re.compile(
    r"\b(?:will|won'?t|shall|going to|gonna|plan(?:s|ned|ning)? to|want(?:s|ed)? to|would|should|could|might|may|"
    r"let'?s|next (?:week|sprint|month|quarter|year|release)|tomorrow|soon|eventually|someday|later|"
    r"thinking (?:of|about)|consider(?:ing)?|propos(?:e|ed|ing)|if we)\b|\?\s*$", re.I)

_GENERIC = frozenset("user users we us our use uses used using now also still just actually really new old "
                     "instead rather".split())
_TRAILING = re.compile(r"\s+(?:the|a|an|our|my|any|anymore|now|too|either|here|there)$", re.I)


@dataclass(frozen=True)
class Replacement:
    """A value a statement says it replaces, and the new one when it names it."""

    old: str
    new: str | None = None


def _value(text: str | None) -> str | None:
    """A captured value, trimmed: at most four words, something concrete in it (a content word or a digit)."""
    if not text:
        return None
    text = text.strip(" \"'`")
    while (trimmed := _TRAILING.sub("", text)) != text:
        text = trimmed
    words = text.split()
    if not words or len(words) > 4:
        return None
    return text if content_words(text) - _GENERIC or re.search(r"\d", text) else None


def replacements(text: str) -> list[Replacement]:
    """The values ``text`` says it replaces; none when it speaks of a change still to come."""
    if FUTURE_RE.search(text):
        return []
    out: list[Replacement] = []
    for pattern in PATTERNS:
        for m in pattern.finditer(text):
            old = _value(m.group("old"))
            new = _value(m.groupdict().get("new"))
            if old is not None and (new is None or new.lower() != old.lower()):
                out.append(Replacement(old, new))
    return out


def _says(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", text, re.I) is not None


def _when(rec: MemoryRecord) -> _dt.datetime:
    return rec.occurred_at or rec.valid_from or rec.created_at


def _shared(cand: Candidate, found: Sequence[Replacement], kind: str, text: str,
            occurred_at: _dt.datetime | None) -> int:
    """How many content words ``cand`` shares with a memory it replaces (besides the value), 0 if it does not:
    a state that says a replaced value and not the new one, and was not said after ``cand``."""
    if kind not in REPLACEABLE_KINDS:
        return 0
    if cand.occurred_at is not None and occurred_at is not None and occurred_at > cand.occurred_at:
        return 0
    words = content_words(cand.text) - _GENERIC
    best = 0
    for r in found:
        if _says(text, r.old) and not (r.new is not None and _says(text, r.new)):
            best = max(best, len((content_words(text) & words) - content_words(r.old)))
    return best


def replaced_by(cand: Candidate, found: Sequence[Replacement], neighbours: Sequence[MemoryRecord]) -> MemoryRecord | None:
    """The stored memory ``cand`` replaces (see :func:`_shared`): the one with the most words in common, the
    latest said of those, when several do."""
    scored = [(n, _when(rec), rec) for rec in neighbours if rec.superseded_by is None
              and (n := _shared(cand, found, rec.kind, rec.text, rec.occurred_at))]
    return max(scored, key=lambda x: (x[0], x[1]))[2] if scored else None


def decide(cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]) -> list[Decision]:
    """For each candidate that says what it replaces: supersede the stored memory that still says it (each
    memory once), and drop an earlier candidate of the same capture that does ("we run Postgres 16" ... "we
    upgraded to 17, not 16")."""
    out: dict[int, Decision] = {}
    taken: set[str] = set()
    for i, cand in enumerate(cands):
        found = replacements(cand.text)
        if not found:
            continue
        for j in range(i):
            if j not in out and _shared(cand, found, cands[j].kind, cands[j].text, cands[j].occurred_at):
                out[j] = Decision(j, "drop", reason="replaced by a later statement of the same capture")
        old = replaced_by(cand, found, [r for r in neighbours.get(i, ()) if r.id not in taken])
        if old is not None:
            taken.add(old.id)
            out[i] = Decision(i, "supersede", old.id)
    return [out[i] for i in sorted(out)]


__all__ = ["PATTERNS", "REPLACEABLE_KINDS", "Replacement", "decide", "replaced_by", "replacements"]
