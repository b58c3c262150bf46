"""Keyless relation extraction: "Dana maintains the ingest worker", "the worker moved to Redis Streams", "the
API is owned by the platform team" -> (subject, predicate, object) claims over the entities a text names.

Precision over recall: a claim is made only when the words between two entity mentions of one sentence are
exactly a known verb phrase (an adverb such as "now" or "also" and an article allowed; nothing else), so
"Dana no longer maintains X", "if Dana maintains X" and "Dana said Priya maintains X" claim nothing wrong.
Text in other languages matches no verb phrase and yields nothing.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..extract import Mention
from ..types import RelationClaim

# predicate -> its active verb phrases (as regular expressions), every form a sentence writes it in
ACTIVE: dict[str, str] = {
    "maintains": r"maintains|maintained|is maintaining|was maintaining|has maintained",
    "owns": r"owns|owned|has owned",
    "leads": r"leads|led|heads|headed|is leading",
    "uses": r"uses|used|is using|was using|has used",
    "runs_on": r"runs on|ran on|is running on|is hosted on|is deployed on|was deployed on|now runs on",
    "moved_to": r"moved to|has moved to|migrated to|has migrated to|was migrated to|switched to|has switched to",
    "depends_on": r"depends on|depended on|relies on|relied on",
    "works_at": r"works at|worked at|works for|worked for|is working at|is working for",
    "lives_in": r"lives in|lived in|is living in|is based in|was based in",
    "reports_to": r"reports to|reported to|is reporting to",
}
# predicate -> its passive phrases: "Y is maintained by X" says X maintains Y
PASSIVE: dict[str, str] = {
    "maintains": r"maintained",
    "owns": r"owned",
    "leads": r"led|headed",
    "uses": r"used",
}
# the words a question asks a relation with ("the service Dana maintains", "who owns X", "what X moved to")
ASKED: dict[str, str] = {
    "maintains": r"maintain|maintains|maintained|maintaining|maintainer|maintainers",
    "owns": r"own|owns|owned|owning|owner|owners",
    "leads": r"lead|leads|led|leading|heads|headed",
    "uses": r"use|uses|used|using",
    "runs_on": r"runs? on|ran on|running on|hosted on|deployed on",
    "moved_to": r"move to|moves to|moved to|migrate to|migrated to|switched to|switch to",
    "depends_on": r"depends? on|depended on|relies on|rely on",
    "works_at": r"works? at|worked at|works? for|worked for|working (?:at|for)|employer",
    "lives_in": r"lives? in|lived in|living in|based in",
    "reports_to": r"reports? to|reported to|manager|boss",
}
# single-valued: a subject has one at a time, so a new claim with another object closes the old one. The slot
# groups predicates that say the same thing ("runs on Postgres", later "moved to Redis": one place it runs)
SLOT: dict[str, str] = {"runs_on": "runs_on", "moved_to": "runs_on", "lives_in": "lives_in",
                        "works_at": "works_at", "reports_to": "reports_to"}
PREDICATES = tuple(ACTIVE)
PERSON_SUBJECT = frozenset({"works_at", "lives_in", "reports_to"})

_ADVERBS = r"(?:(?:now|also|still|currently|recently|already|officially|then|just)\s+)*"
_ARTICLE = r"(?:(?:the|our|a|an|their|its|his|her|my|your)\s+)?"
_LINK = r"(?:,\s*(?:who|which|that)\s+|\s+(?:who|which|that)\s+|\s+)"  # "Dana, who maintains", "X that uses"


def _alternatives(table: dict[str, str]) -> str:
    return "|".join(f"(?P<{p}>{v})" for p, v in table.items())


_ACTIVE_GAP = re.compile(rf"^{_LINK}{_ADVERBS}(?:{_alternatives(ACTIVE)})\s+{_ARTICLE}$", re.I)
_PASSIVE_GAP = re.compile(rf"^{_LINK}(?:is|was|are|were|has been|have been|had been)\s+{_ADVERBS}"
                          rf"(?:{_alternatives(PASSIVE)})\s+by\s+{_ARTICLE}$", re.I)
_MOVED_OFF = re.compile(rf"^{_LINK}{_ADVERBS}(?:has\s+|have\s+)?(?:moved|migrated|switched)\s+(?:off|from|away from)\s+"
                        rf"{_ARTICLE}$", re.I)
_ASKED = re.compile(r"\b(?:" + _alternatives(ASKED) + r")\b", re.I)
_SENTENCE_BREAK = re.compile(r"[.!?;:\n]")
_HEDGED = re.compile(r"\b(?:if|whether|unless|suppose|supposing|maybe|perhaps|might|should|would|could|wants? to|"
                     r"plans? to|will)\b[^.!?;:\n]*$", re.I)  # "if Dana maintains X": said of no fact
MAX_CLAIMS = 8  # per memory


_TRIGGERS = frozenset("""
maintains maintained maintaining owns owned leads led leading heads headed uses used using runs ran running hosted
deployed moved migrated switched depends depended relies relied works worked working lives lived living based
reports reported reporting
""".split())  # the word each relation phrase turns on
_WORD = re.compile(r"[a-z]+")


def might_relate(text: str) -> bool:
    """Whether ``text`` has a word a relation phrase turns on (a cheap check before extraction: it runs on every
    write, ~2 us for a sentence, against ~100 us for the phrase pattern over the whole text)."""
    return bool(text) and not _TRIGGERS.isdisjoint(_WORD.findall(text.casefold()))


# what a question asking through one predicate may be answered by ("what queue does X use?": X moved to it)
SAME_ASK: dict[str, frozenset[str]] = {
    "uses": frozenset({"uses", "runs_on", "moved_to", "depends_on"}),
    "runs_on": frozenset({"runs_on", "moved_to", "uses"}),
    "moved_to": frozenset({"moved_to", "runs_on", "lives_in", "works_at"}),
    "lives_in": frozenset({"lives_in", "moved_to"}),
    "works_at": frozenset({"works_at", "moved_to"}),
    "depends_on": frozenset({"depends_on", "uses"}),
}


def asked_predicates(question: str) -> set[str]:
    """The predicates a question asks through ("the service Dana maintains": ``maintains``; "what does X use":
    ``uses`` and the predicates that answer it, ``moved_to``, ``runs_on``, ``depends_on``)."""
    asked = {p for m in _ASKED.finditer(question or "") for p, v in m.groupdict().items() if v}
    return set().union(*(SAME_ASK.get(p, {p}) for p in asked)) if asked else set()


def claims(text: str, mentions: Sequence[Mention]) -> list[RelationClaim]:
    """The relations ``text`` states between the entities ``mentions`` found in it."""
    if not might_relate(text) or len(mentions) < 2:
        return []
    spans = _spans(text, mentions)
    out: list[RelationClaim] = []
    for (a0, a1, a), (b0, b1, _), (c0, c1, c) in zip(spans, spans[1:], spans[2:]):  # "X moved off Kafka to Redis"
        first, second = text[a1:b0], text[b1:c0]
        if _MOVED_OFF.match(first) and re.fullmatch(r"\s+(?:to|onto)\s+" + _ARTICLE, second, re.I) \
                and not _asked_or_hedged(text, a0, c1) and (a.kind != "person" or c.kind == "place"):
            out.append(RelationClaim(subject=a.name, predicate="lives_in" if a.kind == "person" else "moved_to",
                                     object=c.name, subject_kind=a.kind, object_kind=c.kind))
    for (a0, a1, a), (b0, b1, b) in zip(spans, spans[1:]):
        gap = text[a1:b0]
        if _SENTENCE_BREAK.search(gap) or a.key == b.key or _asked_or_hedged(text, a0, b1):
            continue
        act = _ACTIVE_GAP.match(gap)
        pas = None if act else _PASSIVE_GAP.match(gap)
        hit = act or pas
        if hit is None:
            continue
        predicate = next(p for p, v in hit.groupdict().items() if v)
        subj, obj = (a, b) if act else (b, a)
        if predicate == "moved_to" and subj.kind == "person":
            predicate = "lives_in" if obj.kind == "place" else "works_at" if obj.kind == "org" else ""
        if not predicate or predicate in PERSON_SUBJECT and subj.kind != "person" \
                or predicate == "reports_to" and obj.kind != "person":
            continue
        out.append(RelationClaim(subject=subj.name, predicate=predicate, object=obj.name, subject_kind=subj.kind,
                                 object_kind=obj.kind))
        if len(out) >= MAX_CLAIMS:
            break
    return list(dict.fromkeys(out))


def _asked_or_hedged(text: str, start: int, end: int) -> bool:
    """Whether the sentence around ``text[start:end]`` is a question, or hedges what it says before it."""
    head = text[:start]
    cut = max(head.rfind(c) for c in ".!?;\n")
    tail = _SENTENCE_BREAK.search(text, end)
    asked = tail is not None and text[tail.start()] == "?"
    return asked or bool(_HEDGED.search(head[cut + 1:]))


def _spans(text: str, mentions: Sequence[Mention]) -> list[tuple[int, int, Mention]]:
    """Where each mention is written, left to right, longer names first where two overlap."""
    found: list[tuple[int, int, Mention]] = []
    for m in mentions:
        for name in (m.name, *m.aliases):
            if not name:
                continue
            for hit in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text):
                found.append((hit.start(), hit.end(), m))
    found.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, Mention]] = []
    for s in found:
        if not kept or s[0] >= kept[-1][1]:
            kept.append(s)
    return kept


def normalise_predicate(predicate: str) -> tuple[str, bool]:
    """A predicate as stored, and whether it was written the other way round: "Maintains"/"runs on" ->
    ("maintains", False)/("runs_on", False); "maintained by" -> ("maintains", True) (the object maintains the
    subject). A verb phrase this module does not know is kept, lowercased, words joined by "_"."""
    text = " ".join(str(predicate or "").casefold().replace("_", " ").split())
    if not text:
        raise ValueError("a relation needs a predicate")
    for p, forms in PASSIVE.items():
        if re.fullmatch(rf"(?:is |was |are |were )?(?:{forms}) by", text):
            return p, True
    for p, forms in ACTIVE.items():
        if re.fullmatch(rf"(?:{forms}|{p.replace('_', ' ')}|{p.rstrip('s').replace('_', ' ')})", text):
            return p, False
    return text.replace(" ", "_")[:64], False


__all__ = ["PREDICATES", "SLOT", "asked_predicates", "claims", "might_relate", "normalise_predicate"]
