"""A random string matching a regex: the secrets gitleaks' test cases draw with ``secrets.NewSecret(regex)``.

Covers what secret formats use (literals, classes, repeats, groups, alternation); anything else raises
:class:`~remem.bench.go_eval.Unsupported`, so a case is skipped and counted rather than guessed.
"""

from __future__ import annotations

import random
import re
from typing import Any

try:
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]


from remem.core.redact.re2 import translate

from .go_eval import Unsupported

__all__ = ["RegexSampler"]


class RegexSampler:
    """A random string matching a regex (the few constructs secret formats use)."""

    PRINTABLE = [chr(c) for c in range(33, 127)]

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def __call__(self, pattern: str) -> str:
        return "".join(self._seq(list(_parser.parse(translate(pattern), re.ASCII))))

    def _seq(self, items: list) -> list[str]:
        out: list[str] = []
        for op, av in items:
            out.extend(self._item(op, av))
        return out

    def _item(self, op: Any, av: Any) -> list[str]:
        rng = self.rng
        if op is _c.LITERAL:
            return [chr(av)]
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            return []
        if op is _c.IN:
            return [rng.choice(self._chars(av))]
        if op is _c.ANY:
            return [rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")]
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            hi = lo + 16 if hi == _c.MAXREPEAT else hi
            return [ch for _ in range(rng.randint(lo, hi)) for ch in self._seq(sub)]
        if op is _c.SUBPATTERN:
            return self._seq(av[-1])
        if op is _c.BRANCH:
            return self._seq(rng.choice(av[1]))
        if op is _c.CATEGORY:
            return [rng.choice(self._category(av))]
        raise Unsupported(f"regex construct {op}")

    def _category(self, cat: Any) -> list[str]:
        name = str(cat)
        if "DIGIT" in name:
            return list("0123456789")
        if "SPACE" in name:
            return [" "]
        if "WORD" in name:
            return list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
        raise Unsupported(f"category {name}")

    def _chars(self, items: list) -> list[str]:
        chars: set[str] = set()
        negate = False
        for op, av in items:
            if op is _c.NEGATE:
                negate = True
            elif op is _c.LITERAL:
                chars.add(chr(av))
            elif op is _c.RANGE:
                chars.update(chr(c) for c in range(av[0], av[1] + 1))
            elif op is _c.CATEGORY:
                chars.update(self._category(av))
        pool = [c for c in self.PRINTABLE if c not in chars] if negate else sorted(chars)
        if not pool:
            raise Unsupported("empty character class")
        return pool
