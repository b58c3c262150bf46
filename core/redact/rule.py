"""One detector (:class:`Rule`) and the small helpers rule tables share.

A rule is data: a regex, the group to replace, an optional validator and keywords. Compilation is lazy (a
rule set of a few hundred rules costs nothing until a text contains one of a rule's keywords), and cached on
the rule, so a long-lived process compiles each regex once.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from .prefix import literal_starts

# A validator accepts (True / a more specific kind string) or rejects (False/None).
Validator = Callable[[re.Match[str]], "bool | str | None"]

FIRST_GROUP = -1
"""``group`` value meaning gitleaks' rule: the first capture group that matched non-empty, else the match."""

SOURCES = ("overlay", "gitleaks", "pii")
"""Where built-in rules come from: remem's own overlay, the vendored gitleaks rule set, remem's PII rules."""


@dataclass(frozen=True)
class Rule:
    """One detector: ``regex`` finds candidates, ``group`` is the part replaced.

    ``group`` may be a tuple of group names/numbers: the first that participated in the match is replaced
    (used for quoted vs. unquoted values), or :data:`FIRST_GROUP`.
    ``hints`` are lowercase keywords; the rule runs only on text containing one (all keywords of a rule set
    are found in one Aho-Corasick pass: this is what keeps a typical prompt well under 1 ms).
    ``anchor`` (optional) is a tuple of lowercase literals or a regex run on the lowercased text: the rule is
    then only tried with ``regex.match`` at the start of each token containing an anchor hit.
    ``generic`` rules (assignments, headers, prose) run after every provider-specific rule, so a token with a
    known format gets its provider's kind rather than ``secret``. ``source`` is one of :data:`SOURCES` (or
    ``user`` for ``redact.json`` patterns); ``rule_id`` names the rule in its source (gitleaks' id).
    """

    kind: str
    regex: str
    group: int | str | tuple[int | str, ...] = 0
    validator: Validator | None = None
    positive: str = ""
    negative: str = ""
    hints: tuple[str, ...] = ()
    flags: int = 0
    pii: bool = False
    anchor: str | tuple[str, ...] | None = None
    source: str = "overlay"
    generic: bool = False
    rule_id: str = ""
    window: int = 0

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, self.flags)

    @cached_property
    def compiled_anchor(self) -> re.Pattern[str] | None:
        return re.compile(self.anchor) if isinstance(self.anchor, str) else None

    @cached_property
    def anchor_words(self) -> frozenset[str]:
        return frozenset(self.anchor) if isinstance(self.anchor, tuple) else frozenset()

    @cached_property
    def starts(self) -> tuple[str, ...] | None:
        """Lowercase literals every match begins with (the regex is then only tried where they occur)."""
        return None if self.anchor else literal_starts(self.regex, self.flags)

    @property
    def name(self) -> str:
        """``source:rule_id`` (or the kind), for reports."""
        return f"{self.source}:{self.rule_id or self.kind}"

    def applies(self, lowered: str) -> bool:
        """Whether a keyword occurs in the lowercased text (the redactor does this for all rules at once)."""
        return not self.hints or any(h in lowered for h in self.hints)

    def span(self, m: re.Match[str]) -> tuple[int, int] | None:
        """Span of the part to replace, or None when no listed group matched."""
        if self.group == FIRST_GROUP:
            for g in range(1, (m.re.groups or 0) + 1):
                s, e = m.span(g)
                if e > s:
                    return s, e
            return m.span(0)
        groups = self.group if isinstance(self.group, tuple) else (self.group,)
        for g in groups:
            if m.group(g) is not None:
                return m.span(g)
        return None


def shannon_entropy(s: str) -> float:
    """Bits per character; random base62 of length 20+ scores ~4, words ~3."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def char_classes(s: str) -> int:
    """How many of lower/upper/digit character classes occur in ``s``."""
    return sum((any(c.islower() for c in s), any(c.isupper() for c in s), any(c.isdigit() for c in s)))


def group_value(m: re.Match[str], rule_group: int | str | tuple[int | str, ...]) -> str:
    """The text of the first listed group that participated in ``m``."""
    groups = rule_group if isinstance(rule_group, tuple) else (rule_group,)
    for g in groups:
        v = m.group(g)
        if v is not None:
            return v
    return ""


def on_value(check: Callable[[str], bool], group: int | str = 0) -> Validator:
    """Adapt a plain ``str -> bool`` check into a match validator."""
    return lambda m: check(m.group(group) or "")


def mixed(min_classes: int = 2) -> Callable[[str], bool]:
    return lambda v: char_classes(v) >= min_classes
