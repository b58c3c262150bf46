"""Translate Go RE2 regex syntax (gitleaks' rules) into Python ``re`` syntax.

RE2 and ``re`` agree on most syntax. The differences that occur in maintained rule sets, and what becomes of
them here:

* inline flags mid-pattern (``\\b(p8e-(?i)[a-z0-9]{32})``): RE2 scopes them to the rest of the enclosing
  group, Python only accepts global flags at the very start, so they become a scoped ``(?i:...)`` group that
  is closed (and reopened after each ``|``) where RE2's scope ends;
* POSIX classes (``[[:alnum:]]``) become explicit ASCII ranges;
* ``\\z`` becomes ``\\Z``; ``\\Q...\\E`` becomes an escaped literal; ``\\x{263a}`` becomes ``\\u263a``;
  ``(?<name>...)`` becomes ``(?P<name>...)``;
* ``[``, ``&&``, ``~~``, ``||`` inside a class are escaped (Python reserves them for set operations).

Anything else that Python cannot express the same way (Unicode classes ``\\pL``, ``\\C``, the ungreedy flag
``U``) raises :class:`Untranslatable`; the caller skips that rule and counts it. Compile the result with
``re.ASCII``: RE2's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII.
"""

from __future__ import annotations

import re

__all__ = ["Untranslatable", "top_level_alternation", "translate"]

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_FLAGS = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)([:)])")


class Untranslatable(ValueError):
    """The RE2 pattern uses syntax Python's ``re`` cannot express with the same meaning."""


def _escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape starting at ``p[i] == '\\\\'``; returns (text, next index)."""
    if i + 1 >= len(p):
        raise Untranslatable("trailing backslash")
    c = p[i + 1]
    if c == "z" and not in_class:
        return "\\Z", i + 2
    if c in "pP":
        raise Untranslatable(f"Unicode class \\{c}")
    if c == "C":
        raise Untranslatable("\\C (any byte)")
    if c == "Q":
        end = p.find("\\E", i + 2)
        literal = p[i + 2 :] if end < 0 else p[i + 2 : end]
        return re.escape(literal), len(p) if end < 0 else end + 2
    if c == "x" and p.startswith("{", i + 2):
        end = p.find("}", i + 3)
        if end < 0:
            raise Untranslatable("unterminated \\x{...}")
        code = int(p[i + 3 : end], 16)
        return (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"), end + 1
    return p[i : i + 2], i + 2


def _class(p: str, i: int) -> tuple[str, int]:
    """Translate the bracket expression starting at ``p[i] == '['``; returns (text, next index)."""
    out = ["["]
    i += 1
    if i < len(p) and p[i] == "^":
        out.append("^")
        i += 1
    if i < len(p) and p[i] == "]":  # a leading ']' is a literal in both dialects
        out.append("\\]")
        i += 1
    while i < len(p):
        c = p[i]
        if c == "]":
            return "".join(out) + "]", i + 1
        if c == "\\":
            text, i = _escape(p, i, in_class=True)
            out.append(text)
            continue
        if c == "[":
            m = re.match(r"\[:(\^?)([a-z]+):\]", p[i:])
            if m:
                if m.group(1) or m.group(2) not in _POSIX:
                    raise Untranslatable(f"POSIX class {m.group(0)}")
                out.append(_POSIX[m.group(2)])
                i += len(m.group(0))
                continue
            out.append("\\[")
            i += 1
            continue
        if c in "&~|" and i + 1 < len(p) and p[i + 1] == c:
            out.append("\\" + c)
            i += 1
            continue
        out.append(c)
        i += 1
    raise Untranslatable("unterminated character class")


def top_level_alternation(pattern: str) -> bool:
    """Whether the RE2 ``pattern`` has a ``|`` outside every group and bracket expression."""
    depth, i = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            _, i = _escape(pattern, i, in_class=False)
            continue
        if c == "[":
            _, i = _class(pattern, i)
            continue
        if c == "|" and depth == 0:
            return True
        depth += (c == "(") - (c == ")")
        i += 1
    return False


def translate(pattern: str) -> str:
    """The Python ``re`` equivalent of the RE2 ``pattern`` (raises :class:`Untranslatable`)."""
    out: list[str] = []
    # one entry per open group (and one for the top level): the inline flags opened inside it so far
    opened: list[list[str]] = [[]]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            text, i = _escape(pattern, i, in_class=False)
            out.append(text)
        elif c == "[":
            text, i = _class(pattern, i)
            out.append(text)
        elif c == "(":
            m = _FLAGS.match(pattern, i)
            if m and "U" in m.group(1):
                raise Untranslatable("ungreedy flag U")
            if m and m.group(2) == ")":  # inline flags: scope them explicitly
                if not out and len(opened) == 1 and "-" not in m.group(1):
                    out.append(m.group(0))  # a leading global flag group is valid Python as is
                else:
                    out.append(f"(?{m.group(1)}:")
                    opened[-1].append(m.group(1))
                i = m.end()
                continue
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
            else:
                out.append("(")
                i += 1
            opened.append([])
        elif c == ")":
            if len(opened) == 1:
                raise Untranslatable("unbalanced ')'")
            out.append(")" * len(opened.pop()) + ")")
            i += 1
        elif c == "|":
            flags = opened[-1]
            out.append(")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags))
            i += 1
        else:
            out.append(c)
            i += 1
    if len(opened) != 1:
        raise Untranslatable("unbalanced '('")
    out.append(")" * len(opened[0]))
    return "".join(out)
