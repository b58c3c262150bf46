"""A choice the user makes from what the assistant laid out: an option picked, or a proposal accepted.

"1. rotate the IAM user's keys monthly / 2. switch the deploy workflows to GitHub OIDC ..." answered with "2", or
"you could keep the GenServer queue or move to Oban" answered with "oban. we deploy ~10x a day and losing
exports on every deploy is the bug": the user's message alone says almost nothing, the option alone was only
offered. Together they are one decision, in the option's words, with the user's reason when one follows. So is
"I'd move the session store to Redis: ..." answered with "agreed, do that" (never with "ok no", "ok, but ...?",
"ok thanks", or an "ok" after a report of what was done). A reply naming one side of "A or B?" is in
:mod:`.choices`.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..admission import content_words
from ..candidates import DEFAULT_IMPORTANCE, Candidate
from .said import Said, clip_words, ended, prose_of, replies
from .whole import a_request, kind_of
from ..third_person import first_person_to_user

OPTION_WORDS, REASON_WORDS = 40, 35
_NUMBERED_RE = re.compile(r"^[ \t]*(?:option[ \t]+)?(\d)[.)][ \t]+(.+)$", re.M | re.I)
_PICK_NUMBER_RE = re.compile(r"^\s*(?:(?:ok(?:ay)?|yeah|yes|yep|let'?s (?:go with|do)|go with|i'?ll take|take|pick)\s+)?"
                             r"(?:option\s+|#)?(\d)(?:\s*[.!,;:\u2014\u2013-]+\s*|\s*$)(.*)$", re.I | re.S)
_PICK_WORD_RE = re.compile(r"^\s*(?:(?:ok(?:ay)?|yeah|yes|let'?s (?:go with|do)|go with)\s+)?([\w./@+-]+(?: [\w./@+-]+)?)"
                           r"(?:\s*[.!;:\u2014\u2013-]+\s*|\s*$)(.*)$", re.I | re.S)
NO_PICK = frozenset("later sure yes yeah yep nope both neither either maybe thanks thx cool nice ok okay done hmm "
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
            if word and len(word.group(1)) >= 3 and "?" not in said[:40] and word.group(1).lower() not in NO_PICK:
                option, rest = _offered(reply, word.group(1)), word.group(2)
        if not option or "?" in rest and not a_request(rest.strip(" ,.;:-\u2014\u2013")):
            continue  # "Redis — does it support TTL per key though?": still asking, nothing chosen yet
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


__all__ = ["NO_PICK", "accepted_proposals", "picked_options"]
