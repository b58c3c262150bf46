"""Sentences that lean on what is not said with them: a photo, an earlier message, the listener.

"It's right by the park we usually walk", "Tim is a huge fan of this genre!", "I love the way the sunlight hits
this": said next to a photo or a question they answer, they mean something; stored alone they are fragments that
nobody can use later (issue 13: "no context-free fragments"). The episode keeps them as said, so recall still
finds them in their conversation; they just do not become memories of their own.

Between two people (a conversation of named users, such as LoCoMo's friends, where photos are shown and the
talk is small) such fragments are left out, and so is a sentence about the listener or the moment ("You're
right, I love it", "Let's keep motivating each other", "Keep on keepin' on, bud!"): no memory of either. Said to
an assistant, the same forms are rules and instructions ("It's important to me that you never push to main",
"Keep answers short", "Let's use Postgres 16"), so there only the moment's own phrases are left out ("Got to go
now", "waiting to hear how it turns out"). Nothing that names something concrete is left out.
"""

from __future__ import annotations

import re

from ...recall.lexical import identifiers

# "Yeah, Maria, ...", "Haha, ...", "Remember, ...": what comes before the sentence proper
_LEAD_RE = re.compile(
    r"^(?:(?i:yeah|yes|yep|yup|oh|ooh|wow|whoa|haha|hah|lol|hey|well|and|but|so|also|remember|nah|nope|ugh|aww+|"
    r"hmm+|ok|okay|sure|totally|true|honestly|anyway|btw|by the way|plus|actually|definitely|absolutely)"
    r"[,!.]*\s+|[A-Z][a-z]+,\s+)*")
_VOCATIVE_RE = re.compile(r",\s*(?:[A-Z][a-z]+|bud|buddy|pal|mate|friend|dude|man|girl)(?=\s*(?:[,.!?]|$))")
_CALLED_RE = re.compile(r"(?i:yeah|yes|wow|oh|thanks|haha|hey|aw+|omg|ooh)[,!]?\s+[A-Z][a-z]+[,!]")
"""The listener called by name ("Yeah, Sam, love is truly amazing"): said to them."""
_CONCRETE_RE = re.compile(r"\d|https?://|`|\b\w+\.[a-z]{1,5}\b|(?<=[\w,;:] )[A-Z][\w-]+")

# the subject is a thing only the photo or the last message shows
_DEICTIC_LEAD_RE = re.compile(
    r"^(?:it'?s|it is|it was|it'?ll|this is|this was|this one|(?:that'?s|that is)(?! (?:how|why)\b)|that was|that'?ll|these are|"
    r"those are|here'?s|here is|here are|there'?s|there (?:are|were|was|is)|they'?re|they are|(?:those|these|that|this) things?|"
    r"(?:conversations|moments|days) like (?:this|these))\b",
    re.I)
# the object is: "a huge fan of it", "the way the sunlight hits this", "I have one", "a fan of this genre"
_DEICTIC_END_RE = re.compile(  # "I prefer tabs to spaces but ..., I like them" says more
    r"^(?:(?!\b(?:but|so|because|though)\b)[^;])*?\b(?:hits|love[sd]?|like[sd]?|enjoy(?:s|ed)?|hate[sd]?|into|doing|"
    r"have|has|had|forget|(?:fan|fond|proud) of)\s+"
    r"(?:it|this|that|these|those|them|one|ones)(?:\s+(?:one|ones|genre|city|place|spot|thing|things|stuff|game|pic|"
    r"photo|picture|song|book|show|movie|area|idea|field|kind|type|moments?|memor(?:y|ies)|activity|experience))?(?:\s+(?:so much|a lot|too|as well|either))?"
    r"\s*[.!]*$|\bbeen doing (?:it|this|that)\b|\b(?:fan|fond) of (?:it|this|that|them)\b|\bsaw (?:this|that|it) coming\b",
    re.I)
# the conversation's own moment: leaving, announcing news, waiting to hear, how things are going
_MOMENT_RE = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)? )?(?:got to|gotta|have to|need to) (?:go|run|head (?:out|off)|leave|sign off)\b|"
    r"^(?:i|we) (?:have|got|'ve got|have got) (?:some )?(?:great|good|big|exciting|amazing|awesome|fantastic|"
    r"interesting) news\b|\b(?:wait(?:ing)?|can'?t wait|excited|eager) to (?:hear|see|find out) (?:how|what|if|when)\b|"
    r"\b(?:is|are|'s|'re|has been|have been) going (?:really |so |pretty |super )?(?:great|well|good|fine|ok|okay|"
    r"smoothly|awesome|amazing)\s*[.!]*$|\btake a look\b|\bcheck (?:it|this|that|them) out\b|^always (?:happy|glad) to\b|"
    r"^(?:i )?can'?t wait (?:for|to|till|until)\b", re.I)
# between people: about the listener or the moment, not about the speaker
_TO_PEER_RE = re.compile(
    r"^(?:you|your|you'?re|you'?ve|you'?ll|you'?d|u|let'?s|let me|keep|make sure|never say|don'?t forget|"
    r"what you|don'?t|do not|take care|good for you)\b|\byou (?:could|should|can|might|must|need|deserve|"
    r"got|have got|'ve got)\b|\byourself\b|\byour (?:talent|motivation|support|skills?|hard work|dedication|passion|"
    r"dreams?|goals?|journey|creativity|strength|imagination)\b|\b(?:for|behind|with|rooting for|proud of|there for) "
    r"you\b", re.I)


_GUESS_RE = re.compile(r"^(?:i\s+)?(?:wonder(?:ing)?|maybe|perhaps|i guess|not sure|could it be)\b|"
                       r"(?:[.;]\s+|,\s+|\.\.\.\s*)(?:could be|might be|maybe|probably|possibly)\b(?![^.]*\b(?:confirmed|"
                       r"turned out|was it)\b)|^(?:don'?t|do not|no need to) \w+\b[^.]{0,80}\byet\b|\b(?:unbearable|driving me (?:crazy|nuts)|"
                       r"so done with|send help|kill me)\b", re.I)


def a_guess(sentence: str) -> bool:
    """A hunch not checked yet ("wonder if the 502s are the ALB idle timeout...", "p95 doubled after the deploy.
    could be the new index"), a hold for now ("don't merge #4471 yet"), or a vent ("... this is unbearable"): no
    memory until it is known or settled."""
    return bool(_GUESS_RE.search(_LEAD_RE.sub("", sentence.strip())))


def concrete(sentence: str) -> bool:
    """Names something: a number, a link, an identifier, a proper noun that is not just the listener's name."""
    plain = _VOCATIVE_RE.sub("", _LEAD_RE.sub("", sentence.strip()))
    return bool(_CONCRETE_RE.search(plain)) or bool(identifiers(plain))


def leans_on_context(sentence: str, *, peer: bool = False) -> bool:
    """Whether ``sentence`` means nothing stored alone (see the module docstring); ``peer``: said between two
    people, not to an assistant."""
    body = _LEAD_RE.sub("", sentence.strip())
    if not (_MOMENT_RE.search(body) or peer and (_DEICTIC_LEAD_RE.match(body) or _DEICTIC_END_RE.search(body)
                                                  or _TO_PEER_RE.search(body) or _CALLED_RE.match(sentence.strip()))):
        return False
    return not concrete(sentence)


__all__ = ["a_guess", "concrete", "leans_on_context"]
