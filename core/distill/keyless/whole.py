"""A user's message that no sentence pattern read, kept whole when it plainly tells something that lasts.

The sentence patterns (:mod:`.patterns`) know the phrasings they were written for, and a blind set of
coding-session snippets showed how often people say it otherwise: "zustand, not redux toolkit", "replacing zap
with log/slog across the services", "the retry loop never closed resp.Body ... added `defer resp.Body.Close()`,
rss is flat now", "fyi only priya has admin on the apple developer account". Each is one message that says one
thing; none of its sentences matched. Such a message becomes one memory, its kind read from loose cues (a
problem with what was done about it: a lesson; a thing chosen over another: a decision; a rule for every time: a
preference; a release or an outage with its date: an event; else a fact), but only when it names something
concrete (code, a version, an identifier) and is not a question, a request, a hunch or a status report.
"""

from __future__ import annotations

import re
from typing import Sequence

from ...recall.lexical import identifiers
from ..candidates import DEFAULT_IMPORTANCE, Candidate
from ..conversation import Turn
from .cues import STATUS_RE, symptom_reported
from .exchange import CONFIRMED_RE, DONE_RE, PROBLEM_RE
from .fragments import a_guess
from .said import Said, ended, prose_of, turn_groups
from ..third_person import first_person_to_user

MIN_WORDS, MAX_WORDS = 6, 90
ANSWER_WORDS = 25
WHOLE_SCORE = 0.62  # below what a matched pattern scores: the best memories of a long session come first

_HEDGE_RE = re.compile(
    r"\b(?:wonder(?:ing)?|maybe|might be|not sure|no idea|idk|i guess|probably|perhaps|haven'?t (?:actually )?"
    r"(?:looked|checked|tried|confirmed)|hunch|could be|i think|thinking about|considering|should we|what if|might|"
    r"if (?:we|i) ever|someday|some day|eventually|a long way off)\b", re.I)
_REQUEST_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|also|and|now|so|then|pls|please|plz|just|hey|right)[,!\s]+|(?:in|for) (?:this|the) [\w.-]+,?\s+)*"
    r"(?:can you|could you|would you|need|write|add|create|make|implement|refactor|fix|update|change|remove|delete|"
    r"rename|convert|generate|explain|show|run|set ?up|install|debug|review|check|look(?: at)?|try|bump|revert|help|"
    r"tell|find|draft|port|type|drop|push|open|deploy|ship|split|extract|move|validate|wrap|wire|parse|handle|"
    r"ensure|make sure|paginate|memoize|throttle)\b|^(?:the |this |our )?[\w./-]+(?: [\w./-]+){0,3} needs? (?:a|an) new\b",
    re.I)
_TRAILING_REQUEST_RE = re.compile(r"[,.;]\s*(?:and\s+|then\s+|also\s+)?(?:pls\s+|please\s+)?(?:make it|fix|add|rebase|rename|"
                                  r"split|revert|push|merge|deploy|rerun|retry|update|bump)\b[^.]{0,80}$", re.I)
"""A request at the end ("..., make it more robust"): the message asks for work; the work is no memory."""
_CORRECTING_RE = re.compile(r"^(?:(?:ugh|argh|hmm|oh|wait)[,!.:]*\s+)?(?:careful|actually|nope|no|not (?=(?:in|for|here|"
                            r"there|on) ))\b[,!.:]*\s*", re.I)
_DONE_NOW_RE = re.compile(r"\b(?:is|are|'s|'re)\s+(?:green|red|passing)\b|\b(?:merging|pushing|rebasing|shipping it|"
                          r"deploying now)\b|^nit\b", re.I)
"""A status of the moment ("`composer test` is green locally now, pushing"): the summary's, not a memory."""
_SOCIAL_RE = re.compile(r"^(?:good )?(?:morning|evening|hey|hi|hello|thanks|thank you|thx|lol|haha|sorry|ugh|argh)\b",
                        re.I)
_CONCRETE_RE = re.compile(r"`|\b\d+(?:\.\d+)+\b|\bv\d|\b\d+\s*(?:ms|s|k|m|gb|mb|rows|x|%)\b|\b[a-z]+[-_][a-z0-9]+"
                          r"(?:[-_.][a-z0-9]+)*\b|\b[\w-]+\.(?:py|js|ts|go|rs|java|kt|rb|yaml|yml|json|toml|sql|sh)\b",
                          re.I)

_CAUSE_RE = re.compile(r"\b(?:the reason|was the|found it|root cause|(?:the )?culprit|wasn'?t \w+ed|never \w+ed|can'?t be|bypass\w*|turns? out|"
                       r"turned out|the whole time|all along)\b", re.I)
"""What made it happen, said without a failure word ("the reason the image was 2.3gb was the pip cache")."""
_FAILING_RE = re.compile(r"\b(?:still (?:getting|seeing)|same (?:thing|error|issue|result)|no luck|will (?:look|check|dig) "
                         r"(?:again|into it|more)|dies|died|dying|[45]\d\ds|down|drops?|dropped|flakes?|crashloop\w*|kill(?:s|ed|ing)|"
                         r"hung|spun|seq scan\w*|no-op|garbage|clobber\w*|wreck\w*)\b", re.I)
"""Failure words the shared problem pattern does not hold: with what was done, a lesson; without, a report."""
_ACK_LEAD_RE = re.compile(r"^(?:(?:ok(?:ay)?|right|then|alright)\b[,.!]*\s+)+", re.I)
"""An answer's opening ("ok, every split goes by customer_id"): what follows it is read on its own."""
_NARRATION_RE = re.compile(r"^(?:also\s+|fyi\s+|btw\s+)?(?:[{\[<]|(?:sure|yes|yeah|yep|ugh|so)\b[,.!]*\s*|(?:i|we)\s+(?:just\s+)?(?:got|saw|ran|"
                           r"joined|tried|opened|pushed|merged|checked|looked|spent|wasted)\b|(?:got|saw|ran|joined|tried|"
                           r"opened|checked|looked)\b)", re.I)
_FIX_RE = re.compile(r"\b(?:added|pulled|moved|switched|set|wrapped|replaced|created|declared|rewrote|swapped|"
                     r"pinned|bumped|raised|removed|fixed|changed|made)\b|\b(?:we|i) now \w+|"
                     r"`[^`]+`\s+(?:and|->|→|fixed)|\s(?:->|→)\s|\bfix:|"
                     r"\.\s+`[^`]+`", re.I)
_STANDING_RE = re.compile(r"\b(?:every ?time|always|never|from now on|anything (?:\w+ )?you write|for me\b|"
                          r"when (?:you|u) (?:explain|write|review|answer|reply|suggest|add|create|generate|touch|edit|"
                          r"commit|refactor|name)\b|"
                          r"(?:style|convention)s? for\b|(?:\w+ )?stays\b|only,|\bonly\b(?=[^.]{0,40}\b(?:same as|"
                          r"like the rest|as the rest)))", re.I)
_RULE_FOR_ALL_RE = re.compile(r"^in (?:this|the|our) (?:codebase|repo|project)\b[^.?]{0,40}\b(?:get|gets|are|is|go|goes)\b|"
                              r"\b(?:that'?s|it'?s|is) (?:our|the) (?:convention|standard|house rule)\b|"
                              r"^(?:wrap|validate|route|log|send|ensure|make sure|handle) (?:every|all|any)\b|"
                              r"\b(?:banned|forbidden|not allowed|disallowed) (?:in|across) (?:this|the|our)\b|"
                              r"^(?:can|could) you (?:keep|stop|always|never|make)\b[^?]*\?|"
                              r"\b(?:isn'?t|is not|aren'?t|are not|never) used (?:anywhere|in (?:this|the|our))\b|\b(?:anywhere|"
                              r"everywhere) in (?:this|the|our) (?:codebase|repo|project|code)\b|\bonly (?:ok|okay|allowed|"
                              r"fine|used) in\b|"
                              r"\b(?:all|every|any(?:thing)?)\b[^.]{0,60}\b(?:go(?:es)? through (?!(?:her|him|them|me|us)\b)|"
                              r"has to|have to|must|needs? to)|^before (?:calling|marking|saying) (?:anything|something|"
                              r"it) done\b|^(?:\w+ ){0,2}rules? for (?:this|the|our|all|every)\b|\boff[- ]limits\b|\bof any kind\b|"
                              r"\bapplies to (?:everything|all|every|any)\b|\b(?:check with me|ask(?: me)?(?: first)?) before "
                              r"(?:adding|installing|using|pulling|bumping|upgrading|touching|changing|running|pushing|"
                              r"merging|deleting|removing)\b", re.I)
"""A rule for all of a kind of thing ("all user-visible text goes through strings.xml", "default exports are banned in
this codebase", "can you keep replies shorter?"): a standing preference."""
_SETTLED_RE = re.compile(r"\b(?:was|is|been|got) (?:settled|decided|agreed)\b|\bstarting (?:this|next) (?:sprint|week|"
                         r"release|quarter|month)\b[^.]{0,40}\b(?:standard|default)\b|\bfinal answer\b|\b(?:goes|go) away\b", re.I)
_BY_DESIGN_RE = re.compile(r"\b(?:by design|on purpose|intentional(?:ly)?|deliberate(?:ly)?)\b", re.I)
"""How a thing is meant to be ("env vars are ignored on purpose"): a fact, code or not."""
_DIRECTIVE_RE = re.compile(r"\b(?:pls|please|plz|don'?t|do not|no \w+|use|give me|keep|stays?|only|just|stick (?:to|with)|"
                           r"skip|avoid)\b", re.I)
_W = r"[\w./@+-]{1,64}"  # a name as written: "redux", "log/slog", "@tanstack/query" (bounded: linear on long runs)
_CHOICE_RE = re.compile(
    rf"(?:^|[—:,-]\s*){_W}(?: {_W})?,? not {_W}|\breplac(?:e|ed|ing) {_W} with\b|"
    rf"(?<!\bis )(?<!\bare )(?<!'re )(?<!'s )\b(?:moving|move|switch(?:ing)?|migrat(?:e|ing)|going|go) (?:\w+ ){{0,4}}"
    rf"(?:to|with) {_W}|"
    rf"\binstead of\b|\brather than\b|\bover {_W} because\b|[.;]\s+so {_W}(?: {_W}){{0,2}},|"
    rf"(?:^|[:\u2014\u2013]\s*){_W} over {_W}\b|(?:^|[.;]\s+)(?:use|go with|pick|take) {_W}\s*(?:—|–|-|,|;|because|since)|"
    rf"^(?:keep|leave|stay on|stick with|pin) {_W} (?:at|on|to) ", re.I)
_STYLE_RE = re.compile(r"\b(?:commit (?:msgs?|messages?)|style|naming|formatting|indent\w*|prefix(?:es)?|conventions?|"
                       r"casing|docstrings?)\b", re.I)
_INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
_REVISED_RE = re.compile(r"^(?:re [^—:.-]{1,40}[—:-]\s*)?(?:scratch|forget|ignore|disregard) (?:what|the|that|my)\b|"
                         r"\bchanged (?:my|our) mind\b", re.I)
"""Taking back what was said before ("scratch what i said earlier about friday releases."): what follows replaces it."""
SCRAPPED_RE = re.compile(r"(?:^|[.;:!,]\s+)(?:(?:we|let'?s)\s+)?(?:scrap|ditch|nix)\s+(?:the\s+)?(?P<thing>(?!(?:it|that|this|them|everything|"
                         r"all)\b)[\w./@+#-]{2,64}(?:\s+[\w./@+#-]{2,64}){0,2}?)\s*(?=[,;:!]|\.(?:\s|$)|$)", re.I)
"""A choice taken back ("scrap GraphQL, v2 stays REST with ..."): what is said with it is the decision now, and
``thing`` is what was taken back (up to three words, ended by punctuation: "then we ditch the old containers by
label" is a step, not a choice)."""
_EVENT_RE = re.compile(r"\b(?:went out|released|shipped|launched|was down|went down|outage|(?:code )?freeze runs|"
                       r"cut ?over|went live|for the record|postmortem|incident|rotated|revoked|"
                       r"(?:finished|completed|done with) (?:the )?(?:move|migration|upgrade|cutover|rollout)|"
                       r"(?:moved|migrated|upgraded) from|(?:move|migration|upgrade|cutover|rollout)\b[^.]{0,60}\b(?:finished|"
                       r"completed|went live))\b", re.I)
_DATE_RE = re.compile(r"\b\d{4}-\d\d-\d\d\b|\b\d{1,2}/\d{1,2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|"
                      r"dec)[a-z]*\.? \d{1,2}\b|\byesterday\b|\blast (?:week|night|month)\b|\bv?\d+\.\d+\.\d+\b|"
                      r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:mon|tue|wed|thu|fri|sat|sun)\b", re.I)


def hedged(text: str) -> bool:
    """Whether ``text`` is unsure of itself ("Kafka, maybe, but ...", "I think it's the pool")."""
    return bool(_HEDGE_RE.search(text)) or a_guess(text)


def a_request(text: str) -> bool:
    """Whether ``text`` opens by asking for work to be done ("rename `cnt` ...", "can you ...")."""
    return bool(_REQUEST_RE.match(text))


_ROLE_RE = re.compile(r"\b(?:i'?m|i am) an? (?:[\w-]+ ){0,2}(?:engineer|developer|dev|scientist|analyst|designer|student|"
                      r"admin|sre|architect|manager|researcher|consultant)\b", re.I)
"""Who the user is ("I'm a data engineer, mostly Scala and Spark"): as lasting as a version."""


def concrete(text: str) -> bool:
    return bool(_CONCRETE_RE.search(text)) or bool(identifiers(text)) or bool(_ROLE_RE.search(text))


def kind_of(text: str) -> str | None:
    """The kind a whole message reads as, or None when it is no memory (see the module docstring)."""
    if hedged(text) or _TRAILING_REQUEST_RE.search(text):
        return None
    corrected = bool(_CORRECTING_RE.match(text))  # what the assistant assumed, set right: a fact as it stands
    text = _ACK_LEAD_RE.sub("", _CORRECTING_RE.sub("", text))  # "ugh no, 2 spaces was for the yaml only. ..."
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return None
    first = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]
    if _EVENT_RE.search(text) and _DATE_RE.search(text) and concrete(text) and "?" not in text:
        return "event"  # "finished the move from heroku to fly.io on friday" reads as a status too
    if _SOCIAL_RE.match(text) or STATUS_RE.search(first) or _DONE_NOW_RE.search(text) \
            or "?" in _INLINE_CODE_RE.sub("", text) and not _RULE_FOR_ALL_RE.search(text):  # (a hedge was looked for above, in all of it)
        return None
    if _REQUEST_RE.match(text) and not (_STANDING_RE.search(text) or _RULE_FOR_ALL_RE.search(text)
                                        or _SETTLED_RE.search(text)):
        return None  # something to do now ("rename `cnt` and drop the console.log"), however concrete
    if _SETTLED_RE.search(text):
        return "decision"  # "no automatic retries on the charge call, that was settled in the payments review"
    if _RULE_FOR_ALL_RE.search(text):
        return "preference"  # "no any anywhere in this codebase", "anyhow is only ok in the cli crate"
    problem = PROBLEM_RE.search(text) or _FAILING_RE.search(text) or symptom_reported(text)
    if (problem or _CAUSE_RE.search(text)) and concrete(text) \
            and (_FIX_RE.search(text) or DONE_RE.search(text) or CONFIRMED_RE.search(text)):
        return "lesson"
    if problem or _NARRATION_RE.match(text):
        return None  # a report of a problem not solved yet, or of something done once, is no memory
    if SCRAPPED_RE.search(text):
        return "decision"
    if _STANDING_RE.search(text) and _DIRECTIVE_RE.search(text):
        return "preference"  # said as a rule, it needs no code to be one
    if _STYLE_RE.search(text) and (_REVISED_RE.search(text) or _DIRECTIVE_RE.search(text)) \
            and not _REQUEST_RE.match(text):
        return "preference"  # how things are written, said again: "forget the gitmoji prefixes. plain conventional"
    if _CHOICE_RE.search(text) and not _REQUEST_RE.match(text) or _REVISED_RE.search(text):
        return "decision"
    if _REQUEST_RE.match(text) or not (concrete(text) or corrected or _BY_DESIGN_RE.search(text)):
        return None
    if _EVENT_RE.search(text) and _DATE_RE.search(text):
        return "event"
    return "fact"


def whole_message(text: str, speaker: str | None = None) -> Candidate | None:
    """A user's message as one memory (in the third person, code blocks left out), or None."""
    flat = prose_of(text)
    kind = kind_of(flat)
    if kind is None:
        return None
    said = ended(first_person_to_user(flat, speaker))
    return Candidate(text=said, kind=kind, importance=DEFAULT_IMPORTANCE[kind], metadata={"role": "user"})


_RULES_HEADER_RE = re.compile(r"^[^\n]{0,60}\b(?:rules|style|conventions?|guidelines|standards)\b[^\n:]{0,40}:\s*\n", re.I)
_DECIDED_HEADER_RE = re.compile(r"^(?![^\n]*\b(?:not|un|to be|yet|whether|why|how)\b)[^\n?]{0,60}\b(?:outcome|decisions?|"
                                r"decided|agreed|conclusions?)\b[^\n:?]{0,40}:\s*\n", re.I)
_BULLET_RE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*)$", re.M)
LISTED_KINDS = ((_RULES_HEADER_RE, frozenset({"decision", "fact"}), "preference"),
                (_DECIDED_HEADER_RE, frozenset({"fact"}), "decision"))
"""A header and what its bullets are: under "House rules for SQL in this repo:" a standing preference ("CTEs
instead of nested subqueries" is no choice made once); under "Team sync outcome for the Android app:" a decision
(never under "Not decided yet:" or "Why did the outcome differ:")."""


def listed_under_headers(items: Sequence[Said]) -> None:
    """A user's bullets under a header that says what they are (:data:`LISTED_KINDS`) take that kind; prose
    around the list keeps its own."""
    for it in items:
        cand = it.cand
        if cand is None or it.turn.role != "user":
            continue
        for header, kinds, kind in LISTED_KINDS:
            if cand.kind in kinds and header.match(it.turn.text) and _in_bullet(it.text, it.turn.text):
                cand.kind, cand.importance = kind, DEFAULT_IMPORTANCE[kind]
                break


def _in_bullet(sentence: str, text: str) -> bool:
    head = " ".join(sentence.split()[:4]).lower()
    return any(head in " ".join(m.group(1).split()).lower() for m in _BULLET_RE.finditer(text))


SPECIFIC = frozenset({"preference", "lesson", "event"})  # not decision: "X, not Y" also states a fact
_STRONG_CHOICE_RE = re.compile(r"\b(?:switch(?:ing)?|replac(?:e|ing)|migrat(?:e|ing)|moving) (?:\w+ ){0,4}(?:from|with|to)\b|"
                               r"[.;]\s+so [\w./@+-]{1,64}(?: [\w./@+-]{1,64}){0,2},|"
                               r"(?:^|[:\u2014\u2013]\s*)[\w./@+-]{1,64} over [\w./@+-]{1,64}\b", re.I)


def sharpen_facts(items: Sequence[Said]) -> None:
    """A user's message read whole as one fact by a pattern ("hardcoded string. all user-visible text goes through
    strings.xml") takes the more specific kind the message as a whole reads as, if any; one read as a decision
    becomes a lesson when it holds a problem and what fixed it."""
    for said in turn_groups(items):
        cand, turn = said[0].cand, said[0].turn
        if len(said) != 1 or cand is None or cand.kind not in ("fact", "decision") or turn.role != "user" \
                or said[0].extra:
            continue
        flat = prose_of(turn.text)
        kind = kind_of(flat)
        if kind in SPECIFIC and cand.kind == "fact" or (cand.kind, kind) == ("decision", "lesson") \
                and PROBLEM_RE.search(flat) and not _STRONG_CHOICE_RE.search(flat) \
                or (cand.kind, kind) == ("fact", "decision") and _STRONG_CHOICE_RE.search(flat) \
                or (cand.kind, kind) == ("decision", "event"):  # "billing moved to Aurora over the weekend of May 18"
            cand.kind, cand.importance = kind, DEFAULT_IMPORTANCE[kind]


def answered(turns: Sequence[Turn], ti: int) -> bool:
    """Whether the assistant's next message answers turn ``ti`` at length (an explanation, a fix, code)."""
    nxt = next((t for t in turns[ti + 1:] if t.role in ("user", "assistant")), None)
    return nxt is not None and nxt.role == "assistant" and len(nxt.text.split()) >= ANSWER_WORDS


def unread_user_turns(items: Sequence[Said], turns: Sequence[Turn]) -> list[int]:
    """Indexes of the user turns none of whose sentences became (or joined) a memory (or that had no sentence
    left to score: a status-like opener such as "finished the move from heroku" is skipped as a sentence)."""
    read = {it.ti for it in items if it.cand is not None or it.consumed}
    return [ti for ti, t in enumerate(turns) if t.role == "user" and ti not in read]


__all__ = ["SCRAPPED_RE", "WHOLE_SCORE", "a_request", "answered", "hedged", "listed_under_headers", "sharpen_facts", "kind_of", "unread_user_turns", "whole_message"]
