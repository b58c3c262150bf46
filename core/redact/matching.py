"""How the matches of one rule are found in a text and judged (the redactor decides between rules).

Three ways to try a rule, all giving the matches a plain ``search`` loop would give: at the token starts
around its anchor words, at the occurrences of the literals every match starts with (:mod:`.prefix`), or a
search through the text. A candidate is dropped before its validator runs when an earlier rule already took
its span, since validators (entropy, allow-lists, name heuristics) are the costly part.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterator

from .rule import Rule
from .ruleset import Scan

__all__ = ["Finding", "Spans", "ascii_lower", "find_all", "rule_matches"]


@dataclass(frozen=True)
class Finding:
    """One span :meth:`Redactor.redact` replaces: its kind and the rule (``source:rule_id``) that found it."""

    start: int
    end: int
    kind: str
    rule: str

    @property
    def source(self) -> str:
        return self.rule.split(":", 1)[0]


class Spans:
    """Sorted, non-overlapping spans with O(log n) overlap queries (keeps big inputs linear)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_right(self.starts, start) - 1
        if i >= 0 and self.ends[i] > start:
            return True
        return i + 1 < len(self.starts) and self.starts[i + 1] < end

    def add(self, start: int, end: int) -> None:
        """Insert a span known not to overlap any existing one."""
        i = bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)


def find_all(low: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """Sorted (start, end) of every occurrence of each literal in ``low``."""
    hits: list[tuple[int, int]] = []
    for w in words:
        i = low.find(w)
        while i >= 0:
            hits.append((i, i + len(w)))
            i = low.find(w, i + 1)
    hits.sort()
    return hits


def ascii_lower(text: str) -> str:
    """Lowercase with offsets preserved (``str.lower`` may grow e.g. 'İ')."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# A run of eight equal characters is a template (ghp_xxxx..., AKIAXXXX..., "aaaa..."), not a secret; key material
# (PEM bodies, service-account JSON) has such runs legitimately, and a person telling a password means it.
_RUN = re.compile(r"(.)\1{7,}")
_RUNS_ALLOWED = frozenset({"private_key", "gcp_service_account_key", "prose", "chat"})


def _judge(rule: Rule, m: re.Match[str], taken: Spans) -> Finding | None:
    """The finding for match ``m``, or None: nothing to replace, already taken, or rejected by the validator.

    The overlap test comes first: validators (entropy, allow-lists, name heuristics) are the costly part, and
    a span an earlier rule already took is dropped anyway.
    """
    span = rule.span(m)
    if not span or span[0] >= span[1] or taken.overlaps(span[0], span[1]):
        return None
    if (rule.source == "overlay" and (rule.rule_id or rule.kind) not in _RUNS_ALLOWED
            and _RUN.search(m.string, span[0], span[1])):
        return None
    kind = _safe_validate(rule, m)
    return Finding(span[0], span[1], kind, rule.name) if kind else None


def _hits(low: str, rule: Rule, scan: Scan | None) -> list[tuple[int, int]]:
    return scan.hits(rule.anchor_words) if scan is not None else find_all(low, rule.anchor)  # type: ignore[arg-type]


def rule_matches(rule: Rule, text: str, low: str, taken: Spans, scan: Scan | None) -> Iterator[Finding]:
    """Validated matches of one rule.

    A rejected match resumes the search one character later rather than at its
    end, so ``loaded: smtp_pass=x`` still finds ``smtp_pass=x`` after the
    ``loaded: ...`` candidate was rejected.
    """
    if rule.anchor:
        yield from _anchored_matches(rule, text, low, taken, scan)
        return
    if rule.starts:
        yield from _matches_at_starts(rule, text, low, taken)
        return
    search = rule.compiled.search
    pos, n = 0, len(text)
    while pos <= n:
        m = search(text, pos)
        if m is None:
            return
        found = _judge(rule, m, taken)
        if found:
            yield found
            pos = max(m.end(), m.start() + 1)
        else:
            pos = m.start() + 1


def _matches_at_starts(rule: Rule, text: str, low: str, taken: Spans) -> Iterator[Finding]:
    """Same matches as the search loop, trying ``regex.match`` only where a literal start occurs."""
    match = rule.compiled.match
    done_until = 0
    window = rule.window or len(text)
    for start, _ in find_all(low, rule.starts):  # type: ignore[arg-type]
        if start < done_until:
            continue
        m = match(text, start, start + window)
        if m is None:
            continue
        found = _judge(rule, m, taken)
        if found:
            done_until = max(m.end(), start + 1)
            yield found


_MAX_WALK_BACK = 100  # names/schemes are short; bounding this keeps huge tokens linear


def _anchored_matches(rule: Rule, text: str, low: str, taken: Spans, scan: Scan | None) -> Iterator[Finding]:
    """Try ``rule`` only at the token starts around its anchor keyword hits."""
    match = rule.compiled.match
    tried: set[int] = set()
    done_until = 0
    if rule.compiled_anchor is not None:
        hits = [a.span() for a in rule.compiled_anchor.finditer(low)]
    else:
        hits = _hits(low, rule, scan)
    for start, _ in hits:
        floor = max(0, start - _MAX_WALK_BACK)
        while start > floor and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        starts = (start - 1, start) if start > 0 and text[start - 1] in "\"'" else (start,)
        for st in starts:
            if st < done_until or st in tried:
                continue
            tried.add(st)
            m = match(text, st)
            if m is None:
                continue
            found = _judge(rule, m, taken)
            if found:
                done_until = m.end()
                yield found
                break


def _safe_validate(rule: Rule, m: re.Match[str]) -> str | None:
    """Kind for an accepted match; validators never make redaction raise."""
    if rule.validator is None:
        return rule.kind
    try:
        ok = rule.validator(m)
    except Exception:  # noqa: BLE001 - redaction must never raise on str input
        return None
    if isinstance(ok, str):
        return ok
    return rule.kind if ok else None
