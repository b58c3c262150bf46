"""What one person says to the other about the moment: encouragement, compliments, sympathy, promises to tell
them later. Said between friends (LoCoMo) it is no memory of either; the keyless distiller cuts it from the
sentences it keeps (:mod:`remem.core.distill.keyless`)."""

from __future__ import annotations

import re

TO_LISTENER_RE = re.compile(
    # encouragement: "keep going", "don't give up", "don't let X bring you down", "you've got this"
    r"\bkeep (?:going|it up|up the (?:good|great|amazing|awesome|hard) work|chasing|pushing|on (?:going|pushing|"
    r"trying)|at it|trying|believing|smiling|shining|rocking|learning|growing|dreaming|each other going)"
    r"(?=\s*(?:[,.!:;\u2014\u2013-]|$|and\b|you\b|(?:my )?(?:friend|pal|buddy|mate)\b))|"
    r"\b(?:don'?t|do not|never) (?:ever )?(?:give up|quit|stop (?:believing|trying|dreaming|being (?:yourself|you))|"
    r"doubt yourself|let (?:\w+\s+){0,5}(?:stop|get|bring|hold|keep) you(?: down| back)?(?=\s*(?:[,.!;]|$))|"
    r"let anyone tell you)|\byou(?:'ve| have)? got this\b|\byou can do (?:it|this)\b|\bproud of you\b|"
    r"\bbelieve in yourself\b|\b(?:chas(?:e|ing)|follow(?:ing)?|go after|go for) your (?:dreams?|heart|passion)\b|"
    # compliments and sympathy: "love how you ...", "you never shy away", "that must have been hard for you"
    r"\b(?:love|like|admire|appreciate|adore)\s+(?:how|that|the way)\s+you\b|"
    r"^(?:\w+,\s*)?you(?:'re| are| were)?\s+(?:always|never|so|such|really|truly|the best|amazing|awesome|"
    r"incredible|inspiring|brave|strong)\b(?!.*\b(?:should|must|need|needs|allowed|supposed|have to|to (?:use|run|"
    r"commit|push|merge|deploy)|use|run|write|add|commit|push|merge|deploy|install|test|ask|call|format|include|"
    r"mention|reply|answer|respond|forget|break|skip|miss)\b)|"
    r"\b(?:must|might) (?:have been|be) (?:\w+\s+){0,2}(?:hard|tough|rough|stressful|scary|difficult|awful|"
    r"exhausting|amazing|wonderful|fun|exciting) for you\b|\b(?:glad|happy|sorry) (?:that )?(?:your?|to hear)\b|"
    r"\balways (?:here|there) (?:for|if) you\b|\balways here to (?:help|cheer you on|support you|listen)\b|"
    r"\bglad (?:i|we) have you\b|\b(?:have|got) each other(?:'s backs?)?\b|"
    # promises to the listener: "I'll let you know how it goes", "can't wait to hear how it turns out"
    r"\b(?:i'?ll|i will|we'?ll|we will)\s+(?:make sure to\s+|be sure to\s+|definitely\s+|totally\s+)?(?:let you know|"
    r"tell you (?:all )?(?:about|later|more|everything|on the phone|when)|fill you in|update you|keep you (?:posted|"
    r"updated|in the loop))\b|\b(?:photo|picture|pic|shot|video|post|painting|drawing)s?\s+(?:[\w-]+\s+){0,4}"
    r"(?:you|u)\s+(?:posted|shared|sent|took|made|painted|drew)\b|"
    r"\bcan'?t wait to (?:hear|see how|see what)\b|\b(?:a|such a|some|big) (?:\w+ )?(?:story|news|gossip) for you\b|"
    # their things and deeds: "your enthusiasm is contagious", "your support means a lot", "I love your garden"
    r"\byour\s+(?:[\w-]+\s+){0,4}(?:is|are|was|were)\s+(?:so\s+|really\s+|truly\s+|just\s+)?(?:contagious|"
    r"inspiring|infectious|amazing|awesome|incredible|admirable|impressive|wonderful)\b|"
    r"\byour (?:support|help|kindness|words|friendship|encouragement|advice|message)\s+(?:really\s+|truly\s+)?"
    r"(?:means?|meant)\b|^(?:\w+,\s*)?i (?:really |just |absolutely )?(?:love|adore) your\b|"
    # admiring the listener's things: "That bowl is awesome, Mel!"
    r"^(?:that|this|your|those|these) (?:\w+ ){1,2}(?:is|are|looks?|sounds?) (?:so |really |just )?(?:awesome|"
    r"amazing|great|beautiful|gorgeous|lovely|cool|stunning|incredible|adorable|cute)\b[^.?]*!$|"
    r"\bthanks? (?:you )?for (?:always|being)\b|"
    r"\blet'?s make (?:tomorrow|today|tonight)(?![\w'])|\blet'?s make (?:a difference|(?:\w+\s+){0,2}memories)\b|"
    # cheering each other on: "let's keep spreading positivity", "keep doing what you're doing", "keep me posted"
    r"\b(?:let'?s|we'?ll|we will|gonna) keep (?:on )?(?:spreading (?:the )?(?:love|positivity|kindness|awareness|"
    r"good vibes|joy)|\w+ing (?:each other|one another)|chasing (?:our|your|those) dreams|reaching for (?:our|your|"
    r"the) (?:dreams|stars|goals)|making (?:a |an )?(?:difference|impact)|making (?:great |good |awesome )?memories|"
    r"mov(?:ing|in'?) forward(?=\s*(?:[,.!;]|$|together\b))|going after (?:our|your) (?:dreams|goals)|"
    r"rooting for you|being (?:positive|kind|awesome|amazing|strong)(?=\s*(?:[,.!;]|$)))|"
    r"\bkeep (?:on )?doing what (?:you'?re doing|you are doing|you love|makes you happy)\b|\bkeep (?:on )?being (?:positive|kind|you|yourself|"
    r"awesome|amazing|strong)(?=\s*(?:[,.!;]|$|and\b))|\bkeep going\b(?=\s*(?:with it\b|after (?:your|our)\b))|"
    r"\bkeep (?:you|me|us) posted\b|"
    r"\blet'?s make (?:a|some) (?:real |positive |big )?(?:change|difference|impact)"
    r"(?=\s*(?:[,.!;]|$|in (?:the|our|your|this) (?:world|community|neighbou?rhood|town|city|lives)\b))|"
    # a reaction: "Wow, Caroline, that painting is awesome!" (not "Wow, we moved the API to Go!")
    r"^(?:wow|omg|oh wow|aww+|yay)\b(?!,?\s+(?:i|we|my|our|i'm|we're|i've|we've)\b)[^.?]*!$",
    re.I)
"""What one person says to the other about the moment (encouragement, compliments, sympathy, reactions): not a
memory of either of them (the episode keeps it as said). A sentence that goes on after such a clause ("Glad you
caught that: the bug was ...") keeps the rest; one that names something concrete is kept whole."""


__all__ = ["TO_LISTENER_RE"]
