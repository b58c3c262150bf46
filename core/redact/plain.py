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

import functools
import re

from .assignments import CODE_REF, is_placeholder
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


@functools.lru_cache(maxsize=1)
def _known() -> "functools._lru_cache_wrapper[bool] | None":
    try:
        import simplemma
    except ImportError:  # without the dictionary, no single word is taken for a password (no false alarm)
        return None
    return functools.lru_cache(maxsize=4096)(lambda w: bool(simplemma.is_known(w, lang="en", low_memory=True)))


_AFFIXES = re.compile(r"^(?:auto|un|re|pre|non|over|under|multi|self|super|sub|counter|mis|out)|"
                      r"(?:ly|ness|ment|ably|ibly|less|ful)$")


def is_word(token: str) -> bool:
    """An English word, or one made of a common affix and a word ("autogenerated", "unguessable")."""
    known = _known()
    if known is None:
        return True
    low = token.lower()
    if known(low):
        return True
    stripped = _AFFIXES.sub("", low)
    return len(stripped) >= 3 and stripped != low and known(stripped)


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


def word_kind(m: re.Match[str]) -> str | None:
    v = m.group("v")
    parts = v.split("-")
    if is_placeholder(v) or any(_sentence_word(p) for p in parts):
        return None
    if len(parts) >= 3:  # purple-monkey-dishwasher: words strung together are a passphrase
        return "password"
    return None if len(v) < 6 or all(is_word(p) for p in parts) else "password"


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
)

__all__ = ["PLAIN_RULES", "is_word"]
