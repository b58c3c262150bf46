"""The admission gate: what is never worth storing as a memory (greetings, restated instructions, JSON, logs...).

Used on every candidate before it is stored, and by ``remem audit`` to find junk already in a store.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Admission:
    """The gate's verdict on one text: ``ok`` and, when refused, why (a short machine-readable reason)."""

    ok: bool
    reason: str = "ok"

    def __bool__(self) -> bool:
        return self.ok


# said to be friendly, saying nothing: one to three words each (apostrophes dropped: "you're" is "youre")
_PLEASANTRY_PHRASES = frozenset("""hi|hello|hey|heya|yo|howdy|good morning|good afternoon|good evening|good night|thank|
thanks|thank you|thankyou|thx|ty|tysm|cheers|ok|okay|okey|k|kk|sure|yes|yeah|yep|yup|no|nope|nah|great|cool|nice|
perfect|awesome|excellent|wonderful|amazing|fantastic|got it|sounds good|will do|done|np|no problem|no worries|
youre welcome|welcome|bye|goodbye|see you|see ya|later|lgtm|agreed|right|alright|all right|understood|makes sense|
there|all|everyone|folks|team|so much|a lot|very much|again|indeed|fine|good|wow|haha|lol|please|pls|sir|mate|
buddy|man|thats it|that helps|that works|exactly|correct|true|go ahead|continue|proceed|go on|lets go|
yes please""".replace("\n", "").split("|"))
# the ones that greet or thank someone, who may be named right after ("Hey Gina!", "Thanks so much, Caroline!")
_GREETINGS = frozenset("hi|hello|hey|heya|howdy|good morning|good afternoon|good evening|good night|thank|thanks|"
                       "thank you|thx|ty|cheers|bye|goodbye|see you|see ya|welcome back".split("|"))
_WORD = re.compile(r"[\w']+")
_MAX_PLEASANTRY_WORDS = 40  # past this, something is being said


def _runs(words: Sequence[str], phrases: frozenset[str] = _PLEASANTRY_PHRASES) -> list[bool]:
    """``reach[i]``: ``words[:i]`` is nothing but ``phrases``. Linear: a regex with the phrases as alternatives
    ("yes", "please", "yes please") backtracks exponentially on a long run of them."""
    reach = [True] + [False] * len(words)
    for i in range(len(words)):
        if reach[i]:
            for n in (1, 2, 3):
                if i + n <= len(words) and " ".join(words[i:i + n]) in phrases:
                    reach[i + n] = True
    return reach


def _pleasantry(plain: str) -> bool:
    """Only pleasantries, or a greeting or thanks addressed to one person by name ("Hey Gina!"): no more said
    than "Hey!" (a session summary that opened with it quoted nothing). The name comes right after the greeting
    with no full stop between, so "ok, Redis." (a choice) and "Thanks! Use Redis." stay."""
    tokens = list(_WORD.finditer(plain))
    if not tokens or len(tokens) > _MAX_PLEASANTRY_WORDS:
        return False
    words = [t.group(0).lower().replace("'", "") for t in tokens]
    before = _runs(words)
    if before[-1]:
        return True
    for i, name in enumerate(tokens):
        if not name.group(0)[0].isupper() or not _only(words[i + 1:]):
            continue
        for k in range(i):  # a greeting words[k:g], then pleasantries up to the name
            for g in range(k + 1, min(k + 3, i) + 1):
                if before[k] and " ".join(words[k:g]) in _GREETINGS and _only(words[g:i]) and not re.search(
                        r"[.!?]", plain[tokens[g - 1].end():name.start()]):
                    return True
    return False


def _only(words: Sequence[str]) -> bool:
    return _runs(words)[-1]


_SYSTEM_RE = re.compile(
    r"^(?:you are|you're) (?:a|an|the|my|chatgpt|claude)\b|^as an ai\b|^your (?:task|role|job|goal|purpose) is\b|"
    r"^system(?: prompt)?:|^<\s*system|^(?:instructions|rules|guidelines):|^you (?:must|should) always\b", re.I)
_RESTATE_RE = re.compile(
    r"^(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|great|got it)[,!.]?\s+(?:i'?ll|i will|let me|here)\b|"
    r"(?:(?:now|next|then|first|so),?\s+)?(?:let me|i'?ll now|i will now|i'?m going to|i am going to|"
    r"i'?ll start by|i'?ll go ahead)\b|first,? i'?ll\b|"
    r"(?:you(?:'ve)? (?:asked|want|wanted|would like|requested)|as (?:you )?requested|per your (?:request|instructions)|"
    r"to summari[sz]e your request|your request is|i understand (?:that )?you)\b|"
    # "Here's the updated config" restates; "Here's the problem: ..." is a finding
    r"here(?:'s| is| are) (?:(?:the|a|an)\b(?!\s+(?:problem|issue|culprit|cause|bug|catch|root cause)\b)|your\b|"
    r"what\b|how\b))", re.I)
_TRACE_LINE_RE = re.compile(r'^\s+File ".*", line \d+|^\s+at [\w.$<>/\[\]]+\(.*\)\s*$|^\s+at .+:\d+:\d+\)?$', re.M)
_LOG_LINE_RE = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|TRACE|FATAL)\b|"
    r"(?:Requirement already satisfied|Collecting|Downloading|Installing|Successfully|Building|Compiling|Running|"
    r"Fetching|Resolving|Updating|Removing|Processing)\b|[=\-*#]{5,}|\S+\s+(?:PASSED|FAILED|ERROR|SKIPPED|ok)\b|"
    r"[\w./-]+:\d+(?::\d+)?:|\s*\d+%\s|\$ )", re.I)
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[^\]]+\]")
MAX_MEMORY_CHARS = 2000


def check_admission(text: Any) -> Admission:
    """Is ``text`` worth keeping as a memory? Refuses, with a reason, what never helps recall:

    ``empty`` / ``too_short``, ``pleasantry`` (greetings, thanks, ok), ``system_prompt``, ``restated_instruction``
    (the assistant repeating the request or narrating what it will do), ``json_blob``, ``stack_trace``,
    ``log_output``, ``too_long``, ``no_words`` (mostly symbols or code) and ``only_redacted``.
    """
    if not isinstance(text, str):
        return Admission(False, "empty")
    s = text.strip()
    if not s:
        return Admission(False, "empty")
    if len(s) > MAX_MEMORY_CHARS:
        if "Traceback (most recent call last)" in s or len(_TRACE_LINE_RE.findall(s)) >= 2:
            return Admission(False, "stack_trace")
        return Admission(False, "too_long")
    if _pleasantry(re.sub(r"[^\w\s',.!?:;()\-~*]", " ", s).strip() or "ok"):
        return Admission(False, "pleasantry")
    if _PLACEHOLDER_RE.search(s) and len(content_words(_PLACEHOLDER_RE.sub(" ", s))) < 3:
        return Admission(False, "only_redacted")  # "User's key is [REDACTED:...]" helps no one
    words = re.findall(r"[^\W\d_]{2,}", s)
    if len(s) < 8 or len(words) < 2:
        return Admission(False, "too_short")
    if s[0] in "{[" and _is_json(s):
        return Admission(False, "json_blob")
    if "Traceback (most recent call last)" in s or len(_TRACE_LINE_RE.findall(s)) >= 2:
        return Admission(False, "stack_trace")
    lines = [ln for ln in s.splitlines() if ln.strip()]
    if len(lines) >= 4 and sum(1 for ln in lines if _LOG_LINE_RE.match(ln)) >= max(3, len(lines) // 2):
        return Admission(False, "log_output")
    if sum(len(w) for w in words) / max(1, len(s)) < 0.4:
        if s.count('":') >= 2 or s.count("{") >= 2:
            return Admission(False, "json_blob")
        return Admission(False, "no_words")
    if _SYSTEM_RE.match(s):
        return Admission(False, "system_prompt")
    if _RESTATE_RE.match(s):
        return Admission(False, "restated_instruction")
    return Admission(True)


def admit(text: Any) -> bool:
    """True when ``text`` may be stored as a memory (see :func:`check_admission` for the reasons)."""
    return check_admission(text).ok


def _is_json(s: str) -> bool:
    try:
        json.loads(s)
        return True
    except ValueError:
        return s.count('":') >= 2 and (s.rstrip().endswith(("}", "]", "...", "…")))


_STOPWORDS = frozenset("""a an the and or but if then of to in on at by for with from as is are was were be been being
this that these those it its it's i me my we our you your he she they them their his her user user's users s has have
had do does did not no so very just also now still about into over under than too can will would should could
""".split())


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9'._-]*", text.lower()) if w not in _STOPWORDS and len(w) > 1}


__all__ = ["Admission", "MAX_MEMORY_CHARS", "admit", "check_admission", "content_words"]
