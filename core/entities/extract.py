"""Keyless entity extraction: the things a memory names, typed, from how they are written.

No model: identifiers are matched by their shapes (issue ids, files, repositories, hosts, versions), services by
their noun compounds ("the ingest worker", "billing API"), names by their capitals, typed with the short lists
of :mod:`.lexicon` (organisation and place words, a place list, tools). What a rule cannot tell is left out or
marked: a capitalised word that starts a sentence is only *tentative* (kept when the scope already knows that
name), and a name typed by no cue is a *guessed* person, which a later typed mention of the same name corrects.

It runs on every memory (after the write returns: :mod:`.linking`), so it is regular expressions over the text,
each run only where a cheap check says it can match (a digit, a dot, a service word), and linear in the text:
what a match looks back at is a short window, never the text before it, and the scan stops once a memory names
:data:`MAX_MENTIONS` things (a 32,000-character paste took 1.4 s before; now milliseconds). Text in other
languages is safe: identifiers are found in any script; capitalised-word rules are skipped where most words
are capitalised (German nouns) and never fire in scripts without case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import lexicon, names

_RAW_KEYS = frozenset({"issue", "file", "repo", "host"})  # identifiers: compared as written, case aside
KINDS = ("person", "org", "place", "product", "service", "repo", "file", "issue", "host")
MAX_MENTIONS = 32  # per memory: a pasted log names hundreds of things, and none of them is what it is about


@dataclass(frozen=True)
class Mention:
    """One thing a text names: ``name`` as written, its ``kind``, its comparison ``key``; ``version`` for a
    product named with one; ``guessed``: typed by no cue (a bare capitalised name); ``tentative``: a capitalised
    word starting a sentence, kept only if the scope knows the name; ``aliases``: other names the text gives it
    ("ClickHouse (aka CHouse)")."""

    name: str
    kind: str
    key: str
    version: str | None = None
    guessed: bool = False
    tentative: bool = False
    aliases: tuple[str, ...] = field(default=())


_EXT = ("py|pyi|js|mjs|cjs|ts|tsx|jsx|md|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|go|rs|java|kt|c|h|cc|cpp|hpp|"
        "cs|rb|php|swift|sql|sh|bash|zsh|ps1|lock|csv|tsv|xml|html|css|scss|vue|svelte|ipynb|proto|tf|dockerfile|"
        "env|log|pdf|docx|xlsx|pptx|png|jpg|jpeg|svg|gif")
_TLD = ("com|net|org|io|dev|ai|app|cloud|internal|local|lan|corp|co|uk|de|fr|eu|us|info|biz|sh|gg|me|tech|edu|gov|"
        "svc|cluster")
_URL = re.compile(r"\bhttps?://([^\s/<>()\[\]'\"]+)(/[^\s<>()\[\]'\"]*)?", re.I)
_FORGE_REPO = re.compile(r"^/([\w.-]+)/([\w.-]+?)(?:\.git)?(?:/|$)")
_ISSUE_KEY = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]{1,9}-\d{1,6})(?![\w-])")
_ISSUE_REF = re.compile(r"(?<![\w/])((?:[\w.-]+/[\w.-]+)?#\d{1,7})\b")
_ISSUE_WORD = re.compile(r"\b(?:issue|issues|pr|pull request|ticket|bug|mr|merge request|case|incident)\s*$", re.I)
_FILE = re.compile(rf"(?<![\w/.@-])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_EXT}))(?![\w/-])", re.I)
_REPO = re.compile(r"(?<![\w/.@-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?![\w/-])")
_REPO_WORD = re.compile(r"\b(?:repo|repos|repository|repositories|fork|clone|cloned)\s*(?:at\s+|is\s+)?$", re.I)
_HOST = re.compile(rf"(?<![\w.@/-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{_TLD}))(?![\w-]|\.\w)", re.I)
_HOSTNAME = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:\d+|prod|staging|stage|dev|qa|test)"
                       r"(?:-\d+)?)(?![\w-]|\.\w)")
_VERSIONED = re.compile(r"(?<![\w.@/-])([A-Za-z][\w+#]*(?:[.-][A-Za-z][\w+#]*)*)"
                        r"(?:@|==|>=|~=|\s+v|\s+version\s+|\s+)(v?\d+(?:\.\d+){1,3}[a-z0-9]*|v\d+)(?!\w|\.\d)")
_SERVICE = re.compile(r"\b(?:the|our|a|an|their|my|your|its|this|that)\s+((?:[\w-]+\s+){0,2}[\w-]+)\s+("
                      + "|".join(sorted(lexicon.SERVICE_HEADS, key=len, reverse=True)) + r")\b", re.I)
_DETERMINERS = frozenset({"the", "our", "a", "an", "their", "my", "your", "its", "this", "that"})
_ALIAS = re.compile(r"\b(?:aka|a\.k\.a\.|also known as|also called|known as|nicknamed|short for)\s+[\"'“]?"
                    r"([^,;()\"'”.<>\r\n\v\f\x1c-\x1f\x85\u2028\u2029]{2,40})", re.I)  # one line, no tag
_PLACEHOLDER = re.compile(r"\[REDACTED:[^\]]{0,64}\]|\[(?:EMAIL|PHONE|PERSON|IP|CARD|IBAN|SSN)[^\]]{0,32}\]")
_TOKEN = re.compile(r"[^\W_][\w'’&.-]*[\w]|[^\W_]", re.UNICODE)
_NAME_JOINERS = frozenset({"of", "de", "del", "da", "van", "von", "der", "la", "le", "di", "du", "&"})  # not "and": two people
_PERSON_VERBS = frozenset("""
is was has had said says told asked went goes got will would wants wanted likes liked loves loved thinks thought
works worked lives lived moved just also recently started finished joined left maintains maintained owns owned
and 's ’s
""".split())
_MONTH_ONLY = re.compile(r"^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*$", re.I)


_DIGIT = re.compile(r"\d")
_INNER_DOT = re.compile(r"[\w.-]\.[^\W\d_]")  # "main.py", "api.example.com": what a file or a host needs
_VERSION_HINT = re.compile(r"\d\.\d|v\d")  # "3.12", "v2": what a version needs
_ALIAS_WORDS = ("aka", "a.k.a.", "known as", "also called", "nicknamed", "short for")
LOOK_BACK = 48  # characters a cue before a match is looked for in ("issue #12", "repo at acme/api")


def _span_free(taken: bytearray, start: int, end: int) -> bool:
    """Whether no character of ``start:end`` belongs to an entity found already."""
    return taken.find(1, start, end) < 0


def _take(taken: bytearray, start: int, end: int) -> None:
    taken[start:end] = b"\x01" * (end - start)


def _before(text: str, start: int) -> str:
    """The few characters before ``start`` a cue is looked for in (not the whole text before it: linear)."""
    return text[max(0, start - LOOK_BACK):start]


def _opens_sentence(text: str, start: int) -> bool:
    """Whether ``start`` begins the text, a line or a sentence (only whitespace since a ``.!?:;`` or a line end)."""
    i = start
    while i > 0 and text[i - 1].isspace():
        if text[i - 1] == "\n":
            return True
        i -= 1
    return i == 0 or text[i - 1] in ".!?:;"


_CONTRACTION = re.compile(r"['’](?:re|ve|t|d|ll|m)$", re.I)


def _capitalised(tok: str) -> bool:
    if _CONTRACTION.search(tok):  # You're, Can't, How'd: never names
        return False
    first = tok[0]
    return first.isupper() and (any(c.islower() for c in tok) or (len(tok) >= 2 and tok.isalpha()))


_GERMAN = frozenset("der die das den dem des und ist nicht ein eine einen einem mit für auf bei zu von sich auch "
                    "wir ich sie er es wird wurde haben hat sind war im am zum zur über".split())
_ENGLISH = frozenset("the and is are was were of to in on with for at it this that i you we he she they".split())


def _mostly_capitalised(words: list[str]) -> bool:
    """German-like text (every noun capitalised), or a title in capitals: capitals do not mark names there."""
    firsts = [w[0] for w in words]
    alpha = [w for w, c in zip(words, firsts) if c.isalpha()]
    if len(alpha) < 4:
        return False
    caps = sum(map(str.isupper, (w[0] for w in alpha)))
    if not caps:
        return False  # no capital: no name either way
    low = [w.casefold() for w in alpha]
    german = sum(map(_GERMAN.__contains__, low))
    if german >= 2 and german > sum(map(_ENGLISH.__contains__, low)):
        return True
    return len(alpha) >= 6 and caps / len(alpha) > 0.8


def _name_kind(words: list[str], before: str) -> tuple[str, bool]:
    """The type of a capitalised name and whether it was guessed (no cue said it)."""
    lower = [w.casefold().rstrip(".") for w in words]
    full = " ".join(lower)
    if lower[-1] in lexicon.ORG_SUFFIXES or lower[0] in ("university", "bank", "bureau", "institute"):
        return "org", False
    if lower[-1] in lexicon.PLACE_SUFFIXES and len(words) > 1:
        return "place", False
    if full in lexicon.places():
        return "place", False
    if full in lexicon.TECH or any(w in lexicon.TECH for w in lower) and len(words) <= 2:
        return "product", False
    w0 = words[0]
    if len(words) == 1 and (any(c.isdigit() for c in w0) or any(c.isupper() for c in w0[1:]) and
                            any(c.islower() for c in w0)):
        return "product", False  # ClickHouse, PostgreSQL, iPhone-like, S3
    if len(words) == 1 and w0.isupper() and len(w0) <= 6:
        return "org", True  # an acronym: NASA, IBM (a guess)
    if before.casefold().rstrip().rpartition(" ")[2] in lexicon.PERSON_TITLES:
        return "person", False
    if len(words) <= 3 and all(part[:1].isupper() and part[1:].islower() for w in words
                               if w.casefold() not in _NAME_JOINERS for part in re.split(r"[-'’]", w) if part):
        return "person", True
    return "product", True


def extract(text: str) -> list[Mention]:
    """The entities ``text`` names, each once (by kind and key), in order of first mention."""
    if not text:
        return []
    if "[" in text:
        text = _PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)  # a redacted secret names nothing
    found: dict[tuple[str, str], Mention] = {}
    taken = bytearray(len(text))  # 1 where an entity was found: later rules do not look inside it

    def add(name: str, kind: str, start: int, end: int, **extra: object) -> None:
        name = name.strip().strip(".,;:!?\"'()[]")
        k = names.key(name) if kind not in _RAW_KEYS else name.casefold()
        if not k or len(found) >= MAX_MENTIONS or not any(c.isalnum() for c in k):
            return
        _take(taken, start, end)
        slot = (kind, k)
        if slot not in found:
            found[slot] = Mention(name=name, kind=kind, key=k, **extra)  # type: ignore[arg-type]
        elif extra.get("version") and not found[slot].version:
            found[slot] = Mention(name=found[slot].name, kind=kind, key=k, version=str(extra["version"]))

    # cheap checks before each pattern: most sentences have no identifier, and a pattern not run costs nothing
    has_dot = "." in text and _INNER_DOT.search(text) is not None
    has_dash, has_slash = "-" in text, "/" in text
    has_digit = _DIGIT.search(text) is not None

    def full() -> bool:
        return len(found) >= MAX_MENTIONS

    for m in (_URL.finditer(text) if "://" in text else ()):
        if full():
            break
        host = m.group(1).split("@")[-1].split(":")[0].lower()
        path = m.group(2) or ""
        repo = _FORGE_REPO.match(path) if host.endswith(("github.com", "gitlab.com", "bitbucket.org")) else None
        if repo:
            add(f"{repo.group(1)}/{repo.group(2)}", "repo", m.start(), m.end())
        elif host and "." in host:
            add(host, "host", m.start(), m.end())
    for m in (_ISSUE_KEY.finditer(text) if has_dash and has_digit else ()):
        if full():
            break
        if _span_free(taken, m.start(), m.end()) and not m.group(1).startswith(("UTF-", "ISO-", "SHA-", "RFC-")):
            add(m.group(1), "issue", m.start(), m.end())
    for m in (_ISSUE_REF.finditer(text) if "#" in text else ()):
        if full():
            break
        ref = m.group(1)
        if _span_free(taken, m.start(), m.end()) and ("/" in ref or _ISSUE_WORD.search(_before(text, m.start()))):
            add(ref, "issue", m.start(), m.end())
    for m in (_FILE.finditer(text) if has_dot else ()):
        if full():
            break
        if _span_free(taken, m.start(), m.end()):
            add(m.group(1), "file", m.start(), m.end())
    for m in (_HOST.finditer(text) if has_dot else ()):
        if full():
            break
        if _span_free(taken, m.start(), m.end()) and not m.group(1)[0].isdigit():
            add(m.group(1).lower(), "host", m.start(), m.end())
    for m in (_HOSTNAME.finditer(text) if has_dash else ()):
        if full():
            break
        if _span_free(taken, m.start(), m.end()):
            add(m.group(1), "host", m.start(), m.end())
    for m in (_REPO.finditer(text) if has_slash else ()):
        if full():
            break
        a, _, b = m.group(1).partition("/")
        shaped = any(c in m.group(1) for c in "-_.") or any(c.isdigit() for c in a + b)
        if (_span_free(taken, m.start(), m.end()) and a[0].isalpha() and b[0].isalpha()
                and (_REPO_WORD.search(_before(text, m.start())) or shaped and a.islower() and b.islower())):
            add(m.group(1), "repo", m.start(), m.end())
    for m in (_VERSIONED.finditer(text) if has_digit and _VERSION_HINT.search(text) else ()):
        if full():
            break
        name, version = m.group(1), m.group(2)
        low = name.casefold()
        if (not _span_free(taken, m.start(), m.end()) or low in lexicon.NOT_NAMES or _MONTH_ONLY.match(name)
                or (not (name[0].isupper() or low in lexicon.TECH) and not re.search(r"@|==|>=|~=", m.group()))
                or len(name) < 2):
            continue
        add(name, "product", m.start(), m.end(), version=version.lstrip("v") if version[0] == "v" else version)
    for m in _SERVICE.finditer(text):
        if full():
            break
        mods = m.group(1).split()
        dets = [i for i, w in enumerate(mods) if w.casefold() in _DETERMINERS]
        if dets:  # "the queue the ingest worker": the name starts after the last determiner
            mods = mods[dets[-1] + 1:]
        while mods and mods[0].casefold() in lexicon.NOT_MODIFIERS:
            mods = mods[1:]
        if not mods or any(w.casefold() in lexicon.NOT_NAMES for w in mods) or len(mods) > 2:
            continue
        start = m.start(1) + m.group(1).find(mods[0])
        if _span_free(taken, start, m.end()):
            add(" ".join(mods + [m.group(2)]), "service", start, m.end())
    if not full():
        _names(text, add, taken, full)
    _aliases(text, found)
    return list(found.values())


def _names(text: str, add: "_Add", taken: bytearray, full: "_Full") -> None:
    tokens = list(_TOKEN.finditer(text))
    words = [t.group() for t in tokens]
    if _mostly_capitalised(words):
        return
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        word = words[i]
        if not word[0].isupper():  # most words: not even a capital
            i += 1
            continue
        if full():
            return
        if not _capitalised(word) or _strip_possessive(word).casefold().rstrip(".") in lexicon.NOT_NAMES \
                or not _span_free(taken, tok.start(), tok.end()):
            i += 1
            continue
        run = [tok]
        j = i + 1
        while j < len(tokens) and len(run) < 5:
            nxt = tokens[j]
            gap = text[run[-1].end():nxt.start()]
            if gap not in (" ", "") or not _span_free(taken, nxt.start(), nxt.end()):
                break
            w = nxt.group()
            if _capitalised(w) and _strip_possessive(w).casefold().rstrip(".") not in lexicon.NOT_NAMES:
                run.append(nxt)
            elif w.casefold() in _NAME_JOINERS and j + 1 < len(tokens) and _capitalised(tokens[j + 1].group()) \
                    and text[nxt.end():tokens[j + 1].start()] == " ":
                run.append(nxt)
            else:
                break
            j += 1
        while run and run[-1].group().casefold() in _NAME_JOINERS:
            run.pop()
        if not run:  # a joiner alone ("Van", "La is ..."): no name (it raised IndexError, losing the memory's links)
            i = j
            continue
        words_ = [_strip_possessive(t.group()) for t in run]
        start, end = run[0].start(), run[-1].end()
        before = text[max(0, start - 12):start]
        kind, guessed = _name_kind(words_, before)
        initial = _opens_sentence(text, start)
        after = text[end:end + 16].lstrip().split(" ")[0].casefold().strip(",.")
        tentative = initial and len(run) == 1 and kind == "person" and guessed and after not in _PERSON_VERBS \
            and not text[end:end + 2] in ("'s", "’s")
        add(" ".join(words_), kind, start, end, guessed=guessed, tentative=tentative)
        i = j


_POSSESSIVE = re.compile(r"['’]s?$")


def _strip_possessive(word: str) -> str:
    return _POSSESSIVE.sub("", word) if "'" in word or "’" in word else word


# "ClickHouse, which we also call the events store": the name after "call" is an alias, as after "aka"
_CALLED = re.compile(r"\b(?:which|that|who|whom)\s+(?:we|they|you|people|everyone|everybody)\s+"
                     r"(?:also\s+|often\s+|usually\s+|just\s+|sometimes\s+)?call\s+[\"'“]?"
                     r"([^,;()\"'”.<>\r\n\v\f\x1c-\x1f\x85\u2028\u2029]{2,40})", re.I)  # one line, no tag


def _aliases(text: str, found: dict[tuple[str, str], Mention]) -> None:
    """"ClickHouse (aka CHouse)", "Robert, also known as Bob": the second name is an alias of the first."""
    low = text.casefold()
    aka, called = any(w in low for w in _ALIAS_WORDS), "call" in low  # most texts name no alias: no pattern run
    if not aka and not called:
        return
    for m in [*(_ALIAS.finditer(text) if aka else ()), *(_CALLED.finditer(text) if called else ())]:
        first, second = names.key(text[max(0, m.start() - 60):m.start()].rstrip(" ,(")), m.group(1).strip()
        for slot, mention in list(found.items()):
            if mention.key and first.endswith(mention.key):
                found[slot] = Mention(name=mention.name, kind=mention.kind, key=mention.key, version=mention.version,
                                      guessed=mention.guessed, tentative=False,
                                      aliases=tuple(dict.fromkeys(mention.aliases + (second,))))
                second_key = names.key(second)
                for s2, m2 in list(found.items()):  # the alias, found (and typed) by its own spelling too
                    if m2.key == second_key and s2 != slot:
                        found.pop(s2)
                break


_Add = object  # the type of extract()'s inner ``add`` (a callable), for _names' signature
_Full = object  # and of its ``full`` (whether MAX_MENTIONS are found)

__all__ = ["KINDS", "MAX_MENTIONS", "Mention", "extract"]
