"""Passwords and passphrases said in plain words: "the password is correcthorsebatterystaple", "passphrase:
tangerine ostrich velvet ladder", "set the password to 'granite'".

The other chat rules (:mod:`.chat`) want a value that looks like a secret (digits, symbols, inner capitals),
which is how "the password is incorrect" stays as it is; a password made of words has none of those. What tells
it from prose instead:

* **quoted**: a quoted value right after "password is / to / :" is a literal, whatever its words;
* **several words that say nothing**: three or more words, none of them a function word, an adverb or a word
  that describes a password ("required", "stored", "the same"), is a passphrase, not a sentence;
* **not a word**: a single run of letters that is no English word (``simplemma``'s dictionary, already a
  dependency, loaded only when such a value is seen) is a made-up password: words run together, "letmein".

English only: the dictionary is English, and other languages' nouns are handled by :mod:`.chat`.
"""

from __future__ import annotations

import re

from .assignments import CODE_REF, is_placeholder
from .words import hyphenated_words, is_word, verb_form
from .rule import Rule

_NOUNS = (r"pass(?:word|wd|code|phrase)|pass[ \t]phrase|pwd?|(?:seed|recovery|mnemonic)[ \t]phrase|mnemonic")
# up to four words between the noun and its verb: "the password [to the shared drive] is", "password [we agreed
# on] is"; a word keeps an inner apostrophe (router's) but never starts or ends with a quote
_BETWEEN = r"(?:[ \t]+[\w\-.@]{1,30}(?:'[\w]{1,3})?){0,4}?"
_VERB = (r"(?:is[ \t]+(?:now|still)|is|was|became|becomes|will[ \t]+be|should[ \t]+be|to|"
         r"[?!:]*[ \t]*it'?s|=|:|-|–|—|→|->|=>)")
_HEAD = rf"(?i)(?<![\w\-\"'`“‘])(?P<name>{_NOUNS})(?![\w\-\"'`”’])"
_END = r"(?=[ \t]*(?:$|\n|[.,;:!?](?=\s|$)|[)\]]|[ \t][(\[]|[ \t]+(?:and|but|so|until|before|after|then|for|on|at|in)\b))"

QUOTED = (
    _HEAD + rf"(?:{_BETWEEN}[ \t]+(?:{_VERB}|to|as)|[ \t]*[:=\-–])?[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,200})\"|'(?P<sq>[^'\n]{1,200})'|`(?P<bq>[^`\n]{1,200})`|“(?P<cq>[^”\n]{1,200})”"
    r"|‘(?P<csq>[^’\n]{1,200})’)"
)
QUOTED_GROUPS = ("dq", "sq", "bq", "cq", "csq")
# a passphrase is said right after its noun or its owner ("the passphrase for the disk is"), never after
# another noun ("the password policy is twelve characters minimum")
_QUALIFIER = r"(?:[ \t]+(?:for|of|on|to)(?:[ \t]+[\w\-.@']{1,30}){1,3}?)?"
SPACED = _HEAD + rf"{_QUALIFIER}[ \t]*{_VERB}:?[ \t]+(?P<v>[A-Za-z]{{2,30}}(?:[ \t]+[A-Za-z]{{2,30}}){{2,11}})" + _END
WORD = _HEAD + rf"(?:{_BETWEEN}[ \t]*{_VERB}:?)?[ \t]+(?P<v>[A-Za-z]{{4,80}}(?:-[A-Za-z]{{2,30}}){{0,8}})" + _END

# Words a sentence about a password uses and a made-up passphrase does not.
FUNCTION_WORDS = frozenset("""
a an the this that these those it its it's he she they we you i me my our your their his her them us
and or but nor so yet if then than because while when where what which who whom whose how why whether
in on at by for from of off out over under up down into onto upon with within without about above below
across after against along among around before behind beneath beside between beyond during except inside
near past since through throughout till toward towards until via per as like unlike
is are was were be been being am do does did done have has had having will would shall should can could
may might must ought not no yes never always often sometimes usually only just also too very quite rather
still already yet again ever even now here there somewhere anywhere everywhere nowhere elsewhere
all any some every each either neither both few many much more most other another such same different
something anything nothing everything someone anyone everyone nobody one ones
set reset stored saved kept changed rotated hashed encrypted generated managed shared printed written sent
known unknown given required needed optional mandatory incorrect correct wrong invalid valid expired missing
empty blank weak strong secure safe unsafe long short simple complex easy hard case sensitive insensitive
enough fine good bad new old same hidden visible obvious random default temporary permanent
see ask check use using find found get got keep put leave left sticky note sticker vault manager
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen twenty
thirty forty fifty hundred thousand minimum maximum least characters letters digits symbols words chars length
""".split())


def _sentence_word(w: str) -> bool:
    low = w.lower()
    return low in FUNCTION_WORDS or low.endswith(("ly", "ed", "ing"))


def quoted_kind(m: re.Match[str]) -> str | None:
    v = next((m.group(g) for g in QUOTED_GROUPS if m.group(g) is not None), "").strip()
    words = v.split()
    if len(v) < 3 or len(words) > 8 or is_placeholder(v) or CODE_REF.search(v) or re.search(r"[{}$%<>]", v):
        return None
    if v.lower() in ("password", "passphrase", "passcode", m.group("name").lower()):
        return None
    if len(words) > 2 and sum(_sentence_word(w) for w in words) >= 2:  # a quoted sentence ("is too short")
        return None
    return "password"


# Of the words above, those that describe a password ("the password is correct"); a passphrase may start with one
# ("correct horse battery staple"), a sentence about a password goes on with grammar ("correct since Monday").
DESCRIBERS = frozenset("""
known unknown given required needed optional mandatory incorrect correct wrong invalid valid expired missing empty
blank weak strong secure safe unsafe long short simple complex easy hard fine good bad new old hidden visible
obvious random default temporary permanent
""".split())


def spaced_kind(m: re.Match[str]) -> str | None:
    words = m.group("v").split()
    said = [w for w in words if _sentence_word(w)]
    if not said:
        return "password"
    # a describing word, then three or more words that say nothing: a passphrase that starts with an adjective
    return "password" if len(words) >= 4 and said == words[:1] and words[0].lower() in DESCRIBERS else None


# nouns that make "password X" a thing of its own: "the password manager is Bitwarden" names no password
_COMPOUND = re.compile(r"(?i)[ \t]+(?:manager|policy|policies|field|hint|reset|length|strength|requirements?|rules?|"
                       r"prompt|file|hash|store|vault|app|generator|form|box|dialog|screen|page|expiry|change)\b")


def _compound(m: re.Match[str]) -> bool:
    return _COMPOUND.match(m.string, m.end("name")) is not None


def word_kind(m: re.Match[str]) -> str | None:
    v = m.group("v")
    parts = v.split("-")
    if is_placeholder(v) or any(_sentence_word(p) for p in parts) or _compound(m) or v.lower() in STATE_WORDS:
        return None
    if len(parts) >= 3:  # purple-monkey-dishwasher: words strung together are a passphrase
        return "password"
    return None if len(v) < 6 or all(is_word(p) for p in parts) else "password"


# One dictionary word ("the password is swordfish", "pw: dragon", "passphrase was tulip") is a password only after a
# clear cue: the noun, at most "for/of/to <thing>", then "is / was / became / :" (or "set ... password to"), and
# the word ends the clause. What a sentence says there instead is a state or a judgement ("the password is
# expired / unique / mine / plaintext"): function words, describers, the words below and adjective endings.
_ONE_NOUN = r"pass(?:word|wd|code|phrase)|pwd?"
# no "=": `username, password = credentials` is code (an assignment literal is the assignment rules' job)
_ONE_VERB = r"(?:is[ \t]+(?:now|still)|is|was|became|becomes|will[ \t]+be|should[ \t]+be|[?!]*[ \t]*it'?s|:)"
_ONE_VALUE = r"[\"'`]?(?P<v>[A-Za-z]{3,30})[\"'`]?"
ONE_WORD = (rf"(?i)(?<![\w\-\"'`“‘])(?P<name>{_ONE_NOUN})(?![\w\-\"'`”’]){_QUALIFIER}[ \t]*{_ONE_VERB}[ \t]+"
            + _ONE_VALUE + _END)
SET_TO = (r"(?i)(?<![\w\-])(?:set|setting|changed?|changing|reset|resetting|updated?|updating)[ \t]+"
          r"(?:(?:the|my|our|your|his|her|their|its)[ \t]+)?(?:[\w\-]{1,20}[ \t]+)?"
          rf"(?P<name>{_ONE_NOUN})[ \t]+to[ \t]+" + _ONE_VALUE
          # "to tulip" ends there; "to expire in a week" goes on: a verb, not a password
          + r"(?=[ \t]*(?:$|\n|[.,;:!?](?=\s|$)|[)\]]|[ \t]+(?:and|but|so|for[ \t]+now|before|until)\b))")

STATE_WORDS = frozenset("""
mine yours ours theirs hers ok okay fine gone lost broken forgotten stolen taken chosen shown open frozen proven
unique secret private confidential personal public important plaintext cleartext plain clear insecure reusable
identical similar different ready available unavailable active inactive right true false null none nil whatever
unset wrong bogus fake real dumb stupid silly funny weird strange terrible awful horrible great nice cool lame
obvious trivial generic common popular standard normal typical usual special local global critical essential
crucial basic automatic static dynamic classic specific cryptic numeric alphanumeric manual universal mandatory
compulsory necessary elsewhere somewhere attached below above inside outside underneath there here pending
unknown unclear invalid correct incorrect wrong good bad long short strong weak simple complex hard easy secure
unsafe safe sensitive insensitive complicated gibberish nonsense garbage useless pointless meaningless
something nothing anything everything same case what which who whose whatever whichever printed written
different important irrelevant relevant present absent consistent inconsistent redundant apparent current recent
sufficient insufficient efficient evident constant significant transparent persistent
expire change match rotate reset default blank empty
text string optional field column secretstr secretbytes union literal final classvar annotated input
""".split())
_ADJECTIVE_ENDINGS = ("able", "ible", "ous", "ful", "less", "ical")


def _in_code(m: re.Match[str]) -> bool:
    """``def login(password: Text, ...)``, ``password: Secret = ...``: a parameter or annotation, not a password."""
    after = m.string[m.end():m.end() + 3].lstrip(" \t")
    line = m.string[m.string.rfind("\n", 0, m.start()) + 1:m.start()]
    return after[:1] in (")", "=", "[", "|") or bool(re.search(r"\([^)]*$|\bdef\b|\blambda\b", line))


def one_word_kind(m: re.Match[str]) -> str | None:
    """A single word after a clear cue: a password unless it says something about the password."""
    v = m.group("v")
    low = v.lower()
    if _in_code(m):
        return None
    if low in FUNCTION_WORDS or low in DESCRIBERS or low in STATE_WORDS or is_placeholder(v):
        return None
    if low.endswith(_ADJECTIVE_ENDINGS) or (low.endswith("ly") and len(low) >= 6 and not low.endswith("fly")) \
            or (low.endswith("ive") and len(low) >= 6) or verb_form(low):
        return None
    if re.fullmatch(_ONE_NOUN + r"|pass|passwords?|secret|login", low) or _compound(m):
        return None
    return "password"


_HINTS = ("pass", "pwd", "pw ", "pw:", "pw=", "phrase", "mnemonic")
PLAIN_RULES: tuple[Rule, ...] = (
    Rule(
        "password",
        QUOTED,
        QUOTED_GROUPS,
        validator=quoted_kind,
        positive="I changed the wifi password to 'granite'",
        negative="the password field says \"Enter your password\"; the \"password\" column is hashed",
        hints=_HINTS,
        generic=True,
        rule_id="plain_quoted",
    ),
    Rule(
        "password",
        SPACED,
        "v",
        validator=spaced_kind,
        positive="passphrase: tangerine ostrich velvet ladder",
        negative="the passphrase is stored in the team vault",
        hints=_HINTS,
        generic=True,
        rule_id="plain_passphrase",
    ),
    Rule(
        "password",
        WORD,
        "v",
        validator=word_kind,
        positive="the password is correcthorsebatterystaple",
        negative="the password is incorrect, and the passphrase is autogenerated",
        hints=_HINTS,
        generic=True,
        rule_id="plain_word",
    ),
    Rule(
        "password",
        ONE_WORD,
        "v",
        validator=one_word_kind,
        positive="the password is swordfish",
        negative="the password is required, the password is mine, I forgot my password",
        hints=_HINTS,
        generic=True,
        rule_id="plain_one_word",
    ),
    Rule(
        "password",
        SET_TO,
        "v",
        validator=one_word_kind,
        positive="I changed the wifi password to tulip",
        negative="reset the password to something longer; set the password to expire",
        hints=("pass", "pwd", "pw "),
        generic=True,
        rule_id="plain_set_to_word",
    ),
)

__all__ = ["PLAIN_RULES", "hyphenated_words", "is_word"]
