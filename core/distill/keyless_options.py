"""A choice the user makes from what the assistant laid out: an option picked, or a proposal accepted.

"1. rotate the IAM user's keys monthly / 2. switch the deploy workflows to GitHub OIDC ..." answered with "2", or
"you could keep the GenServer queue or move to Oban" answered with "oban. we deploy ~10x a day and losing
exports on every deploy is the bug": the user's message alone says almost nothing, the option alone was only
offered. Together they are one decision, in the option's words, with the user's reason when one follows. So is
"I'd move the session store to Redis: ..." answered with "agreed, do that" (never with "ok no", "ok, but ...?",
"ok thanks", or an "ok" after a report of what was done). And so is a reply that opens by naming one side of
an "A or B?" asked before ("Flyway or Liquibase?" / "Flyway, with plain SQL files. The DBAs ..."), or of the
options listed ("options i see: RabbitMQ, Redis Streams, SQS" / "SQS FIFO, group id = merchant_id ..."): the
user's own words are the decision, and the sides not taken are named with it.
"""

from __future__ import annotations

import re
from typing import Sequence

from .admission import content_words
from .candidates import DEFAULT_IMPORTANCE, Candidate
from .keyless_said import Said, clip_words, ended, prose_of, replies, turn_groups
from .keyless_whole import SCRAPPED_RE, a_request, kind_of
from .third_person import first_person_to_user

OPTION_WORDS, REASON_WORDS = 40, 35
_NUMBERED_RE = re.compile(r"^[ \t]*(?:option[ \t]+)?(\d)[.)][ \t]+(.+)$", re.M | re.I)
_PICK_NUMBER_RE = re.compile(r"^\s*(?:(?:ok(?:ay)?|yeah|yes|yep|let'?s (?:go with|do)|go with|i'?ll take|take|pick)\s+)?"
                             r"(?:option\s+|#)?(\d)(?:\s*[.!,;:\u2014\u2013-]+\s*|\s*$)(.*)$", re.I | re.S)
_PICK_WORD_RE = re.compile(r"^\s*(?:(?:ok(?:ay)?|yeah|yes|let'?s (?:go with|do)|go with)\s+)?([\w./@+-]+(?: [\w./@+-]+)?)"
                           r"(?:\s*[.!;:\u2014\u2013-]+\s*|\s*$)(.*)$", re.I | re.S)
_NO_PICK = frozenset("later sure yes yeah yep nope both neither either maybe thanks thx cool nice ok okay done hmm "
                     "not now".split())
"""Replies that pick no option ("later?", "both", "not now")."""
_OFFER_LEAD_RE = re.compile(r"^(?:.*?\b(?:you could|you can|either|we could|i'?d)\s+)", re.I)


_OFFER_WORDS_RE = re.compile(r"\b(?:prefer|want|should|go with|pick|choose|rather|options?|ways?|approach\w*|either)\b",
                             re.I)
"""What a question before a numbered list says when the list is a choice ("Which do you prefer?", "Two ways to
..."), not a question for a fact ("Which test failed? 1. test_auth 2. test_db")."""


def _numbered(reply: str, n: str) -> str | None:
    found = list(_NUMBERED_RE.finditer(reply))
    lead = reply[:found[0].start()] if found else ""
    if "?" in lead and not _OFFER_WORDS_RE.search(lead):
        return None  # the user answered a question; nothing was chosen
    for m in found:
        if m.group(1) == n:
            return m.group(2).strip()
    return None


def _offered(reply: str, pick: str) -> str | None:
    """The side of an "X or Y" offer that names ``pick``."""
    for sentence in re.split(r"(?<=[.!?])\s+", reply):
        if " or " not in sentence or pick.lower() not in sentence.lower():
            continue
        sides = [s.strip(" ,.") for s in _OFFER_LEAD_RE.sub("", sentence).split(" or ")]
        hits = [s for s in sides if pick.lower() in s.lower()]
        if len(hits) == 1 and len(sides) >= 2:
            return hits[0]
    return None


def picked_options(items: Sequence[Said]) -> None:
    """Each user message that picks one of the options of the assistant's message before it becomes one
    decision (on its first sentence; its other sentences are consumed: they are the reason)."""
    for offer, answer in replies(items):
        if any(x.consumed or x.cand is not None and x.cand.kind == "decision" for x in answer):
            continue
        said, reply = answer[0].turn.text.strip(), offer[0].turn.text
        option, rest = None, ""
        number = _PICK_NUMBER_RE.match(said)
        if number:
            option, rest = _numbered(reply, number.group(1)), number.group(2)
        else:
            word = _PICK_WORD_RE.match(said)
            if word and len(word.group(1)) >= 3 and "?" not in said[:40] and word.group(1).lower() not in _NO_PICK:
                option, rest = _offered(reply, word.group(1)), word.group(2)
        if not option:
            continue
        reason = ended(first_person_to_user(clip_words(" ".join(rest.split()), REASON_WORDS),
                                            answer[0].turn.speaker)) if len(rest.split()) >= 3 else ""
        text = " ".join(x for x in (f"User chose: {ended(clip_words(option, OPTION_WORDS))}",
                                    f"Reason: {reason}" if reason else "") if x)
        first = answer[0]
        first.cand = Candidate(text=text, kind="decision", importance=DEFAULT_IMPORTANCE["decision"],
                               metadata={"role": "user"})
        first.score = max(first.score, 0.8)
        first.extra = [*first.extra, offer[0].turn]
        for x in answer[1:]:
            x.consumed = True


_PROPOSED_RE = re.compile(r"\b(?:i'?d|i would|i'?d suggest|i suggest|i recommend|(?:we|you) should|the cleanest (?:route|way|fix)|"
                          r"better to|lets queries|would (?:address|fix|solve|help|work)|(?:closest|best|good|better) fit)\b|"
                          r"\b(?:swapping|switching|moving|writing) [^.]{0,60}\b(?:for|to|as)\b", re.I)
_STATUS_OPENING_RE = re.compile(r"^(?:done|updated|fixed|added|pushed|merged|i'?ve|i have|here'?s|here is)\b", re.I)
"""An assistant reporting what it did ("Done. I've updated config.py and I'm switching the logger"): no proposal."""
_ACCEPTED_RE = re.compile(r"^(?:(?:ok(?:ay)?|agreed|yes|yep|yeah|sounds (?:good|right)|makes sense|do it|do that|go ahead|"
                          r"let'?s do (?:it|that))\b[,.!]*\s*)+", re.I)
_AGREED_RE = re.compile(r"\b(?:agreed|yes|yep|yeah|sounds (?:good|right)|makes sense|do it|do that|go ahead|let'?s do)\b", re.I)
_NOT_AGREED_RE = re.compile(r"^(?:no|nope|but|wait|hmm|what|why|how|not|thanks|thx|thank you|cool|nice|great)\b", re.I)
"""What follows an "ok" that takes nothing ("ok no, keep it in systemd", "ok, but what about...", "ok thanks")."""
PROPOSAL_WORDS = 40


def _taken(said: str, rest: str, proposal: str) -> bool:
    """Whether the reply takes the proposal: it agrees outright, or its "ok" goes on about the proposal's own
    subject; never a reply that turns it down, asks, thanks, or asks for something else."""
    if len(proposal.split()) < 5 or _STATUS_OPENING_RE.match(proposal) or "?" in rest or _NOT_AGREED_RE.match(rest):
        return False
    shared = content_words(rest) & content_words(proposal)
    return bool(shared) if rest.strip() and (a_request(rest) or not _AGREED_RE.search(said[:len(said) - len(rest)])) \
        else bool(_AGREED_RE.search(said))


def accepted_proposals(items: Sequence[Said]) -> None:
    """A user's "agreed, do that" / "ok switch the export to parquet" right after the assistant proposed a change
    is one decision: what the user said, with the proposal it accepts (its words and its reason)."""
    for offer, answer in replies(items):
        said = answer[0].turn.text.strip()
        if not _ACCEPTED_RE.match(said) or not _PROPOSED_RE.search(offer[0].turn.text) \
                or any(x.consumed or x.cand is not None and x.cand.kind in ("lesson", "decision") for x in answer):
            continue
        proposal = prose_of(offer[0].turn.text)
        rest = _ACCEPTED_RE.sub("", said)
        if not _taken(said, rest, proposal):
            continue
        agreed = ended(first_person_to_user(clip_words(" ".join(rest.split()), REASON_WORDS), answer[0].turn.speaker)) \
            if len(rest.split()) >= 2 else "User agreed."
        first = answer[0]
        kind = "preference" if kind_of(" ".join(rest.split())) == "preference" else "decision"  # "X for anything new"
        first.cand = Candidate(text=f"{agreed} Proposed: {ended(clip_words(proposal, PROPOSAL_WORDS))}", kind=kind,
                               importance=DEFAULT_IMPORTANCE[kind], metadata={"role": "user"})
        first.score = max(first.score, 0.8)
        first.extra = [*first.extra, offer[0].turn]
        for x in answer[1:] + offer:
            x.consumed = True


_ALTERNATIVES_RE = re.compile(r"([^.?!\n]{1,200}?)\s+(?:or|vs\.?|versus)\s+([^.?!\n]{1,80})\?")
_LISTED_RE = re.compile(r"\boptions?\b[^:.?\n]{0,30}:\s*([^.?\n]{3,200})", re.I)
_NAME_RE = re.compile(r"[\w./@+#-]{2,64}")
_PICK_LEAD_RE = re.compile(r"^(?:(?:ok(?:ay)?|yes|yeah|yep|so|alright|fine|agreed|sounds (?:right|good)|makes sense|"
                           r"let'?s (?:go with|do|use)|(?:we'?ll |i'?ll )?go(?:ing)? with|use)\b[,.!]*\s*)+", re.I)
_PICK_END_RE = re.compile(r"[,.;:!(\u2014\u2013]|\s-\s|\s+then\b|\s+it is\b", re.I)
PICK_WORDS = 5
_NOT_NAMES = frozenset("""keep remove use add go stay do drop leave move make it them that this those these both either
one the a an just write ship wait skip retry revert rename merge split push pull delete fix change update rewrite
build run test ask tell start stop""".split())
"""Words that open a reply without naming a thing offered ("keep them till then" after "remove X, or keep them?")."""


def _sides(text: str) -> list[str]:
    """The names offered as alternatives in ``text``: either side of "A or B?" / "A vs B?" (the word next to the
    "or"), and each item of "options: A, B, C"."""
    out: list[str] = []
    for m in _ALTERNATIVES_RE.finditer(text):
        left, right = _NAME_RE.findall(m.group(1)), _NAME_RE.findall(m.group(2))
        if left and right:
            out += [left[-1], right[0]]
    for m in _LISTED_RE.finditer(text):
        for item in re.split(r",|/|\bor\b|\band\b", m.group(1)):
            if names := _NAME_RE.findall(item):
                out.append(names[0])
    return [o for o in out if o.lower() not in _NO_PICK and o.lower() not in _NOT_NAMES
            and (not o.isalpha() or not o.islower() or len(o) >= 4)]


def _pick(said: str) -> str | None:
    """The thing a reply opens by naming ("SQS FIFO, group id = ..." -> "SQS FIFO"), if it opens with a name."""
    head = _PICK_END_RE.split(_PICK_LEAD_RE.sub("", said.strip()), maxsplit=1)[0].strip()
    return head if 1 <= len(head.split()) <= PICK_WORDS and "?" not in head else None


def named_choices(items: Sequence[Said]) -> None:
    """Each user message that opens by naming one side of alternatives offered earlier in the conversation
    becomes one decision: the whole message (its reason with it), with the sides not taken."""
    groups = turn_groups(items)
    for k, answer in enumerate(groups):
        first = answer[0]
        if k == 0 or first.turn.role != "user" or any(
                x.consumed or x.cand is not None and x.cand.kind in ("decision", "lesson") for x in answer):
            continue
        said = prose_of(first.turn.text)
        pick = _pick(said)
        if pick is None or a_request(said):
            continue
        sides = [s for g in groups[:k] for s in _sides(prose_of(g[0].turn.text))]
        head = pick.split()[0].lower()
        if head in _NO_PICK or not any(s.lower() == head for s in sides):
            continue
        others = list(dict.fromkeys(s for s in sides if s.lower() != head and s.lower() not in said.lower()))
        text = ended(first_person_to_user(clip_words(" ".join(said.split()), OPTION_WORDS + REASON_WORDS),
                                          first.turn.speaker))
        if others:
            text = f"{text} (Chosen over {', '.join(others)}.)"
        first.cand = Candidate(text=text, kind="decision", importance=DEFAULT_IMPORTANCE["decision"],
                               metadata={"role": "user"})
        first.score = max(first.score, 0.8)
        first.extra = [*first.extra, *(g[0].turn for g in groups[:k] if _sides(prose_of(g[0].turn.text)))][:3]
        for x in answer[1:]:
            x.consumed = True


def taken_back(items: Sequence[Said]) -> None:
    """A user's decision that takes back an earlier one ("scrap GraphQL, v2 stays REST ...") leaves the earlier
    decision out: only what was decided last is kept."""
    for it in items:
        m = SCRAPPED_RE.search(it.turn.text) if it.cand is not None and it.cand.kind == "decision" \
            and it.turn.role == "user" and not it.consumed else None
        if m is None:
            continue
        dropped = re.compile(rf"(?<![\w-]){re.escape(m.group(1))}(?![\w-])", re.I)
        for old in items:
            if old.ti < it.ti and old.cand is not None and old.cand.kind == "decision" and dropped.search(old.cand.text):
                old.consumed = True


__all__ = ["accepted_proposals", "named_choices", "picked_options", "taken_back"]
