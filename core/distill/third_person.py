"""A user's first-person sentence in the third person ("I prefer" -> "User prefers", "My name is" -> "User's
name is"), so a memory reads right in any later prompt, whoever reads it."""

from __future__ import annotations

import re

LEAD_RE = re.compile(r"^(?:(?:also|and|oh and|btw|by the way|fyi|just so you know|note|ps|p\.s\.|one more thing|"
                      r"for the record|remember(?: that)?|please remember(?: that)?|keep in mind(?: that)?)[,:]?\s+|"
                      # what an assistant says as it finds a cause: "Found it: the flake is a race in ..."
                      r"(?:found it|got it|aha|there it is|here's the (?:problem|issue|culprit|cause))"
                      r"\s*[:!.,\u2014-]+\s*)",
                      re.I)
QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2032": "'"})

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
_NOT_ADVERBS = r"(?!(?:reply|apply|rely|supply|fly|ally|multiply|comply|imply|bully|tally|rally|sully|dally)\b)"
# any "-ly" word but the verbs ending so, and the adverbs that do not end in "-ly"
_ADVERBS = (r"(?:(?:" + _NOT_ADVERBS + r"[a-z]{2,}ly|kind of|sort of|ever|always|never|often|also|still|just|much|now|"
            r"sometimes|already|even|once)\s+)*")
_I_VERB_RE = re.compile(r"^i(?P<contr>'m not|'m|'ve|'d|'ll)?\s*(?P<adv>" + _ADVERBS + r")(?P<verb>don't|do not|"
                        r"haven't|have not|am not|[a-z']+)?", re.I)
CLAUSE_RE = re.compile(r"(?:,\s*|\s+)(?:and|but|so|also)\s+(?=(?:i|my|we)\b)(?!i\s+(?:are|were|both|have both)\b)|"
                       r";\s+", re.I)
"""Where a sentence holds two statements ("I use vim, and my team uses VS Code"); not inside a compound
subject ("my wife and I are moving")."""
WITH_ME_RE = re.compile(r"^my ([\w'-]+(?: [\w'-]+)?) and i\b", re.I)
"""A compound subject with the speaker in it: "My wife and I ..." reads "Ana and their wife ..."."""


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


def first_person_to_user(sentence: str, who: str | None = None) -> str:
    """Rewrite a user's first-person sentence to the third person ("I prefer" -> "User prefers",
    "My name is" -> "User's name is") so a memory reads right in any later prompt. ``who``: the speaker's
    name when the message gave one (a chat of several people: "Melanie prefers ..."), else "User"."""
    who = (who or "").strip() or "User"
    s = LEAD_RE.sub("", sentence).strip()
    out = _rewrite_subject(s, who)
    if out.startswith(who):
        return _INNER_FIRST_PERSON_RE.sub(lambda m: _INNER_FIRST_PERSON[m.group(0).lower()], out)
    return f"{who}: {out}"  # not rewritable: keep the words, say who said them


_INNER_FIRST_PERSON = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs"}
_INNER_FIRST_PERSON_RE = re.compile(r"\b(?:my|me|myself|mine)\b", re.I)


def _rewrite_subject(s: str, who: str) -> str:
    low = s.lower()
    with_me = WITH_ME_RE.match(s)
    if with_me:  # "My wife and I are moving" -> "Ana and their wife are moving"
        return f"{who} and their {with_me.group(1)}" + s[with_me.end():]
    if low.startswith("my "):
        return f"{who}'s " + s[3:]
    if low.startswith("call me "):
        return f"{who} wants to be called " + s[8:]
    m = _I_VERB_RE.match(s)
    if m and (low.startswith(("i ", "i'")) ):
        contr, adv, verb = m.group("contr"), m.group("adv") or "", m.group("verb")
        if contr:
            rest = s[m.start("adv"):] if m.group("adv") is not None else s[m.end("contr"):].lstrip()
            return f"{who} {_IRREGULAR[contr.lower()]} {rest.lstrip()}".rstrip()
        if verb:
            return f"{who} {adv}{_conjugate(verb)}{s[m.end('verb'):]}"
    return s[:1].upper() + s[1:] if s else s


__all__ = ["CLAUSE_RE", "LEAD_RE", "QUOTES", "WITH_ME_RE", "first_person_to_user"]
