"""A lesson told as an exchange: the user reports a problem, the assistant explains it, the user says it worked.

"the go service keeps leaking goroutines under load" / "That pattern almost always means response bodies aren't
being closed. Make sure you `defer resp.Body.Close()` ..." / "yep that fixed it, goroutine count is flat". No
sentence of it is the lesson alone: the problem is in the first message, the cause and the fix in the reply, the
proof (and often what was done) in the last. The three become one lesson, kept with the problem's sentence; what
the reply and the confirmation said is part of it, not a memory of its own.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from ..admission import admit
from ..candidates import DEFAULT_IMPORTANCE, Candidate
from .patterns import Pattern
from .said import Said, clip_words, ended, turn_groups
from ..third_person import first_person_to_user

CONFIRMED_RE = re.compile(
    r"\b(?:that|this|it|which)\s+(?:was it|did it|did the trick|fixed it|solved it|worked|sorted it)\b|"
    r"\b(?:that|this)(?: was| is) the (?:problem|issue|cause|culprit|fix)\b|\bfixed it\b|"
    r"\b(?:works|working|green|passing|matches|match|fine|gone|stable|flat) now\b|\b(?:is|are|went|goes|turned) green\b|"
    r"\b(?:rule|change|flag|fix|setting|patch|bump|pin|that|this)\s+did it\b|"
    r"\b(?:release|build|ci|deploy|it|everything) works\b|\bsorted it\b|\b(?:it'?s|it is|all|is|are) (?:fixed|sorted)"
    r"(?: now)?\b|\bback to normal\b|\b(?:green|passing|working) everywhere\b|\b(?:passes|flat|fast|clean) now\b|"
    r"\b(?:took|brought|got) (?:it|them|that|this) (?:down |back )?to ~?\d|\b(?:version|approach|fix|change|one|"
    r"variant) works\b|\b(?:crash|error|warning|leak|issue|bug|problem|flake|hang|freeze)(?:e?s)? (?:is|are) gone\b|"
    r"\bholds? ~?\d[\d.,]*\s*k? \w+ now\b|\b(?:rebalanc\w*|crash(?:es)?|errors?|timeouts?|restarts?|alerts?|failures?|"
    r"faults?|flakes?|retries|evictions?|leaks?|spikes?|ooms?|dupes|duplicates)\s+(?:have\s+|has\s+)?(?:stopped|went away|"
    r"disappeared|vanished)\b|\brunning for \d+\s*\w+ without an?\b|\b(?:totals?|counts?|numbers) (?:now )?match\b|"
    r"\b(?:runs?|works?|passes|builds?|compiles?|loads?) again\b|\b(?:is|are) ~?\d[\d.,]*\s*(?:ms|s|secs?|%|mb|gb|k)\s+now\b|"
    r"\b(?:goes|went|gets|got) through\b|\bback to ~?\d|\b(?:are|is|all) back\b|\bno (?:\w+ ){0,2}(?:timeouts?|errors?|crashes|failures?|flakes?|"
    r"alerts?|restarts?|ooms?) since\b|\bran it \d+x\b|\b\d+x (?:locally|in a row)\b[^.]*\bclean\b|"
    r"\b\d+ (?:runs|times) in a row\b|\b(?:correctly|properly) now\b|\bstable (?:for )?~?\d+\s*\w+|\band it (?:works|sticks|builds|passes|"
    r"loads|renders|compiles|runs|starts|connects|scrolls)\b|\b(?:ran|runs?|running|over|across|after)\b[^.]{0,60}?\bwith "
    r"zero (?:stalls|errors|failures|crashes|timeouts|restarts|drops|leaks|flakes|ooms|hangs|alerts)\b",
    re.I)
"""The user saying the fix worked ("that was it", "yep passing timeZone fixed it", "counts match now")."""
_FIXED_RE = re.compile(r"(?:^|[.;,!]\s+)(?:(?:ah|ok|oh)\w*[,.!]*\s+)*(?:did that|done|confirmed|makes sense|(?:bumped|split|moved|set|"
                       r"switched|added|pinned|fixed|created|rewrote|changed|wrapped|swapped|replaced|dropped) \S+)|"
                       r"\bzero \w+ (?:across|in|over|since|for)\b|"
                       r"\b(?:fixed it|fixed in|solved it|(?:that|this) was it|(?:that|this) did it|that'?s it|(?:rule|change|flag|fix|setting|patch|bump|pin)"
                       r"\s+did it|sorted it|(?:it'?s|it is) (?:fixed|sorted)|back to normal)\b", re.I)
"""Said outright: what the user reported was a problem even without a failure word ("all print the last user")."""
PROBLEM_RE = re.compile(
    r"\b(?:errors?|fail(?:s|ed|ing|ure|ures)?|broken|breaks|leak(?:s|ing|ed)?|crash(?:es|ing|ed)?|crashloop\w*|dies|died|dying|"
    r"times out|"
    r"garbage|hung|clobber\w*|no-op|comes? back (?:null|empty|nil|undefined)|mismatch|"
    r"not found|exceptions?|timeouts?|timing out|timed out|hangs|hanging|doubling|duplicat\w*|throws?|throwing|"
    r"thrown|panic\w*|oom\w*|out of memory|slow|doubled|blows? up|blew up|\w+(?:Error|Exception)|lost|vanish\w*|disappear\w*|(?:hard )?faults?|flak\w*|race|deadlock\w*|refused|denied|kept (?:wanting|trying|"
    r"restarting|failing|crashing|timing)|[45]\d\d|freez\w*|stuck|off by (?:one|a day|an hour|\d+)|"
    r"takes? \d+(?:\.\d+)?\s*(?:ms|s|secs?|seconds?|mins?|minutes?|h|hours?)|no matter (?:how|what)|wtf)\b", re.I)
"""Words of a problem report (a system failing, not "I can't remember the command" or "my bread keeps coming
out dense"): without one, "write me a handler" / code / "that works" is no lesson."""
_ASKING_RE = re.compile(r"^(?:user:\s*)?(?:how|what|what's|where|which|who|can|could|is there|i (?:need|want|would "
                        r"like|'d like)|please|pls|help me|convert|write|give me|show me|make)\b", re.I)
"""A question asking how or what ("how do I undo a commit?"), not reporting a failure ("why are my rows
doubling?"): its answer is no lesson."""
_BUT_RE = re.compile(r"\b(?:but|still|except|however)\b", re.I)  # "that fixed it but now X fails": not over
_FILLER_RE = re.compile(r"^(?:sure|ok(?:ay)?|great|good|nice|ah|oh|right|yes|yeah|got it|thanks|happy to help)\b"
                        r"[^.!?]{0,30}[.!]?$", re.I)
_TOLD_WHY_RE = re.compile(
    r"^(?:(?:yep|yeah|yes|right|got it|exactly|correct|bingo|spot on|good call|ah|oh|ugh|ok(?:ay)?|omg|nice|perfect|"
    r"awesome|wow)\b[,.!:\u2014-]*\s*)+"
    r"(?=\S|$)|^(?:it|that) was\s+`?[\w-]*[-_.`\d]", re.I)
"""A reply that agrees with the diagnosis, or names what it was ("right, unmerged parts.", "it was allkeys-lru")."""
DONE_RE = re.compile(
    r"(?:^|[.;:,]\s+|\b(?:and|so)\s+)(?:(?:i|we)(?:'ve| have)?\s+)?(?:now\s+|just\s+)?(?:rewrote|moved|dropped|"
    r"switched|replaced|pinned|added|removed|bumped|raised|lowered|set|gave|given|dedup\w*|wrapped|capped|disabled|"
    r"enabled|split|increased|reduced|changed|upgraded|downgraded)\b", re.I)
"""What was done about it, said in the reply: with :data:`_TOLD_WHY_RE`, the reply confirms the diagnosis."""
_WHY_ASKED_RE = re.compile(r"\bwhy\b[^.!]*\?|\bwhy (?:does|do|is|are|won't|doesn't|isn't|can't|would)\b", re.I)
_BETTER_RE = re.compile(r"\bwent (?:from|down from) ~?[\d.,]+\s*\w* to ~?[\d.,]+", re.I)
"""A number that went down after the fix, said in the reply ("login query went from 1.8s to 3ms"): a confirmation
there, a problem in the report ("row count went from 120k to 310k")."""
PROBLEM_WORDS, REPLY_WORDS, CONFIRM_WORDS, CODE_WORDS = 30, 45, 40, 25
_FENCE_RE = re.compile(r"```[\w+-]*\n(.*?)```", re.S)


def first_code_line(text: str) -> str | None:
    """The first non-empty line of the message's first fenced block: the error a report pastes, the command or
    line a reply says to run (the sentences around it say "this" or "an expression index:")."""
    m = _FENCE_RE.search(text or "")
    if m is None:
        return None
    lines = [ln.strip() for ln in m.group(1).splitlines() if ln.strip()]
    if lines and lines[0].startswith("Traceback"):  # a Python traceback says what failed on its last line
        lines = lines[-1:]
    return lines[0] if lines else None


def _concrete(reply: str) -> bool:
    """A technical reply names something: an identifier, code, an acronym or an address (not "Sounds rough!
    Maybe a walk?")."""
    from ...recall.lexical import identifiers

    return "`" in reply or bool(identifiers(reply)) or bool(re.search(r"\b(?:[A-Z]{3,}[A-Z0-9]*|0x[0-9a-fA-F]+)\b", reply))


def _confirms(said: str) -> bool:
    """The user saying the fix worked, with no "but" after it ("that fixed it but now X fails" is not over; "v1.22
    but go.mod said 1.21. bumped the directive, works now" is)."""
    m = CONFIRMED_RE.search(said) or _FIXED_RE.search(said) or _BETTER_RE.search(said)
    return m is not None and not _BUT_RE.search(said[m.start():])


def confirmed_fix_lessons(items: list[Said], split: Callable[[str], Sequence[str]], score: float) -> None:
    """Each user message that confirms a fix, right after an assistant's reply to a user's problem report, makes
    the report's first problem sentence one lesson of the three messages; the reply's and the confirmation's
    sentences are consumed. ``split`` splits a message into sentences (code blocks removed)."""
    groups = turn_groups(items)
    for asked, reply, confirm in zip(groups, groups[1:], groups[2:]):
        if (asked[0].turn.role, reply[0].turn.role, confirm[0].turn.role) != ("user", "assistant", "user") \
                or any(x.consumed for x in asked + reply + confirm):
            continue
        first = split(confirm[0].turn.text)[:2]  # "there were 312 dupes. deduped and ..., counts match now"
        told = bool(first) and bool(_TOLD_WHY_RE.match(first[0])) and bool(DONE_RE.search(confirm[0].turn.text))
        if not first or not (told or any(_confirms(x) for x in first)) \
                or CONFIRMED_RE.search(asked[0].turn.text):
            continue
        fixed = any(_FIXED_RE.search(x) for x in first)
        why = any(_WHY_ASKED_RE.search(x.text) for x in asked)  # "My row count went from 120k to 310k. Why??"
        shown = first_code_line(asked[0].turn.text)  # the error pasted: what failed, when no sentence says it
        pasted = bool(shown and PROBLEM_RE.search(shown))
        problem = next((x for x in asked if (fixed or why or pasted or PROBLEM_RE.search(x.text)) and not _ASKING_RE.match(
            x.text)), None)
        explained = [s for s in split(reply[0].turn.text) if not _FILLER_RE.match(s)]
        if problem is None or not explained or not _concrete(" ".join(explained)):
            continue
        said = " ".join(confirm[0].turn.text.split())
        fix_code = first_code_line(reply[0].turn.text)
        text = " ".join([
            ended(first_person_to_user(clip_words(problem.text, PROBLEM_WORDS), asked[0].turn.speaker)),
            *([f"`{clip_words(shown, CODE_WORDS)}`"] if shown and shown not in problem.text else []),
            "Fix:", ended(clip_words(" ".join(explained), REPLY_WORDS)),
            *([f"`{clip_words(fix_code, CODE_WORDS)}`"] if fix_code and fix_code not in " ".join(explained) else []),
            *(["User confirmed:", ended(clip_words(said, CONFIRM_WORDS))] if len(said.split()) > 3 else [])])
        if not admit(text):
            continue  # (what the gate refuses must not cost the memories the messages hold on their own)
        tags = tuple(dict.fromkeys(t for x in (problem, *reply, *confirm) if x.cand for t in x.cand.tags))[:4]
        problem.cand = Candidate(text=text, kind="lesson", tags=tags, importance=DEFAULT_IMPORTANCE["lesson"],
                                 metadata={"role": "user"})
        problem.score = max(problem.score, score)
        problem.extra = [*problem.extra, reply[0].turn, confirm[0].turn]
        for x in reply + confirm:
            x.consumed = True


_CAUSE_WORD_RE = re.compile(r"\b(?:because|since|turns? out|turned out|which (?:doesn'?t|didn'?t|was|is)|was \w+ing)\b",
                            re.I)
TOLD_LESSON = Pattern("lesson", re.compile(""), 0.8, ("user",))
"""A lesson told whole in one sentence (:func:`told_whole`), whatever its other patterns say it is."""


def told_whole(sentence: str) -> bool:
    """What broke or why, what was done about it, and that it holds, in one sentence: "R8 was renaming the fields
    since ... added a keep rule ... and release parses correctly now"."""
    return bool(DONE_RE.search(sentence) and CONFIRMED_RE.search(sentence)
                and (PROBLEM_RE.search(sentence) or _CAUSE_WORD_RE.search(sentence)))


CAUSE_AFTER_RE = re.compile(r"^(?:user:\s*)?(?:it\s+)?(?:turns? out|turned out|(?:the\s+)?(?:root\s+)?cause (?:was|is)|"
                            r"the (?:reason|culprit|problem|issue) (?:was|is))\b", re.I)
"""A cause told after its problem ("the apply kept wanting to recreate the instance. turns out ..."): the
lesson needs the sentence before it, which says what went wrong."""


def problem_before_cause(items: list[Said], join: Callable[[str, Said, Said], None]) -> None:
    """A lesson that opens with :data:`CAUSE_AFTER_RE` takes the problem sentence said just before it, in the
    same message (``join(kind, first, second)`` makes ``first`` one memory of both)."""
    for i, it in enumerate(items):
        prev = items[i - 1] if i > 0 else None
        if it.consumed or it.cand is None or it.cand.kind != "lesson" or prev is None or prev.ti != it.ti \
                or prev.consumed or not CAUSE_AFTER_RE.match(it.text) or not PROBLEM_RE.search(prev.text) \
                or (prev.cand is not None and prev.cand.kind not in ("fact", "event")):
            continue
        join("lesson", prev, it)


__all__ = ["CAUSE_AFTER_RE", "TOLD_LESSON", "told_whole", "CONFIRMED_RE", "DONE_RE", "PROBLEM_RE", "confirmed_fix_lessons", "problem_before_cause"]
