"""A choice named from the alternatives just offered, and a choice taken back.

"Should the migrations be Flyway or Liquibase?" answered with "Flyway, with plain SQL files. The DBAs refuse to
read Liquibase XML": the reply says which, and why, in the user's own words; the question says what it was
chosen over. So a user's reply that opens by naming one side of an "A or B?" / "A vs B?" asked as a choice in the
two messages before it, or one item of "options: A, B, C", is one decision: the reply, with the sides not taken.
Never a reply to a question about what the user has ("Are you on Linux or macOS?" / "macOS, Sonoma 14.4": a
fact), one that opens with a verdict on the thing ("GraphQL is overkill, ..."), or a hedge ("Kafka, maybe, ...").

"scrap GraphQL, v2 stays REST with an OpenAPI 3.1 spec" takes back "let's do GraphQL": the earlier decision
that names the thing scrapped is left out, and only what was decided last is kept.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..candidates import DEFAULT_IMPORTANCE, Candidate
from .options import NO_PICK
from .said import Said, clip_words, ended, prose_of, turn_groups
from .whole import SCRAPPED_RE, a_request, hedged
from ..third_person import first_person_to_user

REPLY_WORDS = 75
_OR_QUESTION_RE = re.compile(r"([^.?!\n]{1,200}?)\s+(or|vs\.?|versus)\s+([^.?!\n]{1,80})\?", re.I)
_CHOICE_ASKED_RE = re.compile(r"\b(?:should|prefer|want|go with|pick|choose|rather|options?|approach\w*|either|better|"
                              r"recommend\w*)\b", re.I)
"""What makes "A or B?" a choice ("Should migrations be Flyway or Liquibase?"), not a question about what the user
has ("Are you on Linux or macOS?"); "A vs B?" and a bare "Spring Boot or Quarkus?" always are."""
_QUESTION_SPLIT_RE = re.compile(r"[^.?!\n]{1,400}\?")
_LISTED_RE = re.compile(r"\boptions?\b[^:.?\n]{0,30}:\s*([^.?\n]{3,200})", re.I)
_WORD_RE = re.compile(r"[\w./@+#-]{2,64}")
_LEAD_RE = re.compile(r"^(?:(?:ok(?:ay)?|yes|yeah|yep|so|alright|fine|agreed|sounds (?:right|good)|makes sense|"
                      r"let'?s (?:go with|do|use)|(?:we'?ll |i'?ll )?go(?:ing)? with|use)\b[,.!]*\s*)+", re.I)
_HEAD_END_RE = re.compile(r"[,.;:!(\u2014\u2013]|\s-\s|\s+then\b|\s+it is\b", re.I)
_VERDICT_RE = re.compile(r"\b(?:is|are|was|were|seems?|sounds?|looks?|feels?|would|will|might|could|should|can|"
                         r"isn'?t|aren'?t|won'?t)\b|'s\b|'re\b", re.I)
"""A head that says something of the thing ("GraphQL is overkill") rather than naming it."""
_HEAD_WORDS = 5
_NOT_NAMES = NO_PICK | frozenset("""keep remove use add go stay do drop leave move make it them that this those these
one the a an just write ship wait skip retry revert rename merge split push pull delete fix change update rewrite
build run test ask tell start stop all everything nothing""".split())
"""Words that open a reply without naming a thing offered ("keep them till then" after "remove X, or keep them?")."""


def _name_like(word: str) -> bool:
    return not word.isalpha() or not word.islower()


def _side(words: list[str], *, last: bool) -> str | None:
    """The name at the end (``last``) or the start of ``words``: the run of capitalised or code-like words there
    ("managed by Flyway", "Spring Boot"), else the one word next to the "or"."""
    seq = list(reversed(words)) if last else words
    run: list[str] = []
    for w in seq[:3]:
        if not _name_like(w):
            break
        run.append(w)
    name = run or seq[:1]
    side = " ".join(reversed(name) if last else name)
    return side if side and side.split()[0].lower() not in _NOT_NAMES else None


def offers(text: str) -> list[list[str]]:
    """The alternatives offered in ``text``, each offer's sides: "A or B?" asked as a choice, "A vs B?", and the
    items of "options: A, B, C"."""
    out: list[list[str]] = []
    asked = " ".join(q for q in _QUESTION_SPLIT_RE.findall(text) if " or " in q or " vs" in q)  # questions only
    for m in _OR_QUESTION_RE.finditer(asked):
        if m.group(2).lower() == "or" and not _CHOICE_ASKED_RE.search(m.group(0)) and len(m.group(1).split()) > 3:
            continue
        left, right = _side(_WORD_RE.findall(m.group(1)), last=True), _side(_WORD_RE.findall(m.group(3)), last=False)
        if left and right:
            out.append([left, right])
    for m in _LISTED_RE.finditer(text):
        sides = [s for item in re.split(r",|/|\bor\b|\band\b", m.group(1))
                 if (s := _side(_WORD_RE.findall(item), last=False))]
        if len(sides) >= 2:
            out.append(sides)
    return out


def _head(said: str) -> str | None:
    """What a reply opens by naming ("SQS FIFO, group id = ..." -> "SQS FIFO"), if it opens with a name."""
    head = _HEAD_END_RE.split(_LEAD_RE.sub("", said.strip()), maxsplit=1)[0].strip()
    if not 1 <= len(head.split()) <= _HEAD_WORDS or "?" in head or _VERDICT_RE.search(head):
        return None
    return head


def _chosen(head: str, offered: list[list[str]]) -> tuple[str, list[str]] | None:
    """The side ``head`` names and the other sides of its offer, or None."""
    low = head.lower()
    for sides in offered:
        for side in sides:
            if low == side.lower() or low.startswith(side.lower() + " "):
                return side, [s for s in sides if s != side]
    return None


def named_choices(items: Sequence[Said]) -> None:
    """Each user message that opens by naming one side of alternatives offered in the two messages before it
    becomes one decision: the whole message (its reason with it), with the sides not taken."""
    groups = turn_groups(items)
    offered: dict[int, list[list[str]]] = {}
    for k, answer in enumerate(groups):
        first = answer[0]
        if k == 0 or first.turn.role != "user" \
                or any(x.consumed or x.cand is not None and x.cand.kind != "fact" for x in answer):
            continue
        said = prose_of(first.turn.text)
        head = _head(said)
        if head is None or head.split()[0].lower() in _NOT_NAMES or a_request(said) or hedged(said) \
                or "?" in re.split(r"(?<=[.!])\s", said, maxsplit=1)[0]:
            continue  # "Redis — does it support TTL per key though?": still asking
        before = range(max(0, k - 2), k)
        name = head.split()[0].lower()
        if not any(name in groups[j][0].turn.text.lower() for j in before):
            continue
        for j in before:
            if j not in offered:
                offered[j] = offers(prose_of(groups[j][0].turn.text))
        found = _chosen(head, [o for j in before for o in offered[j]])
        if found is None:
            continue
        others = [s for s in found[1] if s.lower() not in said.lower()]
        text = ended(first_person_to_user(clip_words(said, REPLY_WORDS), first.turn.speaker))
        if others:
            text = f"{text} (Chosen over {', '.join(others)}.)"
        first.cand = Candidate(text=text, kind="decision", importance=DEFAULT_IMPORTANCE["decision"],
                               metadata={"role": "user"})
        first.score = max(first.score, 0.8)
        first.extra = [*first.extra, *(groups[j][0].turn for j in before if offered[j])]
        for x in answer[1:]:
            x.consumed = True


def taken_back(items: Sequence[Said]) -> None:
    """A user's decision that takes back an earlier one ("scrap GraphQL, v2 stays REST ...") leaves out the
    earlier decisions that name the thing scrapped."""
    for it in items:
        if it.consumed or it.cand is None or it.cand.kind != "decision" or it.turn.role != "user":
            continue
        for m in SCRAPPED_RE.finditer(it.turn.text):
            thing = re.compile(rf"(?<![\w-]){re.escape(m.group('thing'))}(?![\w-])", re.I)
            for old in items:
                if old.ti < it.ti and old.cand is not None and old.cand.kind == "decision" \
                        and thing.search(old.cand.text):
                    old.consumed = True


__all__ = ["REPLY_WORDS", "named_choices", "offers", "taken_back"]
