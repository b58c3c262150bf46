"""The keyless distiller's joining cues: what makes sentences one memory (a cause and its fix, a decision and its
reason, a correction and what it corrects) and what makes one no memory at all (an outcome report, a vague
object). Data, like :mod:`remem.core.distill.keyless.patterns`; measured on the same labelled set.
"""

from __future__ import annotations

import re

CLAUSE_BREAK_RE = re.compile(r"[:;,\u2014\u2013]\s*|\s+-\s+|\s+(?:and|but|so)\s+")
"""Where a sentence's clauses meet: a listener clause before one ("Happy to hear that, we'll keep Postgres 16")
is cut off, the rest is scored."""
VAGUE_OBJECT_RE = re.compile(
    r"^(?:[\w']+[,!]?\s+){0,3}(?:love|loves|like|likes|enjoy|enjoys|enjoyed|hate|hates|'d love|would love|"
    r"love to)\s+(?:it|this|that|them|to|those|these)(?:\s+(?:so much|a lot|too))?\s*[.!]*$|"
    r"\bnever forget (?:it|that|this)\s*[.!]*$|^that'?s a (?:memory|moment|day) (?:i|we)'?(?:ll| will) never\b|"
    r"^(?:\w+,?\s+)?(?:nope|no|yeah|yes)?,?\s*never (?:been|done|seen|tried|heard) (?:to |of )?"
    r"(?:anything|something) like (?:that|this|it)\b",
    re.I)
"""A short like or a never whose object is a pronoun ("I love it!", "never been to anything like that"): who
knows, later, what "it" was."""

ASKED_WHY_RE = re.compile(r"\b(?:why|reasons?|drivers?|motivation|what (?:made|drove|prompted)|what'?s behind|behind "
                          r"(?:this|that|it)|is there a (?:specific |particular )?(?:problem|issue))\b", re.I)
"""The other side asking why a choice was made: what the user says next is its reason."""
REASON_LABEL_RE = re.compile(r"^(?:(?:yes|yeah|yep|ok(?:ay)?|so|and|fwiw|btw|also)[,.!]*\s+)*(?:the\s+)?(?:(?:main|"
                             r"real|big|biggest|one|primary|other)\s+)?(?:reasons?|why|rationale|because|motivation|"
                             r"blockers?)\b(?:\s+(?:is|was|being)\b)?\s*:?\s*\S", re.I)

# ---------------------------------------------------------------------------------------------- joining cues
TECH_NOUNS = (
    r"index(?:es)?|cache|lock\s?file|\w+\.lock|lockfile|dependenc(?:y|ies)|deps|package|module|import|config|"
    r"settings?|env(?:ironment)?(?: var(?:iable)?s?)?|flag|commit|branch|migration|schema|table|column|query|"
    r"queue|worker|job|cron|build|test|tests|fixture|conftest|container|image|docker\w*|pod|cluster|node|"
    r"service|server|endpoint|route|handler|middleware|client|connection|pool|timeout|retry|retries|port|dns|"
    r"cert(?:ificate)?s?|key|token|secret|version|pin|release|deploy(?:ment)?|pipeline|ci|workflow|script|"
    r"function|method|class|field|type|hook|plugin|driver|library|lib|sdk|api|database|db|bucket|volume|disk|"
    r"memory|cpu|thread|lock|mutex|race|log|logs|file|path|directory|folder|repo")
"""Things code and systems are made of: a past-tense fix names one ("Recreated the index", not "Changed my
diet")."""
FIX_RE = re.compile(
    r"^(?:setting|adding|using|pinning|switching|moving|changing|removing|pointing|running|dropping|copying|wrapping|"
    r"freezing|enabling|disabling|installing|upgrading|downgrading|passing|rotating|guarding|bumping|raising|"
    r"lowering|increasing|reducing|replacing|deleting|restarting|making|marking)\b|"
    r"^now (?:it|we|the [\w-]+) (?:uses?|creates?|sets?|calls?|closes?|passes|goes through|runs)\b|"
    r"^(?:so\s+)?(?:i|we)(?:'ve| have)?\s+(?:added|changed|moved|switched|set|replaced|removed|pinned|wrapped|made|"
    r"rewrote|bumped|increased|reduced|capped|disabled|enabled|rotated|dropped|upgraded|downgraded|fixed|patched|"
    r"put|turned|limited|raised|lowered)\b|"
    # what was done to something technical, with or without "I" / "we" (a past form is no request: "Recreated
    # the index"); in chat, "Restored a car last year" or "Changed my diet" is no fix
    r"^(?:so\s+)?(?:(?:i|we)(?:'ve| have)?\s+)?(?:just\s+|also\s+|then\s+)?(?:added|changed|moved|switched|"
    r"replaced|removed|pinned|wrapped|rewrote|bumped|increased|reduced|capped|disabled|enabled|rotated|dropped|"
    r"upgraded|downgraded|fixed|patched|limited|raised|lowered|recreated|rebuilt|reverted|restored|regenerated|"
    r"reinstalled|reindexed|flushed|awaited|cleared|purged|renamed|restarted|rolled back|re-?ran|deleted|escaped|"
    r"reordered|re-?enabled|re-?added)\b(?=.*(?:\b(?:" + TECH_NOUNS + r")\b|\w_\w|`))|"
    r"^.{3,100}?\b(?:got|brought|took)\s+(?:it|this|that|them|us|the\s+\w+(?:\s+\w+)?)\s+(?:down|back)\s+to\b|"
    r"^.{0,60}?(?:`[^`]+`|\w+[_./]\w+)[^.]{0,40}?\b(?:cleared|fixed|solved|resolved|sorted|unblocked)\s+"
    r"(?:it|this|that)\b|^(?:so\s+)?(?:(?:i|we)\s+)?set\s+`|"
    r"^(?:the\s+)?(?:fix|solution|workaround|remedy)\b|\bso\s+(?:keep|use|pin|always|never|set)\b|"
    r"^(?:fixed|solved|resolved|worked around)\b.{0,60}?\b(?:by|with|using)\b|"
    r"^\w+ing\b.*\b(?:fixe[sd]|solved?s?|resolved?s?|avoids?|removed|cleared|freed|cut|brought|made it|makes it|got it|"
    r"(?:brings?|takes?)\s+(?:\w+\s+){1,3}(?:down|back)|cuts?|stops?|stopped|prevents?|prevented|"
    r"speeds?\s+(?:\w+\s+)?up|sped\s+(?:\w+\s+)?up|reduces?|reduced|shaves?|unblocks?|unblocked)\b",
    re.I)
"""A sentence that says what was done about a problem: joined to the cause said just before it."""
DECISION_FIX_RE = re.compile(r"^(?:so\s+)?(?:i|we)(?:'ve| have)?\s+(?:switched|moved|migrated|pinned|replaced|chose|"
                             r"picked|went with)\b|^(?:switching|moving|migrating|pinning|replacing)\b", re.I)
"""A fix that is a choice ("we switched to X"): with a reason before it, a decision rather than a lesson."""
REASON_HINT_RE = re.compile(
    r"\b(?:because|since|as we|so that|due to|otherwise|already|needs?|needed|can'?t|cannot|couldn'?t|doesn'?t|"
    r"don'?t|won'?t|isn'?t|wasn'?t|too (?:slow|big|expensive|complex|many|much|late)|issues?|problems?|slow(?:er)?|"
    r"broke|breaks|broken|fail(?:s|ed|ing)?|expensive|cheaper|faster|simpler|easier|safer|out of support|"
    r"end of life|deprecated|would need|requires?|bugs?|crash(?:es|ed)?|lost|losing|timeouts?|limits?|"
    r"no longer|lets (?:you|us)|so (?:you|we) can|allows? (?:you|us) to|avoids?|"
    r"(?:was|were|is|are|kept|keeps) slowing|killing us|painful|overhead|"
    r"maintain(?:ing)?)\b|"
    r"\b(?:under|below|less than|only) \d+(?:\.\d+)?%", re.I)
"""Words that make a sentence a reason for the decision next to it."""
CORRECTION_LEAD_RE = re.compile(
    r"^(?:wait|sorry|oops|hmm)[,!.]*\s+no\b[,!.]*\s*[\u2014\u2013:;-]*\s*|^(?:nvm|never ?mind)[,!.]*\s+(?=.*\b(?:actually|turns out|instead|it was|it's|the real)\b)|^no[,!.]*\s+wait\b[,!.]*\s*[\u2014\u2013:;-]*\s*|"
    r"^(?:oh|hmm|wait|ugh|argh|ah)[,!.]*\s+actually\b[,:]?\s*|^actually[,!.]*\s+no\b[,!.]*\s*|"
    r"^(?:sorry|oops|whoops|wait|my bad)[,!.]*\s+i mean(?:t)?\b[,:]?\s*|"
    r"^(?:(?:sorry|oops|whoops|my bad|wait|hmm|actually)[,!.]*\s+)*(?:(?:correction|update|to correct (?:myself|that)|"
    r"scratch that|i misspoke(?: earlier| before| above)?|i was wrong|i got (?:it|that) wrong|i mixed (?:it|them|that) up|"
    r"i misread(?: (?:the|my|our) \w+)?|(?:that'?s|that is|this is) (?:outdated|out of date|no longer (?:true|right|the case)|"
    r"not (?:true|right) any ?more)|(?:small |quick |one )?correction (?:to|on|re|about) [^:.]{2,60}|(?:please\s+)?"
    r"(?:ignore|disregard|forget) what i (?:said|told you|asked for|wrote)(?: (?:before|earlier|yesterday|last \w+))? "
    r"(?:abt|about|re|regarding) [^:.,\u2014\u2013]{2,60}|scratch (?:the|my|our) [^.:]{2,60}?\b(?:plan|idea|approach|"
    r"decision|proposal)\b[^.:,]{0,30})\s*[:!.,;\u2014\u2013-]+\s*|^that was true\b[^,]{0,30}?,?\s+but\s+|"
    r"^(?:no|nope|nah)\s*[\u2014\u2013:;-]+\s*|^small thing[,:]\s*|"
    r"(?:actually|sorry|my bad|oops)\s*[,:\u2014]\s*)",
    re.I)
"""How a correction opens ("Sorry, I misread the dashboard: ...", "Correction: ...", "Wait no —", "Actually scratch
that —"): the rest is what to keep."""
STATUS_RE = re.compile(
    r"^(?:progress|status|status update|wip)\s*:|"
    r"^(?:all\s+)?(?:\d+\s+)?(?:the\s+)?(?:unit\s+|e2e\s+|integration\s+)?tests?\s+(?:now\s+)?(?:pass|passed|are "
    r"(?:passing|green)|green|run green)|\btests? (?:are|is) green\b|^(?:ci|the build|build|lint(?:ing)?|the "
    r"linter|checks?)\b.{0,30}\b(?:passed|passes|succeeded|is green|are green|clean)\b|^coverage is\b|"
    r"^ran \d+ tests?\b|^no (?:errors|failures|warnings)\b|^all set\b|\bready for review\b|"
    r"^(?:done|finished)\b|^(?:ci|the build|build)\b(?![^.]*\b(?:whenever|when|if|always)\b).{0,20}\b(?:is|are) "
    r"(?:only |still )?red\b|^i (?:opened|pushed|merged|committed)\b|^(?:the\s+)?(?:[\w-]+\s+){0,2}(?:pr|mr|pull request)\s+"
    r"(?:is|was|got|has been)\s+merged\b", re.I)
"""Outcome reports ("All 48 tests pass now"): the session summary keeps the outcome; they are never memories."""
SYMPTOM_RE = re.compile(
    r"\b(?:is|are|keeps?|kept)\s+(?:\w+\s+)?(?:throwing|raising|failing|crashing|timing out|hanging|dying)\b|"
    r"\breturns? (?:nothing|null|nil|empty|undefined|no rows)\b|\bgetting hammered\b|\btoo many requests\b|"
    r"\bfails (?:in|on|with|when)\b|"
    r"\bblows? up\b|\bcrashed (?:twice|again|\d+ times)\b|\bhas been (?:sitting|stuck|hanging) on\b", re.I)
"""A problem being reported ("prod celery is throwing `OperationalError` again"): what went wrong is not a fact to
keep; with its cause and fix it is a lesson."""
_KNOWN_BEHAVIOUR_RE = re.compile(r"\b(?:by design|on purpose|intended|intentional\w*|rel(?:y|ies) on|expected)\b|"
                                 r"\breturns? \w+(?: \w+)? (?:for|when|if|on|unless)\b", re.I)


def symptom_reported(sentence: str) -> bool:
    """Whether ``sentence`` only reports something going wrong: not how a thing is meant to behave ("the endpoint
    returns null for soft-deleted users, clients rely on that"), and with nothing else said in it."""
    parts = re.split(r"[.;]\s+", sentence.strip())
    return bool(SYMPTOM_RE.search(sentence)) and not _KNOWN_BEHAVIOUR_RE.search(sentence) \
        and all(SYMPTOM_RE.search(p) or len(p.split()) < 4 for p in parts)  # "... fails on CI. fwiw the repo is X"
NOT_CHOSEN_RE = re.compile(r"\b(?:not|n't)\s+(?:going with|using|doing|moving to|switching to|adopting)\b", re.I)
"""A choice turned down: the choice made instead, said next, is one decision with it."""
AGREE_RE = re.compile(r"^(?:yes|yeah|yep|agreed|right|exactly|correct|makes sense|good call|true|indeed)\b", re.I)
THEN_RE = re.compile(r"^(?:user:\s*)?(?:(?:yeah|yes|yep)[,!.]?\s+)?(?:then|so|ok(?:ay)?|in that case|fine|agreed|"
                     r"alright|great|sounds good|good point|fair enough|makes sense|convinced|sold)\b|\bthen[.!]?$|"
                     r"^.{0,60}?\bthen\b[,.!]*\s*(?:agreed|ok|deal)?[.!]*$|^.{0,60}?\bit is[.!]*$", re.I)
VAGUE_WORDS = frozenset("""that it this these those them they better one ones thing things way fine same option
options first second third last again too more much lot really like likes liked want wants good great nice ok okay
user user's users stuff work works worked something anything everything let's lets do does doing done go going
make""".split())
