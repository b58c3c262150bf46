"""The ordered rule list the redactor runs, and the keyword prefilter that picks which rules a text needs.

Order decides overlaps (earlier wins): remem's provider rules, then gitleaks' provider rules, then remem's
generic rules (assignments, headers, URLs, command lines, chat), then gitleaks' generic ones, then PII. So a
token with a known format keeps its provider's kind, remem's rule wins where both know a format, and the
kinds users already see (``password``, ``secret``, ``bearer_token``) stay what they were.

All keywords of all rules go into one Aho-Corasick automaton (pyahocorasick, C): one pass over the
lowercased text tells which rules can match, as gitleaks does. A 2 KB prompt costs ~20 µs for that pass
instead of ~230 µs for a ``str.find`` per keyword.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from .rule import SOURCES, Rule

__all__ = ["RuleSet", "Scan", "builtin_rules", "ruleset"]


def builtin_rules(pii: bool, sources: Iterable[str] = SOURCES) -> tuple[Rule, ...]:
    """The built-in rules of ``sources`` in the order the redactor tries them."""
    from . import gitleaks
    from .rules import PII_RULES, SECRET_RULES

    wanted = set(sources)
    unknown = wanted - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown rule source(s) {sorted(unknown)}; known: {', '.join(SOURCES)}")
    ours = SECRET_RULES if "overlay" in wanted else ()
    theirs = gitleaks.load().rules if "gitleaks" in wanted else ()
    tiers = (
        [r for r in ours if not r.generic],
        [r for r in theirs if not r.generic],
        [r for r in ours if r.generic],
        [r for r in theirs if r.generic],
        list(PII_RULES) if pii and "pii" in wanted else [],
    )
    return tuple(r for tier in tiers for r in tier)


class Scan:
    """Where each keyword occurs in one lowercased text (from the single automaton pass)."""

    __slots__ = ("_positions",)

    def __init__(self, positions: dict[str, list[int]]) -> None:
        self._positions = positions

    def hits(self, words: frozenset[str]) -> list[tuple[int, int]]:
        """Sorted (start, end) of every occurrence of each of ``words`` (which must be automaton words).

        Walks the few words found rather than the many a rule names (an anchor may list twenty)."""
        out = [(start, start + len(w)) for w, starts in self._positions.items() if w in words for start in starts]
        out.sort()
        return out


@dataclass
class RuleSet:
    """Rules in order plus one automaton over every keyword and anchor they use.

    ``extra_words`` are looked up in the same pass for other detectors (the entropy check's context words).
    """

    rules: tuple[Rule, ...]
    extra_words: tuple[str, ...] = ()
    broken: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import ahocorasick

        self._always = tuple(i for i, r in enumerate(self.rules) if not r.hints)
        enables: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for word in rule.hints:
                enables.setdefault(word, []).append(i)
        words = set(enables) | set(self.extra_words)
        for rule in self.rules:
            if isinstance(rule.anchor, tuple):
                words.update(rule.anchor)
        self._automaton = ahocorasick.Automaton()
        for word in words:
            self._automaton.add_word(word, (word, tuple(enables.get(word, ()))))
        if words:
            self._automaton.make_automaton()
        self._has_words = bool(words)

    def scan(self, lowered: str) -> tuple[list[Rule], Scan]:
        """The rules whose keywords occur in ``lowered`` (plus keyword-less ones), in order and compiled,
        and the keyword positions for their anchors."""
        positions: dict[str, list[int]] = {}
        chosen = set(self._always)
        if self._has_words:
            for end, (word, idxs) in self._automaton.iter(lowered):
                at = positions.get(word)
                if at is None:
                    positions[word] = [end - len(word) + 1]
                    chosen.update(idxs)
                else:
                    at.append(end - len(word) + 1)
        rules = []
        for i in sorted(chosen):
            rule = self.rules[i]
            if rule.name in self.broken:
                continue
            try:
                rule.compiled  # noqa: B018 - compile on first use; a rule `re` rejects is dropped, not fatal
            except re.error as exc:
                self.broken[rule.name] = str(exc)
                continue
            rules.append(rule)
        return rules, Scan(positions)


@lru_cache(maxsize=16)
def ruleset(pii: bool, sources: frozenset[str] = frozenset(SOURCES), extra_words: tuple[str, ...] = ()) -> RuleSet:
    """The shared, compiled-on-demand rule set of one configuration (one per process)."""
    return RuleSet(builtin_rules(pii, sources), extra_words)
