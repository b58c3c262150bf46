"""The keyless distiller: deterministic, offline extraction of memories and the session summary.

Sentences are scored against kind patterns (fact, preference, decision, lesson, event); the user's are rewritten
to the third person ("I prefer" -> "User prefers") so a memory reads right in any later prompt. The session
summary keeps the request, the outcome and the files/commands/errors touched.

Both sides of the conversation count: users state facts and standing instructions (including negative ones:
"never", "don't", "avoid", "allergic"), assistants often state the decision or the root cause ("Decision: ...",
"The fix was ..."). A "Reason:" line right after a decision joins it. Questions, offers, one-off instructions
("don't push yet") and referent-less replies ("go with it") are skipped; the admission gate checks the rest.
Covered by the labelled set in ``tests/test_keyless.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .admission import admit
from .artifacts import FENCE_RE, error_lines, extract_identifiers
from .candidates import DEFAULT_IMPORTANCE, Candidate, Distillation
from .conversation import Turn
from ..store.records import normalize_text
from ..recall.tokens import truncate_to_tokens


_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])|(?<=[.!?])\s*\n|\n{2,}|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_BULLET_RE = re.compile(r"^\s*(?:[-*•>]+|\d+[.)]|#+)\s*")
_LEAD_RE = re.compile(r"^(?:also|and|oh and|btw|by the way|fyi|just so you know|note|ps|p\.s\.|one more thing|"
                      r"for the record|remember(?: that)?|please remember(?: that)?|keep in mind(?: that)?)[,:]?\s+",
                      re.I)
_QUESTION_RE = re.compile(r"\?\s*$")
_REASON_RE = re.compile(r"\b(?:because|since|so that|due to|as it|otherwise|which means|in order to)\b", re.I)


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    score: float
    roles: tuple[str, ...]
    min_words: int = 0  # loose patterns ("don't ...") only count in a sentence long enough to say something
    labelled: bool = False  # "Decision: ..." / "Fix: ...": short is fine, the label says what it is


def _p(kind: str, score: float, roles: tuple[str, ...], pattern: str, min_words: int = 0,
       labelled: bool = False) -> _Pattern:
    return _Pattern(kind, re.compile(pattern, re.I), score, roles, min_words, labelled)


_U, _A, _UA = ("user",), ("assistant",), ("user", "assistant")
# words that make an instruction a one-off ("don't push yet"), not a standing preference
_NOT_ONE_OFF = (r"(?!.*\b(?:yet|for now|right now|just now|this time|today|tonight|again|"
                r"in this (?:pr|commit|change|file|branch))\b)")
_PATTERNS: tuple[_Pattern, ...] = (
    _p("preference", 0.9, _U, r"\b(?:i|we)\s+(?:really\s+|generally\s+|usually\s+|strongly\s+|much\s+)?"
       r"(?:prefer|like|love|enjoy|hate|dislike|can'?t stand|despise|avoid)\b"),
    _p("preference", 0.85, _U, r"\b(?:i|we)\s+(?:don'?t|do not|never)\s+(?:like|want|use|enjoy)\b"),
    _p("preference", 0.85, _U, r"\b(?:i|we)(?:'d| would)\s+(?:rather|prefer|like)\b|\bmy (?:favou?rite|preferred)\b"),
    _p("preference", 0.8, _U, r"^(?:please\s+)?(?:always|never(?!\s+mind\b)|don'?t ever|do not ever|"
       r"make sure (?:to|you)|from now on|going forward|in (?:the )?future)\b"),
    _p("preference", 0.8, _U, r"\b(?:i|we)\s+(?:always|never|usually|rarely|only)\s+(?!know\b|remember\b)\w+"),
    _p("preference", 0.75, _U, r"\b(?:always|never)\s+(?:use|run|write|add|put|commit|push|ask|call|format|"
       r"include|mention|reply|answer|respond)\b"),
    _p("fact", 0.85, _U, r"\bmy name(?:'s| is)\b|\bcall me\b|\bi(?:'m| am) called\b"),
    _p("fact", 0.8, _U, r"\bi\s+(?:work|worked|am working)\s+(?:at|for|on|as|in)\b|\bi(?:'m| am) (?:based|located) in\b|"
       r"\bi\s+(?:live|lived|moved)\s+(?:in|to|at)\b|\bi(?:'m| am) from\b"),
    _p("fact", 0.7, _U, r"^i(?:'m| am) an?\s+(?!bit\b|little\b|lot\b|few\b)\w+"),
    _p("fact", 0.7, _U, r"^(?:i|we)(?:'m|'re| am| are)\s+(?:both\s+|all\s+)?(?:vegetarian|vegan|pescatarian|"
       r"allergic|lactose|gluten|diabetic|married|single|divorced|retired|pregnant|left-handed|colou?r-?blind|"
       r"deaf|blind|remote|freelance|self-employed|unemployed|based|located|from|originally)\b"),
    _p("fact", 0.7, _U, r"^(?:(?:also|and|btw|oh|fyi|so)[,:]?\s+)*(?:my|our)\s+[\w-]+(?:\s+[\w-]+)?\s+"
       r"(?:is|are|was|were|has|have|lives|works|uses|runs)\b"),
    _p("fact", 0.7, _U, r"\bmy\s+(?:wife|husband|partner|son|daughter|kids?|children|dog|cat|team|company|employer|"
       r"manager|boss|role|job|title|email|birthday|timezone|time zone|project|stack|os|laptop|machine|setup|"
       r"editor|ide|shell|language|server|database|repo|repository|app|startup|product|client|customer)\b"),
    _p("fact", 0.65, _U, r"\b(?:i|we)\s+(?:use|run|deploy|host|have|own|maintain|develop|build)\s+(?!to\b|it\b|this\b|"
       r"that\b)\w+"),
    _p("fact", 0.65, _UA, r"\b(?:our|the)\s+(?:project|team|company|stack|app|repo|codebase|api|service|backend|"
       r"frontend|database|server|cluster|deployment|ci|pipeline)\s+(?:is|uses|runs|has|lives|targets|requires|"
       r"depends)\b"),
    _p("decision", 0.85, _UA, r"\b(?:we|i)(?:'ve| have)?\s+decided\b|\bdecided to\b|\bthe decision (?:is|was)\b|"
       r"\bsettled on\b|\bopted (?:for|to)\b|\bwe chose\b|\bi chose\b|\bwe(?:'re| are) going with\b"),
    _p("decision", 0.75, _UA, r"\blet'?s\s+(?:use|go with|switch|stick|keep|move|adopt|pin|drop|replace|stay)\b|"
       r"\bgoing with\b|\bwe(?:'ll| will)\s+(?:use|go with|switch|keep|stick|adopt|pin|drop|replace)\b|"
       r"\bthe plan is\b|\bwe should (?:use|switch|keep|pin|drop)\b"),
    _p("decision", 0.6, _UA, r"\b(?:switched|migrated|moved|changed|upgraded|downgraded|pinned)\s+(?:\w+\s+){0,3}"
       r"(?:to|from)\b|\binstead of\b"),
    _p("lesson", 0.85, _UA, r"\b(?:the\s+)?(?:root cause|problem|issue|bug|culprit|cause|error)\s+(?:was|is|turned out)\b|"
       r"\bturns? out\b|\bturned out\b|\bthe (?:fix|solution|workaround|trick) (?:was|is)\b"),
    _p("lesson", 0.8, _UA, r"\b(?:fixed|solved|resolved)\s+(?:it\s+|this\s+|that\s+|the\s+\w+\s+)?(?:by|with)\b|"
       r"\bcaused by\b|\bworkaround\b|\blesson(?:s)? learn(?:ed|t)\b|\bnote to self\b|\bgotcha\b"),
    _p("lesson", 0.75, _UA, r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t|will not|can'?t|cannot)\s+work\b|"
       r"\bfailed because\b|\bbreaks? (?:when|if|because)\b|\bmake sure (?:to|that)\b|\bneeds? to be\b"),
    _p("event", 0.6, _UA, r"\b(?:it|that|this)\s+(?:worked|works now|did the trick|fixed it|solved it)\b|"
       r"\ball (?:\d+ )?tests? (?:pass|passed|are passing|green)\b|\b(?:deployed|released|shipped|merged|published)\b"),
    # labelled statements ("Decision: ...", "Root cause: ..."), common in assistants' answers and ADR-style notes
    _p("decision", 0.95, _UA, r"^(?:final\s+|the\s+)?(?:decision|decided|verdict|resolution|choice|"
       r"we(?:'ll| will) go with)\s*(?:made\s*)?[:\-\u2013\u2014]\s*\S", min_words=3, labelled=True),
    _p("lesson", 0.9, _UA, r"^(?:the\s+)?(?:root[ -]cause|cause|fix|solution|workaround|lessons?(?: learn(?:ed|t))?|"
       r"takeaway|conclusion|finding|gotcha|pitfall|note to self|learning)\s*:\s*\S", min_words=3, labelled=True),
    # negative preferences said as imperatives: "Don't suggest Java ...", "Avoid ORMs ...", "No more mocks ..."
    _p("preference", 0.8, _U, r"^(?:please\s+)?(?:avoid\s+(?!it\b|that\b|this\b|them\b)|no more\s+(?!questions\b|"
       r"talk|chat|excuses\b|of (?:this|that)\b)|stop\s+\w+ing\b)" + _NOT_ONE_OFF, min_words=3),
    _p("preference", 0.7, _U, r"^(?:please\s+)?(?:don'?t|do not)\s+(?!worry|bother|forget|mind|know|think|"
       r"understand|get|see|have|need|rush|panic|care|wait|do (?:that|this|it)\b)\w+" + _NOT_ONE_OFF, min_words=5),
    # facts: identity and hosting phrased with "we", and "the X is <identifier>" (hosts, URLs, ids, branches)
    _p("fact", 0.7, _U, r"^(?:i|we)(?:'m|'re| am| are)\s+an?\s+(?!bit\b|little\b|lot\b|few\b|minute\b|"
       r"second\b)\w+"),
    _p("fact", 0.65, _U, r"\b(?:i|we)\s+(?:deploy|host|ship|publish|run)\s+(?:it\s+|everything\s+)?"
       r"(?:to|on|in|via)\s+\S"),
    _p("fact", 0.7, _U, r"^(?:(?:also|and|btw|oh|fyi|so)[,:]?\s+)*(?:the|our|my)\s+(?:[\w-]+\s+){0,3}(?:is|are|lives|"
       r"runs|sits)\s+(?:at\s+|on\s+|in\s+|called\s+|named\s+)?[`'\"]?(?=[\w-]*(?:[a-z][\w-]*\d|\d[\w-]*[a-z]|"
       r"[./:@_][\w/]))"),
    # decisions: more ways to say a choice was made
    _p("decision", 0.8, _UA, r"\b(?:we|i)\s+went with\b|^(?:ok(?:ay)?,?\s+|fine,?\s+|then\s+)?go with\s+(?!it\b|"
       r"that\b|this\b|them\b|the (?:first|second|third|last|other|former|latter)\b|whatever\b|your)|"
       r"\b(?:we|i)(?:'ve| have)?\s+agreed\s+(?:to|on|that)\b|\bagreed (?:to|on)\b|"
       r"^(?:opted for|settled on|sticking with)\b|"
       r"\b(?:chose|picked|selected)\s+\S+(?:\s+\S+){0,3}\s+(?:over|instead of|rather than)\b"),
    _p("decision", 0.75, _UA, r"\b(?:we(?:'re| are|'ll| will)|let'?s)\s+(?:be\s+)?(?:replac|switch|migrat|mov)"
       r"(?:e|es|ing)\b(?=.*\b(?:with|to|from|over)\b)"),
    # lessons: "<something> fixed the <problem>" (not "I fixed it" / "That fixed it")
    _p("lesson", 0.75, _UA, r"^(?!(?:i|we|it|this|that|which|these|those|he|she|they|you)\b)\S.{3,}?\b(?:fixed|solved|"
       r"resolved|cured)\s+(?:the|our|a|an|all)\b"),
    # outcomes with numbers: "p95 latency dropped from 900 ms to 120 ms"
    _p("event", 0.7, _UA, r"\b(?:dropped|fell|went|rose|improved|increased|decreased|reduced|grew|shrank|"
       r"cut|sped up|slowed)\b.*\bfrom\s+~?\$?\d[\d.,]*\s*\S*\s+to\s+~?\$?\d"),
)
_REASON_LABEL_RE = re.compile(r"^(?:reason|why|rationale|because|motivation)\b\s*:?\s*\S", re.I)
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2032": "'"})

_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "'m": "is", "'ve": "has", "'d": "would",
              "'ll": "will", "don't": "doesn't", "do not": "does not", "haven't": "hasn't", "have not": "has not",
              "am not": "is not", "'m not": "is not"}
_MODALS = {"can", "could", "would", "will", "should", "must", "might", "may", "can't", "cannot", "won't",
           "wouldn't", "shouldn't", "couldn't", "was", "wasn't", "had", "did", "didn't", "went", "got", "made",
           "left", "chose", "bought", "built", "wrote", "ran", "met", "began", "became", "grew", "knew", "thought",
           "told", "said", "saw", "took", "gave", "found", "felt", "kept", "lost", "paid", "sent", "spent", "brought",
           "caught", "taught", "sold", "held", "heard", "meant", "forgot", "broke", "spoke", "drove", "flew", "ate",
           "drank", "slept", "won", "understood", "stood", "sat", "fell", "led", "read", "put", "set", "cut", "let",
           "quit", "hit", "shut", "might've", "must've", "used", "need", "needed"}
_ADVERBS = r"(?:(?:really|generally|usually|strongly|always|never|often|mostly|also|still|only|just|much|"
_ADVERBS += r"definitely|typically|normally|currently|now|actually|mainly|rarely|sometimes)\s+)*"
_I_VERB_RE = re.compile(r"^i(?P<contr>'m not|'m|'ve|'d|'ll)?\s*(?P<adv>" + _ADVERBS + r")(?P<verb>don't|do not|"
                        r"haven't|have not|am not|[a-z']+)?", re.I)
_CLAUSE_RE = re.compile(r"(?:,\s*|\s+)(?:and|but|so|also)\s+(?=(?:i|my|we)\b)|;\s+", re.I)


def _conjugate(verb: str) -> str:
    v = verb.lower()
    if v in _IRREGULAR:
        return _IRREGULAR[v]
    if v in _MODALS or v.endswith("ed") or "'" in v:
        return v
    if v.endswith(("s", "sh", "ch", "x", "z", "o")):
        return v + "es"
    if len(v) > 2 and v.endswith("y") and v[-2] not in "aeiou":
        return v[:-1] + "ies"
    return v + "s"


def _first_person_to_user(sentence: str) -> str:
    """Rewrite a user's first-person sentence to the third person ("I prefer" -> "User prefers",
    "My name is" -> "User's name is") so a memory reads right in any later prompt."""
    s = _LEAD_RE.sub("", sentence).strip()
    out = _rewrite_subject(s)
    if out.startswith("User"):
        return _INNER_FIRST_PERSON_RE.sub(lambda m: _INNER_FIRST_PERSON[m.group(0).lower()], out)
    return f"User: {out}"  # not rewritable: keep the words, say who said them


_INNER_FIRST_PERSON = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs"}
_INNER_FIRST_PERSON_RE = re.compile(r"\b(?:my|me|myself|mine)\b", re.I)


def _rewrite_subject(s: str) -> str:
    low = s.lower()
    if low.startswith("my "):
        return "User's " + s[3:]
    if low.startswith("call me "):
        return "User wants to be called " + s[8:]
    m = _I_VERB_RE.match(s)
    if m and (low.startswith(("i ", "i'")) ):
        contr, adv, verb = m.group("contr"), m.group("adv") or "", m.group("verb")
        if contr:
            rest = s[m.start("adv"):] if m.group("adv") is not None else s[m.end("contr"):].lstrip()
            return f"User {_IRREGULAR[contr.lower()]} {rest.lstrip()}".rstrip()
        if verb:
            return f"User {adv}{_conjugate(verb)}{s[m.end('verb'):]}"
    return s[:1].upper() + s[1:] if s else s


def split_sentences(text: str) -> list[str]:
    """Prose sentences and bullet items, with code blocks removed."""
    prose = FENCE_RE.sub("\n\n", text or "")
    out = []
    for part in _SENT_SPLIT_RE.split(prose):
        part = _BULLET_RE.sub("", part.strip()).strip()
        part = re.sub(r"\s+", " ", part.replace("**", "")).strip(" *_")
        if part:
            out.append(part)
    return out


_REQUEST_RE = re.compile(r"\?\s*$|\b(?:can|could|would|will) you\b|\bplease\b|\bhelp\b|\bhow (?:do|can|to|should)\b|"
                         r"\bi (?:want|need|would like|'d like)\b|^(?:let'?s|fix|add|write|create|make|implement|build|"
                         r"update|change|remove|delete|refactor|explain|find|show|run|set up|setup|install|debug|"
                         r"review|rename|move|convert|generate|test|check|investigate|deploy|migrate|tell me|why|what|"
                         r"where|when|which|who)\b", re.I)


def _end(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _clip_words(text: str, n: int) -> str:
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]).rstrip(",;:") + " …"


class KeylessDistiller:
    """Deterministic, offline extraction: pattern-scored sentences become memories with sensible kinds, and the
    session summary keeps the request, the outcome and the files/commands/errors touched. Never fails."""

    name = "keyless"

    def __init__(self, *, max_memories: int = 12, min_score: float = 0.6, max_words: int = 60) -> None:
        self.max_memories = max_memories
        self.min_score = min_score
        self.max_words = max_words

    # ------------------------------------------------------------------ memories
    def candidates(self, turns: Sequence[Turn]) -> list[Candidate]:
        scored: list[tuple[float, int, Candidate]] = []
        seen: set[str] = set()
        pending_errors: list[str] = []
        order = 0
        for t in turns:
            if t.role == "tool_result":
                pending_errors.extend(error_lines(t.text)[-1:])
                continue
            if t.role not in ("user", "assistant"):
                continue
            sentences = split_sentences(t.text.translate(_QUOTES))
            if t.role == "user":
                sentences = [c.strip(" ,;") for sent in sentences for c in _CLAUSE_RE.split(sent) if c.strip(" ,;")]
            previous: Candidate | None = None
            for sent in sentences:
                order += 1
                if previous is not None and previous.kind == "decision" and _REASON_LABEL_RE.match(sent):
                    previous.text = _end(f"{previous.text} {_clip_words(sent, self.max_words // 2)}")
                    previous = None  # "Decision: X.\nReason: Y." is one memory: the reason rides along
                    continue
                cand = self._score(sent, t.role, pending_errors)
                previous = cand[1] if cand is not None else None
                if cand is None:
                    continue
                score, c = cand
                if t.id:
                    c.sources = [t.id]
                c.occurred_at = t.at
                key = normalize_text(c.text)
                if key in seen:
                    continue
                seen.add(key)
                scored.append((score, order, c))
        best = sorted(scored, key=lambda x: -x[0])[: self.max_memories]
        return [c for _, _, c in sorted(best, key=lambda x: x[1])]

    def _score(self, sentence: str, role: str, pending_errors: list[str]) -> tuple[float, Candidate] | None:
        words = sentence.split()
        if len(words) < (2 if role == "user" else 3):
            return None
        best: _Pattern | None = None
        for pat in _PATTERNS:
            if role in pat.roles and len(words) >= pat.min_words and pat.regex.search(sentence) \
                    and (best is None or pat.score > best.score):
                best = pat
        if best is None or (role == "assistant" and len(words) < 4 and not best.labelled):
            return None
        score = best.score
        if _QUESTION_RE.search(sentence):
            if best.kind in ("preference", "fact", "decision"):
                return None
            score -= 0.3
        if _REASON_RE.search(sentence):
            score += 0.1
        from ..recall.lexical import identifiers

        idents = identifiers(sentence)
        if idents:
            score += 0.05
        if len(words) > self.max_words:
            score -= 0.15
        if best.kind == "event" and not idents and len(words) < 8:
            return None  # "It worked." alone says nothing later; the summary keeps the outcome
        if score < self.min_score:
            return None
        text = _clip_words(sentence, self.max_words)
        if role == "user":
            text = _first_person_to_user(text)
        else:
            text = _LEAD_RE.sub("", text).strip()
            text = text[:1].upper() + text[1:]
        text = _end(text)
        meta: dict[str, Any] = {"role": role}
        if best.kind == "lesson" and pending_errors:
            err = pending_errors.pop()
            if err.lower() not in text.lower():
                text = f"{text} (error: {err[:160]})"
                meta["error"] = err[:200]
        if not admit(text):
            return None
        tags = tuple(i for i in idents if len(i) <= 60)[:4]
        return score, Candidate(text=text, kind=best.kind, tags=tags, importance=DEFAULT_IMPORTANCE[best.kind],
                                metadata=meta)

    # ------------------------------------------------------------------ summary
    def summary_parts(self, turns: Sequence[Turn]) -> dict[str, Any]:
        """Structured pieces of the session summary (kept in its metadata so later captures can extend it)."""
        requests: list[str] = []
        for t in turns:
            if t.role != "user" or not admit(t.text.strip()[:600]):
                continue
            sents = [_LEAD_RE.sub("", x).strip() for x in split_sentences(t.text) if admit(x)]
            asks = [x for x in sents if _REQUEST_RE.search(x)]
            picked = sents[:1] + [a for a in asks[:1] if a not in sents[:1]]  # context + the actual ask
            req = " ".join(_clip_words(x, 25) for x in picked)
            if req and req not in requests:
                requests.append(req)
        outcome = ""
        for t in reversed(turns):
            if t.role == "assistant":
                sents = [s for s in split_sentences(t.text) if admit(s)]
                if sents:
                    outcome = _clip_words(" ".join(sents[:2]), 45)
                    break
        return {"requests": requests, "outcome": outcome, **extract_identifiers(turns)}

    @staticmethod
    def merge_parts(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
        if not old:
            return dict(new)
        out: dict[str, Any] = {}
        for key in ("requests", "files", "commands", "errors", "tools"):
            merged: list[str] = []
            for item in [*(old.get(key) or []), *(new.get(key) or [])]:
                if isinstance(item, str) and item not in merged:
                    merged.append(item)
            out[key] = merged
        out["outcome"] = new.get("outcome") or old.get("outcome") or ""
        return out

    @staticmethod
    def render_summary(parts: Mapping[str, Any], max_tokens: int = 300) -> str | None:
        requests = list(parts.get("requests") or [])
        if not requests and not parts.get("outcome"):
            return None
        bits = []
        if requests:
            verb = "asked" if _REQUEST_RE.search(requests[0]) else "said"
            bits.append(f"Session summary. The user {verb}: {_end(requests[0])}")
            later = requests[1:]
            if len(later) > 3:
                later = [later[0], "…", *later[-2:]]
            if later:
                bits.append("Then: " + " ".join(_end(r) for r in later))
        else:
            bits.append("Session summary.")
        if parts.get("outcome"):
            bits.append(f"Outcome: {_end(parts['outcome'])}")
        for key, label, n in (("files", "Files", 8), ("commands", "Commands", 5), ("errors", "Errors seen", 3)):
            items = list(parts.get(key) or [])[:n]
            if items:
                bits.append(f"{label}: " + ", ".join(f"`{i}`" if key == "commands" else i for i in items) + ".")
        return truncate_to_tokens(" ".join(bits), max_tokens, keep="head")

    def distill(self, turns: Sequence[Turn], *, context_turns: Sequence[Turn] | None = None,
                previous: Mapping[str, Any] | None = None) -> Distillation:
        """Candidates from ``turns`` (the new part of the session); the summary covers ``context_turns``
        (the whole session when known) merged with ``previous`` summary parts."""
        parts = self.summary_parts(context_turns if context_turns is not None else turns)
        if context_turns is None:
            parts = self.merge_parts(previous, parts)
        return Distillation(candidates=self.candidates(turns), summary=self.render_summary(parts),
                            summary_metadata={"parts": parts})


__all__ = ["KeylessDistiller", "split_sentences"]
