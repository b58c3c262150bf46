"""The keyless distiller's patterns: which sentences are memories, and of which kind (the cues that join
sentences into one memory are in :mod:`remem.core.distill.keyless.cues`). Data, kept apart from the logic in
:mod:`remem.core.distill.keyless`; measured on ``tests/fixtures/keyless_labelled.jsonl``
(``python -m remem.bench.keyless_labelled``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern[str]
    score: float
    roles: tuple[str, ...]
    min_words: int = 0  # loose patterns ("don't ...") only count in a sentence long enough to say something
    labelled: bool = False  # "Decision: ..." / "Fix: ...": short is fine, the label says what it is
    anchored: bool = False  # only with something concrete in the sentence: a number, a name, an identifier


def _p(kind: str, score: float, roles: tuple[str, ...], pattern: str, min_words: int = 0,
       labelled: bool = False, anchored: bool = False) -> Pattern:
    return Pattern(kind, re.compile(pattern, re.I), score, roles, min_words, labelled, anchored)


_U, _A, _UA = ("user",), ("assistant",), ("user", "assistant")
# words that make an instruction a one-off ("don't push yet"), not a standing preference
_NOT_ONE_OFF = (r"(?!.*\b(?:yet|for now|right now|just now|this time|today|tonight|again|"
                r"in this (?:pr|commit|change|file|branch))\b)")
# what a person starts, joins or gets in their life (not a branch, a thread, a 500 or a segfault)
_LIFE_START = (r"(?:a|an|my|our|the)\s+(?:new\s+|first\s+|part-time\s+|full-time\s+|weekly\s+|local\s+|online\s+)?"
               r"(?:[\w'-]+\s+){0,2}(?:job|course|class|classes|degree|master'?s|phd|school|university|college|program|"
               r"programme|internship|apprenticeship|role|position|business|company|blog|podcast|band|club|team|group|"
               r"gym|choir|league|startup|diet|routine|hobby|book club|nonprofit|charity|volunteer\w*)\b")
_LIFE_GET = (r"(?:married|engaged|divorced|promoted|hired|accepted|a\s+(?:new\s+)?(?:job|dog|cat|puppy|kitten|house|"
             r"flat|apartment|car|bike|place|tattoo))\b")
_LIFE_DONE = (r"(?:my|the|a|an|our|his|her|their)?\s*(?:[\w'-]+\s+){0,3}(?:marathon|half[- ]marathon|"
              r"race|10k|5k|triathlon|exam|exams|driving test|course|degree|thesis|dissertation|screenplay|novel|book|"
              r"certification|competition|tournament|championship|audition|interview)\b")
_TIME_WORD = (r"(?=[^.!?\n]{0,120}\b(?:in|on|last|this)\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|"
              r"wed|thu|fri|sat|sun|week|month|year|spring|summer|autumn|fall|winter|\d))")
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WEEKDAY = r"(?:(?:mon|tue|tues|wed|wednes|thu|thur|thurs|fri|sat|satur|sun)(?:day)?\.?,?\s+)?"
_DATE = (r"(?:\d{4}-\d{2}-\d{2}\b|" + _WEEKDAY + r"(?:the\s+)?\d{1,2}(?:st|nd|rd|"
         r"th)?\s+(?:of\s+)?" + _MONTH + r"|" + _WEEKDAY + _MONTH +
         r"\s+\d{1,2}(?:st|nd|rd|th)?\b|the\s+\d{1,2}(?:st|nd|rd|th)\b)")
"""A calendar date as people write it: 2025-01-31, 4 March, Saturday 22 June, June 22nd, the 3rd (of August)."""
_CHOICE = (r"^(?:(?:ok(?:ay)?|sold|fine|alright|agreed|good point|fair enough|convinced|cool)[,.!]*\s+)*"
           r"(?!(?:see|ya|you|here|there|yes|yeah|yep|no|nope|so|and|that|this|it|what|whatever|bye|talk|later|until|"
           r"till|good|great|ok|okay|fine|sure|right|well|now|maybe|why|how|is|was|cheers|night|goodnight|morning|"
           r"evening|tomorrow|today|tonight|soon|perfect|thanks|thank|awesome|cool|nice|lovely|deal)\b)"
           r"[\w.+#-]+(?:\s+(?!(?:you|ya|then)\b)[\w.+#-]+)?\s+(?:it is|then)\b[,.!]*(?:\s*(?:agreed|ok|thanks|deal))?"
           r"(?:[.!]*$|[.!]+\s+(?-i:[a-z])[^?]*$)")
CHOICE_RE = re.compile(_CHOICE, re.I)
"""A choice in two words ("sqlite it is", "monthly then"): a decision only as the answer to an argument."""
PATTERNS: tuple[Pattern, ...] = (
    _p("preference", 0.9, _U, r"\b(?:i|we)\s+(?:(?:really|generally|usually|strongly|much|absolutely|totally|truly|"
       r"honestly|genuinely|still|also|just)\s+)?"
       r"(?:prefer|like|love|enjoy|hate|dislike|can'?t stand|despise|avoid)\b"),
    _p("preference", 0.85, _U, r"\b(?:i|we)\s+(?:don'?t|do not|never)\s+(?:like|want|use|enjoy)\b"),
    _p("preference", 0.85, _U, r"\b(?:i|we)(?:'d| would)\s+(?:rather|prefer|like)\b|\b(?:my|our) (?:all-time |absolute |very |current |new )?(?:favou?rite|preferred)\b"),
    _p("preference", 0.8, _U, r"^(?:(?:ok(?:ay)?|looks (?:good|fine|great)|fine|great|nice|sure|thanks|nit)[,!.]*\s+(?:but\s+)?)?"
       r"(?:please\s+)?(?:always|never(?!\s+mind\b)|don'?t ever|do not ever|"
       r"make sure (?:to|you)|from now on|going forward|in (?:the )?future)\b"),
    _p("preference", 0.8, _U, r"^(?:could|can|would|will) you\s+(?:please\s+)?(?:always\s+)?(?:use|write|keep|stop|avoid|"
       r"put|format|add)\b(?=.*\b(?:from now on|going forward|in future|from here on)\b)"),
    _p("preference", 0.8, _U, r"\b(?:i|we)\s+(?:always|never|usually|rarely|only)\s+(?!know\b|remember\b|have\b|had\b|"
       r"got\b|get\b|need\b|needed\b|found\b|saw\b|see\b)\w+"),
    _p("preference", 0.75, _U, r"\b(?:always|never)\s+(?:use|run|write|add|put|commit|push|ask|call|format|"
       r"include|mention|reply|answer|respond)\b"),
    _p("fact", 0.85, _U, r"\bmy name(?:'s| is)\b|\bcall me\b|\bi(?:'m| am) called\b"),
    # where the user is, said in passing: "I'm in Lisbon, so that's WET", "we're based in Porto"
    _p("fact", 0.7, _U, r"^(?:so\s+|btw,?\s+|fyi,?\s+)?(?:i|we)(?:'m|'re| am| are)\s+(?:based\s+|located\s+|"
       r"now\s+)?in\s+(?-i:[A-Z])[\w-]+(?:\s+(?-i:[A-Z])[\w-]+)?(?:\s*\([^)]{1,24}\))?\s*(?:[,;.!]|$|\s(?:so|and|but)\b)"),
    # a change the environment went through: "we bumped order-service to java 21 last sprint", "prod got
    # upgraded to postgres 16 in march", "we're not on 14 anymore"
    _p("fact", 0.8, _U, r"\b(?:(?:we|i)\s+(?:raised|bumped|upgraded|moved|migrated|lowered)|(?:got|was|were|been)\s+"
       r"(?:upgraded|bumped|moved|migrated))\s+(?:[\w.-]+\s+){0,3}?to\s+(?:[\w.+#-]+\s+)?v?\d+(?:\.\d+)*\b(?=[^.]{0,40}"
       r"\b(?:last|this|in|with|since)\b)|\b(?:we(?:'re| are)|it(?:'s| is))\s+not on\s+[\w.+#-]+\s+any ?more\b"),
    # "Airflow for us = Cloud Composer 2", "Priya joined last wk as a second backend dev"
    _p("fact", 0.7, _U, r"^[\w .-]{2,30}\s+for (?:us|me)\s*(?:=|is\s+(?-i:[A-Z]))\s*\S|^(?!(?:we|they|i|you|he|she|it)\b)(?-i:[A-Z])[a-z]+\s+(?:just\s+|recently\s+)?"
       r"joined\s+(?:last|this|the|our|us)\b"),
    _p("fact", 0.8, _U, r"\bi\s+(?:work|worked|am working)\s+(?:at|for|on|as|in)\b|"
       r"\bi(?:\s+start|\s+started|\s+begin|\s+began|'m starting| am starting)\s+(?:work(?:ing)?\s+)?(?:at|as)\s+\S|\bi(?:'m| am) (?:based|located) in\b|"
       r"\bi\s+(?:live|lived|moved)\s+(?:in|to|at)\b|\bi(?:'m| am) from\b"),
    _p("fact", 0.7, _U, r"^i(?:'m| am) an?\s+(?!bit\b|little\b|lot\b|few\b)\w+"),
    _p("fact", 0.7, _U, r"^(?:just|finally|recently|also)\s+(?:(?:started|joined)\s+" + _LIFE_START +
       r"|moved (?:to|into)|adopted|enrolled in|signed up for|got\s+" + _LIFE_GET + r")"),
    _p("fact", 0.7, _U, r"\b(?:i|we)(?:'ve| have)?\s+(?:went|became|turned|gone)\s+(?:fully\s+)?(?:vegetarian|vegan|"
       r"pescatarian)\b"),
    _p("fact", 0.7, _U, r"\b(?:i|we)(?:'m|'re| am| are|'ve been| have been)\s+(?:both\s+|all\s+)?(?:an?\s+)?"
       r"(?:vegetarian|vegan|pescatarian|allergic|lactose|gluten|diabetic|celiac|coeliac)\b"),
    _p("fact", 0.7, _U, r"^(?:i|we)(?:'m|'re| am| are)\s+(?:both\s+|all\s+)?(?:"  # diets: the rule above
       r"married|single|divorced|retired|pregnant|left-handed|colou?r-?blind|"
       r"deaf|blind|remote|freelance|self-employed|unemployed|based|located|from|originally)\b"),
    _p("fact", 0.7, _U, r"^(?:(?:also|and|btw|oh|fyi|so)[,:]?\s+)*(?:my|our)\s+[\w-]+(?:\s+[\w-]+)?\s+"
       r"(?:is|are|was|were|has|have|lives|works|uses|runs)\b"),
    _p("fact", 0.7, _U, r"\b(?:our|my)\s+(?:son|daughter|kids?|children|baby|twins|dog|cat|puppy|kitten|sister|brother|"
       r"mum|mom|mother|dad|father|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|fianc[eé]e?|"
       r"girlfriend|boyfriend|best friend|roommate|flatmate)\s+"
       r"(?-i:[A-Z][a-z]+)\b"),
    _p("fact", 0.7, _U, r"\bmy\s+(?:wife|husband|partner|son|daughter|kids?|children|dog|cat|team|company|employer|"
       r"manager|boss|role|job|title|email|birthday|timezone|time zone|project|stack|os|laptop|machine|setup|"
       r"editor|ide|shell|language|server|database|repo|repository|app|startup|product|client|customer)\b"),
    _p("fact", 0.7, _U, r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+|recently\s+)?(?:adopted|got married|"
       r"welcomed|enrolled in|signed up for|moved into|bought (?:a|an|our|my) (?:new )?(?:house|home|flat|"
       r"apartment|car|bike|dog|cat|puppy|kitten)|(?:started|joined)\s+" + _LIFE_START + r"|started (?:taking|learning|"
       r"going to)\b|took up (?!the\b|this\b|that\b|it\b|a ticket\b)\w+)"),
    _p("fact", 0.7, _U, r"\b(?:i|we)\s+(?:still\s+|usually\s+|also\s+|now\s+)?(?!have\b|need\b|miss\b|talk\b|"
       r"think\b|see\b|saw\b|get\b|got\b|hear\b|heard\b|notice\w*\b|receive\w*\b|hit\b|run into\b)[a-z]+\s+(?:[\w-]+\s+){0,3}every\s+(?:other\s+)?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|day|"
       r"morning|evening|night|week|weekend|month|summer|winter)\b"),
    # habits with their time: "I've been painting watercolors every weekend", "we've been on Postgres since 2021"
    _p("fact", 0.7, _U, r"\b(?:i|we)(?:'ve| have) been\s+(?!(?:feel|think|want|tr|hop|mean|wonder|dy|look|go|keep|"
       r"struggl|deal|miss|worr|wait|debugg|fight|see|gett|test|chas|investigat|track|poll|retry|restart|stuck|"
       r"block|sitt|star|hitt)ing\b)\w+ing\b(?![^.!?\n]{0,120}\bsince (?:yesterday|this morning|last night|the "
       r"(?:deploy|release|upgrade|update|outage)|\d))(?=[^.!?\n]{0,120}\b(?:every (?!few\b|couple\b|\d+ (?:min|sec|hour))|"
       r"each (?:day|week|month|year|morning|evening|weekend)|since|daily|weekly|for (?:\d+|a|an|one|two|three|four|five|"
       r"six|several|many|a few) (?:years?|months?))\b)"),
    _p("fact", 0.65, _U, r"\b(?:i|we)\s+(?:use|run|deploy|host|have|own|maintain|develop|build)\s+(?!to\b|it\b|this\b|"
       r"that\b)\w+"),
    _p("fact", 0.65, _UA, r"\b(?:our|the)\s+(?:project|team|company|stack|app|repo|codebase|api|service|backend|default branch|main branch|"
       r"frontend|database|server|cluster|deployment|ci|pipeline)\s+(?:is|uses|runs|has|lives|targets|requires|"
       r"depends)\b"),
    _p("decision", 0.85, _UA, r"\b(?:we|i)(?:'ve| have)?\s+decided\b|\bdecided to\b|\bthe decision (?:is|was)\b|"
       r"\bsettled on\b|\bopted (?:for|to)\b|\bwe chose\b|\bi chose\b|\bwe(?:'re| are) going with\b"),
    _p("decision", 0.75, _UA, r"\blet'?s\s+(?:use|go with|switch|stick|keep|move|adopt|pin|drop|replace|stay)\b"
       r"(?!\s+(?:in touch|it|that|this|them|the (?:first|second|third|other|same|last|former|latter)|(?:that|this|it) (?:one|way)|the (?:\w+\s+)?ones?)\b)|"
       r"\bgoing with\b|\bwe(?:'ll| will)\s+(?:\w+\s+)?(?:use|go with|switch|keep|stick|stay|adopt|pin|drop|replace|build|"
       r"write|run|host|deploy|move|store|put|split|partition|shard)\b(?!\s+(?:it|that|this|them|the (?:first|second|third|other|same|last|former|latter)|(?:that|this|it) (?:one|way)|the (?:\w+\s+)?ones?)\b)|"
       r"\bthe plan is\b|\bwe should (?:use|switch|keep|pin|drop)\b"),
    _p("decision", 0.6, _UA, r"\b(?:switched|migrated|moved|changed|upgraded|downgraded|pinned)\s+(?:\w+\s+){0,3}"
       r"(?:to|from)\b|\binstead of\b(?!\s+~?\d)"),
    _p("decision", 0.75, _UA, r"\b(?:we|i)\s+(?:moved|changed|switched|bumped|shifted)\s+(?:our|the)\s+"
       r"[\w-]+(?:\s+[\w-]+)?\s+to\b(?!\s+(?:origin|main|master|remote|github|the remote)\b)|"
       r"\bwe(?:'ll| will)\s+do\s+(?:the|a|our)\s+[\w-]+\s+(?:at|on)\s+(?-i:[A-Z])"),
    _p("decision", 0.85, _U, r"\b(?:it'?s|that'?s|it is|that is) (?:settled|decided)(?:\s+then)?\s*[:\-\u2013\u2014]\s*\S"),
    _p("lesson", 0.85, _UA, r"\b(?:the\s+)?(?:root cause|problem|issue|bug|culprit|cause|error)\s+(?:was|is|turned out)\b|"
       r"\bturns? out\b|\bturned out\b|\bthe (?:fix|solution|workaround|trick) (?:was|is)\b"),
    _p("lesson", 0.8, _UA, r"\b(?:fixed|solved|resolved)\s+(?:it\s+|this\s+|that\s+|the\s+\w+\s+)?(?:by|with)\b|"
       r"\bcaused by\b|\bworkaround\b|\blesson(?:s)? learn(?:ed|t)\b|\bnote to self\b|"
       r"\b(?:a|the|one|another|known|nasty|classic) gotcha\b"),
    _p("lesson", 0.75, _UA, r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t|will not|can'?t|cannot)\s+work\b|"
       r"\bfailed because\b|\bbreaks? (?:when|if|because)\b|\bmake sure (?:to|that)\b|\bneeds? to be\b"),
    _p("event", 0.6, _UA, r"\b(?:it|that|this)\s+(?:worked|works now|did the trick|fixed it|solved it)\b|"
       r"(?<!\bare )(?<!\bis )\b(?:deployed|released|shipped|published)\b"),
    # labelled statements ("Decision: ...", "Root cause: ..."), common in assistants' answers and ADR-style notes
    _p("fact", 0.7, _U, r"^(?:(?:for (?:future )?reference|for the record|good to know|just so you know|heads up|context)"
       r"(?:\s+(?:before|for|about|on|re)\s+[^:]{2,60})?\s*:|just so "
       r"you know\s*,(?!\s*i(?:'ve| have|'ll| will)\b))"
       r"\s*(?!here(?:'s| is| are)\b|see\b|below\b|the (?:build|ci|tests?) (?:is|are)\b)\S", min_words=5, labelled=True),
    _p("decision", 0.95, _UA, r"^(?:(?:ok(?:ay)?|so|right)[,.]?\s+)?(?:final\s+|the\s+)?(?:decision|decided|verdict|"
       r"resolution|choice|decision (?:from|of|in|at|after) [^:]{1,40}|(?:final|our|my) call(?=\s*:\s*(?!\s|let me|i'?ll|i need|dunno|not sure|no idea|idk|tbd|"
       r"undecided|pending|still|later\b))|"
       r"we(?:'ll| will) go with|(?:ground|house|team) rule(?:\s+for\s+[^:]{1,40})?)\s*(?:made\s*)?[:\-\u2013\u2014]\s*\S",
       min_words=3, labelled=True),
    _p("lesson", 0.9, _UA, r"^found (?:it|the (?:bug|problem|issue|culprit|cause|leak))\s*[:\-\u2013\u2014]\s*\S",
       min_words=4, labelled=True),
    _p("lesson", 0.9, _UA, r"^(?:the\s+)?(?:root[ -]cause|cause|fix|solution|workaround|lessons?(?: learn(?:ed|t))?|"
       r"takeaway|conclusion|finding|gotcha|pitfall|note to self|learning)\s*:\s*\S", min_words=3, labelled=True),
    # negative preferences said as imperatives: "Don't suggest Java ...", "Avoid ORMs ...", "No more mocks ..."
    _p("preference", 0.8, _U, r"^(?:please\s+)?(?:avoid\s+(?!it\b|that\b|this\b|them\b)|no more\s+(?!questions\b|"
       r"talk|chat|excuses\b|of (?:this|that)\b)|stop\s+\w+ing\b)" + _NOT_ONE_OFF, min_words=3),
    _p("preference", 0.8, _U, r"^(?:please\s+|pls\s+)?(?:give me|write|format|send)\s+(?:your\s+|the\s+|all\s+|me\s+)?"
       r"(?:answers?|responses?|replies|explanations?|summaries)\s+(?:as|in)\b" + _NOT_ONE_OFF),
    _p("preference", 0.7, _U, r"^(?:(?:for|in|with)\s+[^,]{2,40}?(?:,\s*|\s+(?=(?:please\s+|pls\s+)?(?:don'?t|do not)\b)))?"
       r"(?:please\s+|pls\s+)?(?:don'?t|do not)\s+(?!worry|bother|forget|mind|know|think|"
       r"understand|get|see|have|need|rush|panic|care|wait|do (?:that|this|it)\b)\w+" + _NOT_ONE_OFF, min_words=5),
    # facts: identity and hosting phrased with "we", and "the X is <identifier>" (hosts, URLs, ids, branches)
    _p("fact", 0.7, _U, r"^(?:i|we)(?:'m|'re| am| are)\s+an?\s+(?!bit\b|little\b|lot\b|few\b|minute\b|"
       r"second\b)\w+"),
    _p("fact", 0.65, _U, r"\b(?:i|we)\s+(?:deploy|host|ship|publish|run)\s+(?:it\s+|everything\s+)?"
       r"(?:to|on|in|via|as)\s+\S"),
    _p("fact", 0.7, _U, r"^(?:(?:also|and|btw|oh|fyi|so)[,:]?\s+)*(?:all\s+)?(?:the|our|my)\s+(?:[\w-]+\s+){0,3}(?:is|are|lives?|"
       r"runs?|sits?)\s+(?:at\s+|on\s+|in\s+|called\s+|named\s+)?[`'\"]?(?=[\w-]*(?:[a-z][\w-]*\d|\d[\w-]*[a-z]|"
       r"[./:@_][\w/]))"),
    # decisions: more ways to say a choice was made
    _p("decision", 0.8, _UA, r"\b(?:we|i)\s+went with\b|^(?:(?:ok(?:ay)?|fine|then|agreed|yes|yeah|alright|sure|great|good|sounds good)[,.!]?\s+)?go with\s+(?!it\b|"
       r"that\b|this\b|them\b|the (?:first|second|third|last|other|former|latter)\b|whatever\b|your)|"
       r"\b(?:we|i|the team|everyone)(?:'ve| have)?\s+agreed\s+(?:to|on|that|(?:as a team|(?:with|w/)\s+(?:the\s+)?[\w-]+"
       r"(?: team)?)\s*:)|^agreed\s+(?:with|w/)\s+(?:the\s+)?[\w-]+(?:\s+team)?\s*:|\bagreed (?:to|on)\b|"
       r"^(?:[\w ./-]{1,30}:\s+)?(?:opted for|settled on|sticking with|not (?:migrating|moving|switching|"
       r"upgrading) to|holding off on)\b|"
       r"\b(?:chose|chosen|choosing|picked|picking|selected|selecting)\s+\S+(?:\s+\S+){0,3}\s+(?:over|instead of|"
       r"rather than)\b"),
    _p("decision", 0.7, _U, r"\b(?:service|app|api|backend|frontend|project|repo|codebase|team|stack|pipeline|library|"
       r"lib|crate|cli|db|database|module|job|worker|we)s?\s+(?:now\s+|also\s+)?uses?\s+[\w.+#-]+\s+(?:instead of|"
       r"rather than)\s+[\w.+#-]+"),
    _p("decision", 0.75, _U, r"\b(?:will|shall|are going to|is going to)\s+(?:be|use|go over|go through|run on)\s+"
       r"[\w.+#-]+(?:\s+[\w.+#-]+)?,?\s+(?:not|instead of|rather than)\s+[\w.+#-]+|\b(?:will|shall) be\s+\w+ed\s+(?:with|in|"
       r"on|via|using|through)\s+[^,.;]{1,40},?\s+(?:not|instead of|rather than)\s+[\w.+#-]+"),
    # "they're all in secrets manager already, so ESO it is"; "serving plan: export the ranker to ONNX";
    # "convention for the workspace going forward: thiserror in the library crates"; "we looked at 24h tokens";
    # "reporting endpoints use Dapper from now on"; "so we'll do rate limiting in envoy instead"
    _p("decision", 0.8, _U, r",?\s+so\s+[\w.+#-]+(?:\s+[\w.+#-]+)?\s+it is\b|^(?:[\w-]+\s+){0,2}plan\s*:\s*\S|"
       r"^(?:(?:the|our|new)\s+)?(?:convention|policy|standard)s?\b[^:]{0,50}:\s*\S|\bwe (?:looked at|considered|"
       r"evaluated)\s+[^.]{2,80}?\bbut\b|\b(?:endpoints?|services?|jobs?|apps?|modules?|queries|reports?|reporting)\s+(?:use|go "
       r"through|run on)\s+[\w.+#-]+\b(?=[^.]*\bfrom now on\b)|\bwe(?:'ll| will)\s+\w+\b[^.]{2,80}\binstead\b"),
    # "new admin panel: Pinia, not Vuex"; "let's do that, but Hot for 30 days then Cool"
    _p("decision", 0.75, _U, r"^[^:]{2,40}:\s*(?-i:[A-Z])[\w.+#-]*(?:\s+[\w.+#-]+)?,\s+not\s+[\w.+#-]+|"
       r"^(?:ok(?:ay)?[,.!]?\s+)?let'?s do (?:that|this|it)\s*,?\s+but\s+\S"),
    # a choice said in two words after an argument: "ok sold, sqlite it is", "monthly then, agreed" (kept only
    # with the argument it answers: see CHOICE_RE)
    _p("decision", 0.75, _U, _CHOICE),
    # something dropped or retired: "we dropped redux from the dashboard"
    _p("decision", 0.75, _UA, r"\b(?:we|i)(?:'ve| have)?\s+(?:dropped|ditched|retired|abandoned|removed)\s+(?!it\b|that\b|"
       r"this\b|them\b|the ball\b|out\b|by\b|off\b)[\w.+#-]+\s+(?:from|in|for)\b"),
    _p("decision", 0.75, _UA, r"\b(?:we(?:'re| are|'ll| will)|let'?s)\s+(?:be\s+)?(?:replac|switch|migrat|mov)"
       r"(?:e|es|ing)\b(?=.*\b(?:with|to|from|over)\b)"),
    # lessons: "<something> fixed the <problem>" (not "I fixed it" / "That fixed it")
    _p("lesson", 0.75, _UA, r"^(?!(?:i|we|it|this|that|which|these|those|he|she|they|you)\b)\S.{3,}?\b(?:fixed|solved|"
       r"resolved|cured)\s+(?:the|our|a|an|all)\b"),
    _p("event", 0.7, _U, r"\b(?:i|we)\s+(?:just\s+|finally\s+|officially\s+)?(?:(?:finished|ran|completed|won|passed)\s+"
       + _LIFE_DONE + r"|graduated|got (?:promoted|engaged|married|hired)\b|got (?:accepted |in)?(?:in)?to\s+(?:\w+\s+){0,2}"
       r"(?:university|college|school|program|programme)\b)", anchored=True),
    # life events with their time: "we got married in June", "my sister had her baby on Wednesday"
    _p("event", 0.8, _U, r"\b(?:got (?:married|engaged|divorced)|had (?:a|her|his|their|our|my) (?:baby|wedding)|"
       r"gave birth|graduated|passed away|retired)\b" + _TIME_WORD),
    # work events with their date or length (below what a fact, lesson or decision in the same words scores): "the upgrade is scheduled for Saturday 22 June", "the carrier sunsets
    # the v1 API on 2025-01-31", "INC-5107: checkout was down for 38 minutes", "I'm off from the 3rd to the 17th"
    _p("event", 0.65, _UA, r"\b(?:(?:is|are|was|were)\s+(?:scheduled|planned|booked|set)\s+for|(?:sunsets?|retires?|"
       r"shuts? down|goes? (?:away|live|out)|went (?:live|out)|ships?|shipped|released?|launch(?:es|ed)?|deprecates?|expires?|"
       r"starts?|ends?)\b[^.!?]{0,60}?\s+on|(?:starts?|begins?|ends?|kicks? off|is due|are due|lands?))\s+"
       + _DATE, min_words=5),
    _p("event", 0.85, _UA, r"\b(?:on|since)\s+" + _DATE + r"[^.!?]{0,80}?\b(?:(?:was|were|went)\s+down|ran out of|crashed|"
       r"filled up|was lost|were lost|dropped|deleted|wiped|ran against)\b|\b(?:was|were|went)\s+"
       r"down\b[^.!?]{0,40}?\bon\s+" + _DATE, min_words=5),
    _p("event", 0.75, _UA, r"\b(?:was|were|went|been)\s+down\s+for\s+(?:about\s+|almost\s+|over\s+)?\d+\s*"
       r"(?:min(?:ute)?s?|h(?:ours?|rs?)?|seconds?|days?)\b|^(?:fyi\s+)?inc-?\d+\s*:", min_words=5),
    # "the move from Heroku to Fly.io finished on Saturday"
    _p("event", 0.75, _UA, r"\b(?:move|migration|upgrade|cutover|rollout|switch)\s+(?:from|to|of)\s+[^!?]{1,60}?\b(?:finished|"
       r"completed|was done|is done|went live)\s+(?:on|last|yesterday|this|today)\b", min_words=6),
    _p("event", 0.75, _UA, r"\b\d+\s*(?:min(?:ute)?s?|h(?:ours?|rs?)?)\s+(?:outage|downtime|incident)\b|\b(?:outage|"
       r"incident|downtime)\s+(?:on|at)\s+" + _DATE),
    _p("event", 0.8, _UA, r"\b(?:we|i)\s+(?:cut over|cut \w+ over|migrated|switched|moved|upgraded|rolled out|rotated)\b[^.!?]{0,80}?(?:"
       r"\bon\s+|\(\s*)" + _DATE + r"|(?:\bon\s+|\(\s*)" + _DATE + r"\s*\)?,?\s+(?:we|i)\s+(?:cut over|migrated|switched|"
       r"moved|upgraded|rolled out|rotated|deployed|released|shipped|launched)\b"),
    _p("event", 0.75, _UA, r"\b(?:we|i)\s+had\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+)?(?:incident|outage|downtime|sev-?\d|"
       r"p\d)\s+(?:on|last|this|in)\s+\S", min_words=5),
    _p("event", 0.78, _UA, r"\b(?:freeze|maintenance(?: window)?|downtime|outage|cut-?over|migration|launch|"
       r"release|rollout|upgrade|switch(?:over)?)\b[^.!?]{0,40}?\b(?:from(?=\s+\S+\s+\S+\s+(?:to|until|till)\b)|on|between|"
       r"(?:scheduled|planned|set) for|happened|took place|went live|was done)\b[^.!?]{0,40}?[\s(]" + _DATE, min_words=4),
    _p("event", 0.8, _U, r"^(?:i'?m|i am|we'?re|we are)\s+(?:off|out|away|on (?:leave|holiday|vacation|pto))\s+"
       r"(?:from|between|until|till)\s+" + _DATE, min_words=5),
    _p("event", 0.8, _UA, r"\b(?:v?\d+\.\d+(?:\.\d+)?|version \S+|release \S+)\s+(?:went live|shipped|was released|is live|"
       r"got released|landed)\b"),
    # outcomes with numbers: "p95 latency dropped from 900 ms to 120 ms"
    _p("event", 0.7, _UA, r"\b(?:down|up) from\s+~?\$?\d|\bnow takes\b.*\d", min_words=5),
    _p("event", 0.7, _UA, r"\b(?:dropped|fell|went|rose|improved|increased|decreased|reduced|grew|shrank|"
       r"cut|sped up|slowed)\b[^.!?\n]{0,160}?\bfrom\s+~?\$?\d[\d.,]*\s*\S*\s+to\s+~?\$?\d"),
    # lessons: causes said without the words "root cause" ("X failed because Y", "the flake was Y", "it was an
    # N+1 query"), and fixes explained by their cause ("I added X because Y")
    _p("lesson", 0.8, _UA, r"\b(?:the\s+)?(?:[\w-]{1,40}\s+){0,3}(?:flake|flakiness|failures?|crash(?:es)?|bug|issue|"
       r"problem|errors?|timeouts?|hang|leak|slowness|creep|slowdown|outage|regression|segfault|\d{3}s|oom|"
       r"flaky\s+(?:[\w-]+\s+){0,2}"
       r"(?:tests?|jobs?|builds?|checks?|suites?))(?:\s+(?:in|on|of|for|from)\s+(?:the\s+|our\s+)?(?:[\w-]+\s+){0,2}?"
       r"[\w-]+)?\s+(?:was|were|came from|comes from|(?:is|was|were) caused by)\b"),
    _p("lesson", 0.8, _UA, r"\b(?:fail(?:ed|s|ing)?|crash(?:ed|es)?|broke|hung|hangs|deadlocked|stopped|timed out|"
       r"couldn'?t|can'?t|didn'?t|wasn'?t|weren'?t|mangled|blocked|leak(?:ed|ing)|retried|duplicated|spiked|"
       r"lost|dropped|oom-?killed|evicted|throttled|(?:was|were) (?:slow|down|stale|"
       r"wrong|empty|missing|lost)|saw stale|got killed|kept \w+ing)\b[^.]*\b(?:because|since(?!\s*(?:[.,;!?]|$|then\b|"
       r"yesterday\b|last\b|the (?:deploy|release|upgrade)\b|\d))|due to|as)\b"),
    _p("lesson", 0.8, _UA, r"^(?:it|that|this)(?:'s| was| is)\s+an?\s+(?:[\w+-]+\s+){0,2}(?:query|import|bug|race|"
       r"leak|deadlock|typo|regression|mismatch|conflict|cycle|off-by-one)\b", min_words=4),
    _p("lesson", 0.8, _UA, r"\bknown (?:bug|issue|problem)\b|^confirmed:|\b(?:the\s+)?fix (?:was|is)\b|\bnote (?:for|to) "
       r"(?:future )?(?:me|myself|self|later)\b|\bthe reason (?:why\s+)?(?:[\w'.-]+\s+){1,8}?"
       r"(?:was|were|is|kept|failed|broke|crashed|timed out)\b[^.]{0,80}?\b(?:was|were)\b"),
    _p("lesson", 0.8, _UA, r"\bthe reason\b(?:[^:.!?]|\.(?=\w)){3,120}?\b(?:kept|keeps|was|were|is|failed|fails|broke|did)\b"
       r"(?:[^:.!?]|\.(?=\w)){0,80}:\s*\S"),
    _p("lesson", 0.8, _UA, r"^(?:i|we)\s+(?:added|changed|set|removed|wrapped|made|capped|disabled|enabled)\b"
       r".*\bbecause\b"),
    # a cause found and told in one breath: "figured out the missing emails: jobs got enqueued inside the
    # transaction, so ...", "data leakage: the scaler was fit on the full dataset"
    _p("lesson", 0.86, _UA, r"^(?:(?:ok|so|fyi|update|finally)[,:]?\s+)*(?:figured (?:it )?out|tracked (?:it )?down)\b"
       r"(?=.*(?:`|\b(?:so|because|since)\b))|\b(?:(?:data |memory )?leak(?:age)?|race condition|deadlock|off-by-one|"
       r"root cause)\s*:\s*(?!\s|still\b|no idea|not sure|unclear|unknown|tbd|investigating|looking)\S"),
    # decisions: more verbs after "let's", decisions in progress ("we're self-hosting X"), targets, imperatives
    _p("decision", 0.75, _UA, r"\blet'?s\s+(?:store|do|make|put|run|build|split|shard|add|remove|deprecate|cache|"
       r"host|deploy|ship|target|require|limit|keep|use|partition|swap|index|archive|rewrite|merge|batch|"
       r"queue|cap|bump|freeze)\b(?!\s+(?:in touch|it|that|this|them|the (?:first|second|third|"
       r"other|same|last|former|latter)|(?:that|this|it) (?:one|way))\b)"),
    _p("decision", 0.75, _UA, r"\bwe(?:'re| are)\s+(?:self-hosting|moving|switching|adopting|dropping|replacing|"
       r"migrating|standardi[sz]ing|consolidating|going to use|sticking with|staying on|holding off on|"
       r"not upgrading|postponing)\b|\bwe(?:'re| are)\s+keeping\s+(?:[\w.+#-]+\s+){1,2}v?\d|"
       r"\b(?:we|i)(?:'ve| have)\s+chosen\s+(?:to\b|(?:[\w.+#-]+\s+){1,3}(?:for|over|as|instead)\b)|\bwe\s+(?:target|only support|support only|"
       r"require|standardi[sz]e on)\b"),
    _p("decision", 0.68, _U, r"^(?:please\s+)?(?:pin|keep|drop|deprecate|stay on|move|switch|use)\s+(?!it\b|that\b|"
       r"this\b|them\b|those\b|these\b|the (?:first|second|other|same)\b|the (?:\w+\s+)?ones?\b)\S+" + _NOT_ONE_OFF,
       min_words=5),
    _p("decision", 0.75, _U, r"^(?:(?:ok(?:ay)?|sold|fine|alright|agreed|cool|great|deal|perfect|convinced)[,.!]*\s+)?"
       r"(?:switching|moving|migrating)\s+(?:[\w-]+\s+){1,5}(?:to|onto|over to)\s+\S"),
    # facts: roles, versions stuck on, release cadence, and concrete declaratives ("X listens on port 8081")
    _p("fact", 0.65, _U, r"^(?:(?:yeah|yes|fwiw|btw|fyi|so|and)[,:]?\s+)*(?:everything|it all|all of it)\s+(?:runs?|lives|"
       r"sits|is deployed|is hosted)\s+(?:on|in)\s+\S", anchored=True),
    _p("fact", 0.7, _U, r"^(?:(?:fwiw|btw|fyi|also|so|and)[,:]?\s+)*i(?:'m| am) the\s+\w+|\bwe(?:'re| are) (?:stuck|still) on\b|\b(?:is|are) stuck on\b|"
       r"\bwe\s+(?:release|ship|deploy|publish)\s+(?:every|each|weekly|daily|monthly|nightly|on)\b"),
    _p("fact", 0.65, _U, r"^(?!(?:can|could|would|will|should|do|does|did|is|are|was|how|what|why|which|where|when|"
       r"who|if|please|let'?s|we'?ll|i'?ll|just|then|so|write|fix|add|create|make|implement|build|update|change|remove|delete|"
       r"refactor|explain|find|show|run|set|install|debug|review|rename|move|convert|generate|test|check|"
       r"investigate|deploy|migrate|tell|give|help|use|keep|put|try|ask)\b)(?:[\w'.,/:-]+\s+){1,7}(?:still\s+)?(?:is|are|runs|uses|listens|reads|"
       r"lives|owns|calls|stores|sits|holds|has|have|goes|points|runs|maintains|manages|leads|handles|reviews|"
       r"processes|serves)\b", min_words=5, anchored=True),
    _p("fact", 0.65, _U, r"(?:\b(?:our|the)\s+|^)(?:[\w-]+\s+){0,2}(?:project|app|repo|codebase|api|service|backend|"
       r"frontend|database|db|server|cluster|ci|pipeline|crate|package|library|monorepo|firmware|site|website|lambdas?|"
       r"workers?)\s+(?:still\s+|only\s+|now\s+|currently\s+)?(?:targets|requires|supports|talks to|connects to|"
       r"depends on|runs on|is on|are on|is written in)\b", anchored=True),
    _p("fact", 0.65, _U, r"^(?:(?:fwiw|btw|fyi|also|and|so)[,:]?\s+)*(?:(?:i|we)(?:'re| are)\s+(?:still\s+|now\s+|"
       r"currently\s+|all\s+)?on\s+[\w.+#-]+|(?:this|it|everything)(?:'s| is)\s+(?:all\s+)?(?:on\s+|in\s+|written in\s+)?"
       r"(?-i:[A-Z])[\w.+#-]*)\s+v?\d", anchored=True),
    _p("fact", 0.7, _U, r"^(?:(?:so|and|fyi|btw|fwiw)[,:]?\s+)*(?:it'?s|it is|this is|we'?re|we are)\s+an?\s+(?-i:[A-Z])"
       r"[\w.+#-]*\s+(?:monorepo|monolith|app|project|shop|codebase|stack|service|backend|frontend|repo|cluster)\b"),
    _p("fact", 0.7, _U, r"\b(?:the|our)\s+[\w-]+\s+(?:table|collection|index|topic|bucket|db|database)\s+(?:is|has|holds)\s+"
       r"~?\d[\d.,]*\s*(?:[kmb]|thousand|million|billion)?\s*(?:rows|records|documents|messages|events|objects|gb|tb)\b"),
    _p("fact", 0.65, _U, r"\b(?:the|our)\s+(?:[\w-]+\s+){0,3}(?:apps|services|clients|backends)\s+(?:share|both use|all use)\s+\S"),
    # standing instructions said other ways: "..., never tabs", "when you review, ...", "X should look like Y"
    _p("preference", 0.69, _U, r"(?<!\bthey )(?<!\bit )(?<!\bhe )(?<!\bshe )(?<!\bhas )(?<!\bhad )(?<!\bwas )"
       r"(?<!\bsometimes )(?<!\boften )(?<!\boccasionally )"
       r"\bnever\b(?!\s+mind\b)(?!\s+(?!(?:need|allowed|supposed|expected|permitted|required)\b)(?:\w+ed|did|was|were|had|came|got|went|gave|made|saw|knew|took|ran|wrote|said|"
       r"told|found|heard|paid|sent|built|left|been)\b)(?=\s*[\w`'\"(])", min_words=4),
    # a standing rule said in passing: "..., so from now on comments in English", "no prose unless I ask",
    # "Before you write any code, give me a plan", "new python code needs full type hints", "I want DTOs as
    # records, not classes", "I told you to format with black" (read with its correction)
    _p("preference", 0.8, _U, r"\b(?:so|and)\s+(?:from now on|going forward|from here on)\b|\bunless (?:i|we) (?:ask|say "
       r"so|tell you)\b|^(?:before|after|until)\s+you\s+\w+(?![^:]{0,60}:)|\bi (?:told|asked) you\b[^.]{0,40}?\bto\s+(?:use|format|"
       r"write|run|put|keep|name|add|indent|avoid|reply|answer)\b|\b(?:i|we)\s+want\s+(?!to\b|you\b|it\b|this\b|that\b)"
       r"(?:[^.,]|\.(?=\w)){2,60},\s+not\s+\w+|\bthat'?s how (?:i|we) (?:want|like|write|structure|do)\b|"
       r"^(?:(?:for|in)\s+[^,]{2,40}?\s+)?(?:please\s+)?prefer\s+\S+(?:\s+\S+){0,3}\s+(?:over|to|instead of)\b"),
    # an imperative with "from now on" outranks the story told before it ("turns out X. use Y from now on")
    _p("preference", 0.88, _U, r"(?:^|[.;]\s+)(?:please\s+|pls\s+)?(?:use|write|keep|format|name|put)\b[^.]{0,80}"
       r"\bfrom now on\b"),
    _p("preference", 0.75, _U, r"^(?:(?:all|any|new|every)\s+)?(?:[\w.+#-]+\s+){0,2}(?:code|files?|modules?|functions?|"
       r"tests?|prs?|commits?|endpoints?|classes|components?|packages?|services?|crates?|handlers?|migrations?|scripts?)\s+"
       r"(?:needs?|has to|have to|must|should)\s+(?!be fixed\b)\w+"
       + _NOT_ONE_OFF, min_words=5),
    _p("preference", 0.8, _U, r"\b(?:this|our)\s+(?:repo|project|team|codebase|org)\s+(?:uses|follows|prefers|sticks to)\s+"
       r"(?=[^.]{0,30}\b(?:gitmoji|conventional commits|commit|style|convention|naming|tabs|spaces|indentation|"
       r"prettier|black|ruff|eslint|format))|^(?:(?:for|in)\s+[^:,]{2,40}[:,]\s*)?no\s+[\w-]+s\s+(?:please|pls|plz|"
       r"ever|at all)\b"),
    _p("preference", 0.75, _U, r"^(?:when(?:ever)?|each time|every time|any time)\s+you\b"),
    _p("preference", 0.72, _U, r"\b(?:i|we)\s+(?:always\s+|only\s+)?use\b(?=.*\b(?:match (?:that|this|my|our)|follow "
       r"(?:that|this|my|our)|in (?:anything|everything|all (?:the )?code) you write)\b)"),
    _p("preference", 0.9, _U, r"^(?:commit (?:msgs?|messages?)|pr titles?|branch names?|(?:[\w-]+ )?(?:code )?style(?: for "
       r"(?:this|the|our|all) [\w-]+)?|naming|formatting|"
       r"docstrings|changelog entries|tests|unit tests|error handling|imports|typing|answers|replies|responses|"
       r"comments|docs)\s*:\s*(?![^,.]*(?:https?://|\d{2}:\d{2}|ready for review|see above))"
       r"(?!.*\b\d+\s+(?:failed|passed|errors?|warnings?|skipped)\b)\S",
       min_words=3, labelled=True),
    # a rule for how the assistant writes: "Keep explanations short", "make your answers concise"
    _p("preference", 0.8, _U, r"^(?:please\s+)?(?:keep|make)\s+(?:your\s+|the\s+|all\s+)?(?:explanations?|answers?|"
       r"responses?|replies|summaries|comments|commit messages|messages|docstrings|prs?|pull requests|diffs?|code "
       r"reviews?|reviews?)\s+(?:short|brief|concise|terse|small|minimal|focused|simple|to the point)\b" + _NOT_ONE_OFF),
    # an instruction that holds everywhere is a standing rule, not a choice made once: "use ? with anyhow
    # everywhere outside of tests", "prefer pathlib by default"
    _p("preference", 0.74, _U, r"^(?:please\s+)?(?:use|prefer|keep|write|put|format|name|return|log)\s+(?=.*\b(?:"
       r"everywhere|in every\b|across (?:the|all|every|our)\b|from now on|by default|going forward|outside (?:of )?"
       r"tests?\b|in all\b|at all times))" + _NOT_ONE_OFF, min_words=4),
    _p("preference", 0.74, _U, r"^(?:(?:for|in|with)\s+[^,]{2,40}?(?:,\s*|\s+(?=(?:please\s+|pls\s+)?(?:use|keep|"
       r"write|put|format|indent)\b)))?(?:please\s+|pls\s+)?(?:use|keep|write|put|format|indent)\s+(?=[^.]*\b(?:"
       r"indent\w*|spaces|tabs|line length|quotes|casing|camel ?case|snake_case|upper ?case|lower ?case|"
       r"trailing commas?|semicolons|house style|style guide)\b)" + _NOT_ONE_OFF, min_words=4),
    _p("preference", 0.75, _U, r"^(?:please\s+|pls\s+|plz\s+)?no\s+(?!problem|worries|thanks|idea|way|luck|clue|need|"
       r"rush|pressure|worry|changes|errors|failures|warnings|issues)[\w-]+\s+(?:\w+\s+){0,2}(?:in|on|for|when)\b"
       + _NOT_ONE_OFF, min_words=4),
    _p("preference", 0.7, _U, r"\b(?:should|must)\s+(?:always\s+|never\s+)?(?:look like|be named|be called|use|"
       r"follow|start with|end with|include|go in|live in)\b", min_words=4),
)
