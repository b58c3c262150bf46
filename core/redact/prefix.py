"""The literal strings every match of a regex must start with, so it is tried only where they occur.

CPython's ``re`` tries a pattern at every position of the text; for a case-insensitive alternation of words
(``(?i)(?:access|auth|api|key|secret|token)...``, gitleaks' generic rule) that costs ~300 µs per 2 KB. If
every match must begin with one of a few literals, finding those with ``str.find`` and calling
``pattern.match`` there gives the same matches (``match`` at a position still sees the text before it, so
``\\b`` and look-behinds behave as in ``search``) at a fraction of the cost.

The analysis walks the parsed pattern (``re._parser``, ``sre_parse`` before 3.11); anything it does not
understand simply means "no usable prefix" and the rule is searched as before.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

try:  # pragma: no cover - the module moved in 3.11
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

__all__ = ["literal_starts"]

MIN_LEN = 2  # a one-character start occurs too often to be worth it
MAX_LEN = 8
MAX_STARTS = 48
MAX_CLASS = 4  # [Aa] or [MNO] expands; [A-Z] does not


class _Stop(Exception):
    pass


def _class_chars(items: list) -> set[str] | None:
    chars: set[str] = set()
    for op, av in items:
        if op is _c.LITERAL:
            chars.add(chr(av))
        elif op is _c.RANGE and av[1] - av[0] < MAX_CLASS * 2:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        else:
            return None
    lowered = {c.lower() for c in chars}
    if not all(c.isascii() for c in lowered) or len(lowered) > MAX_CLASS:
        return None
    return lowered


def _starts(seq: list) -> tuple[set[str], bool]:
    """(prefixes every match of ``seq`` starts with, whether ``seq`` is wholly literal)."""
    out = {""}
    for op, av in seq:
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            if any(out):  # zero-width: harmless before the first character, but not after one
                return out, False
            continue
        if op is _c.LITERAL:
            ch = chr(av).lower()
            if not ch.isascii():
                return out, False
            step, done = {ch}, True
        elif op is _c.IN:
            chars = _class_chars(av)
            if chars is None:
                return out, False
            step, done = chars, True
        elif op is _c.BRANCH:
            step, done = set(), True
            for alt in av[1]:
                sub, complete = _starts(alt)
                step |= sub
                done = done and complete
        elif op is _c.SUBPATTERN:
            step, done = _starts(av[-1])
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] >= 1:
            step, _ = _starts(av[2])
            done = False
        else:
            return out, False
        if "" in step:  # this element may begin with anything: the prefixes so far are all there is
            return out, False
        out = {(a + b)[:MAX_LEN] for a, b in product(out, step)}
        if len(out) > MAX_STARTS:
            raise _Stop
        if not done or all(len(s) >= MAX_LEN for s in out):
            return out, False
    return out, True


def _minimal(starts: set[str]) -> tuple[str, ...]:
    """Drop a start that has a shorter start as its prefix (its hits are found by the shorter one)."""
    keep = [s for s in starts if not any(o != s and s.startswith(o) for o in starts)]
    return tuple(sorted(keep))


@lru_cache(maxsize=2048)
def literal_starts(pattern: str, flags: int = 0) -> tuple[str, ...] | None:
    """Lowercase literals one of which begins every match of ``pattern``, or None when there are none."""
    try:
        parsed = _parser.parse(pattern, flags)
        starts, _ = _starts(list(parsed))
    except (_Stop, Exception):  # noqa: BLE001 - unknown shapes just mean "search as usual"
        return None
    if not starts or any(len(s) < MIN_LEN for s in starts):
        return None
    return _minimal(starts)
