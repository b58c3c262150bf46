"""Resolution without an LLM: which known entity a mention is, or none.

Rules, in order, always inside one scope and one type (a *guessed* type, a bare capitalised name, gives way to
a typed one of the same name):

1. the same key, or a known alias's key ("ClickHouse" = "clickhouse" = "CHouse" once said so);
2. the same name written apart or together ("Click House", "click-house", "ClickHouse"), or a CamelCase name
   with its leading parts cut to initials ("CHouse" -> "ClickHouse", when only one name fits);
3. a person's first name and a full name, when the scope knows exactly one full name with that first name and
   no one called by the first name alone ("Dana" -> "Dana Whitfield"; with two Danas, nothing);
4. a near-identical spelling ("Kubernets" -> "Kubernetes"), only for names long and varied enough to trust
   (:func:`~.names.informative`), starting with the same letter ("auth"/"oauth" service), never where the digits
   differ ("iPhone 14"/"iPhone 15"), never for people (a surname one letter apart is another family), places
   ("Columbia"/"Colombia") or identifiers.

A merge by rules 2-4 adds the spelling as an alias, with the rule that made it: it can be split off again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from . import names
from .extract import Mention

IDENTIFIER_KINDS = frozenset({"issue", "file", "repo", "host"})
SIMILAR_KINDS = frozenset({"org", "product", "service"})  # places: "Columbia"/"Colombia" are two
JW_MIN = 0.95  # Jaro-Winkler of two informative keys, at least (and one edit or swap at most, two from 10 chars)
_DIGITS = re.compile(r"\d+")
_ORG_TAIL = re.compile(r"\s+(?:inc|ltd|llc|corp|corporation|co|gmbh|ag|sa|plc|company)$")


@dataclass
class Known:
    """What resolution needs to know of a stored entity."""

    id: str
    kind: str
    name: str
    keys: set[str] = field(default_factory=set)
    guessed: bool = False
    refused: set[str] = field(default_factory=set)  # keys split off it: never merged into it again


@dataclass(frozen=True)
class Match:
    id: str
    rule: str  # "key", "alias", "spacing", "first-name", "full-name", "similar"


def lookup_keys(mention: Mention) -> list[str]:
    """The keys a stored entity is found by for ``mention`` (its own, its aliases', spacing-free, first word)."""
    out = [mention.key, names.squashed(mention.key)]
    out += [names.key(a) for a in mention.aliases]
    ws = names.words(mention.key)
    if mention.kind == "person" and ws:
        out.append("first:" + ws[0])
        out.append(ws[0])  # "Dana Whitfield" finds the "Dana" named before
    if mention.kind in SIMILAR_KINDS:
        out += block_keys(mention.key)
    org = _ORG_TAIL.sub("", mention.key)
    if org != mention.key:
        out.append(org)
    return list(dict.fromkeys(k for k in out if k))


def block_keys(k: str) -> list[str]:
    """Blocking keys for near spellings: the squashed name's first and last three characters."""
    s = names.squashed(k)
    return [f"~{s[:3]}", f"~{s[-3:]}"] if len(s) >= 6 else []


def stored_keys(name: str, kind: str, aliases: Iterable[str] = ()) -> set[str]:
    """Every key an entity is stored under (its name and aliases, their spacing-free forms, a person's first
    name, blocking keys)."""
    out: set[str] = set()
    for n in [name, *aliases]:
        k = names.key(n) if kind not in IDENTIFIER_KINDS else n.casefold()
        if not k:
            continue
        out |= {k, names.squashed(k)}
        org = _ORG_TAIL.sub("", k)
        out.add(org)
        ws = names.words(k)
        if kind == "person" and len(ws) > 1:
            out.add("first:" + ws[0])
        if kind in SIMILAR_KINDS:
            out.update(block_keys(k))
    return out


def _kind_ok(mention: Mention, known: Known) -> bool:
    if mention.kind == known.kind:
        return True
    return (mention.guessed or known.guessed) and not ({mention.kind, known.kind} & IDENTIFIER_KINDS)


def resolve(mention: Mention, candidates: Sequence[Known]) -> Match | None:
    """The entity among ``candidates`` (those of the scope found by :func:`lookup_keys`) that ``mention``
    names, or None for a new one."""
    typed = [c for c in candidates if _kind_ok(mention, c) and mention.key not in c.refused]
    own = [names.key(a) for a in mention.aliases]
    # 1. the same key (a typed candidate before a guessed one)
    for c in sorted(typed, key=lambda c: (c.kind != mention.kind, c.guessed)):
        if mention.key in c.keys:
            return Match(c.id, "key" if names.key(c.name) == mention.key else "alias")
        if any(a in c.keys for a in own):
            return Match(c.id, "alias")
    if mention.kind in IDENTIFIER_KINDS:
        return None
    sq = names.squashed(mention.key)
    for c in typed:  # 2. spacing
        if len(sq) >= 4 and sq in c.keys and _same_digits(mention.key, c.name):
            return Match(c.id, "spacing")
    if mention.kind in SIMILAR_KINDS:  # 2b. a CamelCase name shortened ("CHouse" -> "ClickHouse")
        short = [c for c in typed if c.kind in SIMILAR_KINDS and (abbreviates(mention.name, c.name)
                                                                 or abbreviates(c.name, mention.name))]
        if len(short) == 1:
            return Match(short[0].id, "abbreviation")
    org = _ORG_TAIL.sub("", mention.key)
    if org != mention.key or mention.kind == "org":
        for c in typed:
            if org in c.keys and c.kind in ("org", mention.kind):
                return Match(c.id, "alias")
    words = names.words(mention.key)
    people = [c for c in typed if c.kind == "person"]
    if mention.kind == "person" and people:  # 3. first name <-> full name
        if len(words) == 1:
            full = [c for c in people if len(names.words(names.key(c.name))) > 1
                    and names.words(names.key(c.name))[0] == words[0]]
            alone = [c for c in people if names.key(c.name) == words[0]]
            if len(full) == 1 and not alone:
                return Match(full[0].id, "first-name")
        else:
            alone = [c for c in people if names.key(c.name) == words[0]]
            others = [c for c in people if len(names.words(names.key(c.name))) > 1
                      and names.words(names.key(c.name))[0] == words[0] and names.key(c.name) != mention.key]
            if len(alone) == 1 and not others:
                return Match(alone[0].id, "full-name")
    if mention.kind in SIMILAR_KINDS and names.informative(mention.key):  # 4. near spelling
        from rapidfuzz.distance import OSA, JaroWinkler  # here: a search's lookups never get this far

        best: tuple[float, Known] | None = None
        for c in typed:
            if c.kind not in SIMILAR_KINDS:
                continue
            ck = names.key(c.name)
            if not names.informative(ck) or not _same_digits(mention.key, ck):
                continue
            a, b = names.squashed(mention.key), names.squashed(ck)
            score = JaroWinkler.similarity(a, b)
            if a[0] == b[0] and score >= JW_MIN and OSA.distance(a, b) <= (1 if min(len(a), len(b)) < 10 else 2):
                if best is None or score > best[0]:
                    best = (score, c)
        if best is not None:
            return Match(best[1].id, "similar")
    return None


_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+")


def abbreviates(short: str, full: str) -> bool:
    """Whether ``short`` is ``full`` (one CamelCase word) with its leading parts cut to their first letters,
    its last part whole ("CHouse"/"ClickHouse", "GHub"/"GitHub"; not "PSQL"/"PostgreSQL": its last part is cut).
    Only candidates sharing a lookup key meet (resolve()): a short name has no near-spelling keys."""
    if " " in short.strip() or " " in full.strip() or len(full) <= len(short):
        return False
    a, b = _CAMEL.findall(short), _CAMEL.findall(full)
    if len(a) != len(b) or len(a) < 2 or a[-1].casefold() != b[-1].casefold() or len(a[-1]) < 3:
        return False
    heads = list(zip(a[:-1], b[:-1]))
    return all(x[:1].isupper() and y.casefold().startswith(x.casefold()) for x, y in heads) \
        and any(len(x) < len(y) for x, y in heads)


def _same_digits(a: str, b: str) -> bool:
    return _DIGITS.findall(a) == _DIGITS.findall(b)


__all__ = ["IDENTIFIER_KINDS", "Known", "Match", "abbreviates", "block_keys", "lookup_keys", "resolve", "stored_keys"]
