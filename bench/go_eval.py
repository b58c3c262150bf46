"""Evaluate the small subset of Go that gitleaks' rule files use to build their test strings.

Literals (raw and interpreted), ``+``, ``[]string{...}``, ``map[string]string{...}``, ``append``,
``fmt.Sprintf``, ``strings.Repeat``, base64 ``EncodeToString`` and gitleaks' generator helpers
(``utils.GenerateSampleSecret(s)``, ``secrets.NewSecret``, ``newPlausibleSecret``, ``utils.Hex(...)``, ...).
Values remember which part of them was generated (the secret), so the bench can check that part is gone.
Anything else raises :class:`Unsupported`: the statement is skipped and a case that needs it is not made up.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Evaluator", "Unsupported", "Val", "tokens", "go_string"]

_TOKEN = re.compile(
    r"(?P<ws>[ \t\r]+)|(?P<nl>\n)|(?P<com>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>\"(?:\\.|[^\"\\\n])*\")"
    r"|(?P<rune>'(?:\\.|[^'\\])')|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>\d+)"
    r"|(?P<op>\.\.\.|:=|==|!=|&&|\|\||\+=|<-|[-+*/%&|^<>=!.,;:(){}\[\]])",
    re.S,
)
# sample contexts of utils.GenerateSampleSecrets (the order does not matter: gitleaks keeps them in a map)
_SAMPLES = (
    '{i}Token="{s}"', '{i}Token = "{s}"', "{i}Token={s}", "{i}Token = {s}", '{\n    "{i}_token": "{s}"\n}',
    '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}', "<{i}Token>\n    {s}\n</{i}Token>",
    "{i}_token: {s}", "{i}_token: '{s}'", '{i}_token: "{s}"', 'string {i}Token = "{s}";',
    'var {i}Token string = "{s}"', '{i}Token := "{s}"', "{i}Token := `{s}`", 'String {i}Token = "{s}";',
    'var {i}Token = "{s}"', '${i}Token .= "{s}"', "{i}Token = '{s}'", '{i}Token = "{s}"',
    'System.setProperty("{I}_TOKEN", "{s}")', '  "{i}Token" => "{s}"', '{i}_TOKEN = "{s}"',
    '{i}_TOKEN := "{s}"', '{i}_TOKEN ::= "{s}"', '{i}_TOKEN :::= "{s}"', '{i}_TOKEN ?= "{s}"',
)
_PATTERNS = {
    "Numeric": "[0-9]{%s}", "Hex": "[a-f0-9]{%s}", "AlphaNumeric": "[a-z0-9]{%s}",
    "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}", "AlphaNumericExtended": "[a-z0-9=_\\-]{%s}",
    "AlphaNumericExtendedLong": "[a-z0-9\\/=_\\+\\-]{%s}",
}


class Unsupported(Exception):
    pass


UNKNOWN = object()  # a variable whose value could not be evaluated (fine unless a case needs it)


@dataclass(frozen=True)
class Val:
    """A Go string value and, when part of it was generated, the span of that secret part."""

    text: str
    span: tuple[int, int] | None = None

    @classmethod
    def generated(cls, text: str) -> "Val":
        return cls(text, (0, len(text)))

    @property
    def secret(self) -> str | None:
        return self.text[self.span[0] : self.span[1]] if self.span else None

    def __add__(self, other: "Val") -> "Val":
        spans = [sp for sp in (self.span, _shift(other.span, len(self.text))) if sp]
        span = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
        return Val(self.text + other.text, span)


def _shift(span: tuple[int, int] | None, by: int) -> tuple[int, int] | None:
    return (span[0] + by, span[1] + by) if span else None


def tokens(src: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(src):
        kind = m.lastgroup
        if kind in ("ws", "com"):
            continue
        out.append((kind or "", m.group(0)))
    return out


def go_string(tok: str) -> str:
    if tok.startswith("`"):
        return tok[1:-1]
    return json.loads(re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", tok.replace("\\'", "'")))


class Evaluator:
    """Evaluates the statements of one Go rule function."""

    def __init__(self, toks: list[tuple[str, str]], gen: Callable[[str], str],
                 stopwords: Callable[[], tuple[str, ...]] = tuple) -> None:
        self.t = toks
        self.i = 0
        self.gen = gen
        self.stopwords = stopwords
        self.vars: dict[str, Any] = {}

    def peek(self, k: int = 0) -> tuple[str, str]:
        j = self.i + k
        return self.t[j] if j < len(self.t) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unsupported(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def skip_nl(self) -> None:
        while self.peek()[0] == "nl":
            self.i += 1

    def expr(self) -> Any:
        left = self.unary()
        while self.peek()[1] == "+":
            self.take()
            self.skip_nl()
            right = self.unary()
            if not (isinstance(left, Val) and isinstance(right, Val)):  # UNKNOWN included
                raise Unsupported("+ on non-strings")
            left = left + right
        return left

    def unary(self) -> Any:
        kind, tok = self.peek()
        if kind in ("raw", "str"):
            self.take()
            return Val(go_string(tok))
        if kind == "num":
            self.take()
            return int(tok)
        if tok == "(":
            self.take()
            v = self.expr()
            self.take(")")
            return v
        if tok == "[":
            self.take()
            self.take("]")
            elem = self.take()[1]
            if self.peek()[1] == "(":  # []byte(x) conversion
                self.take("(")
                v = self.expr()
                self.take(")")
                return v
            if elem != "string":
                raise Unsupported(f"[]{elem} literal")
            return self.list_literal()
        if tok == "map":
            while self.peek()[1] != "{":
                self.take()
            return self.map_literal()
        if kind == "id":
            name = self.take()[1]
            while self.peek()[1] == "." and self.peek(1)[0] == "id":
                self.take()
                name += "." + self.take()[1]
            if self.peek()[1] == "(":
                return self.call(name)
            if name == "nil":
                return []
            if name in self.vars:
                return self.vars[name]
            raise Unsupported(f"unknown name {name}")
        raise Unsupported(f"token {tok!r}")

    def args(self) -> tuple[list[Any], bool]:
        self.take("(")
        out, spread = [], False
        self.skip_nl()
        while self.peek()[1] != ")":
            out.append(self.expr())
            if self.peek()[1] == "...":
                self.take()
                spread = True
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()
                self.skip_nl()
        self.take(")")
        return out, spread

    def list_literal(self) -> list[Any]:
        self.take("{")
        out: list[Any] = []
        self.skip_nl()
        while self.peek()[1] != "}":
            out.append(self._element())
        self.take("}")
        return out

    def map_literal(self) -> list[Any]:
        self.take("{")
        out: list[Any] = []
        self.skip_nl()
        while self.peek()[1] != "}":
            self.expr()
            self.take(":")
            self.skip_nl()
            out.append(self._element())
        self.take("}")
        return out

    def _element(self) -> Any:
        """One element of a list or map literal and its trailing comma; None (counted as not evaluated) when
        it uses something this evaluator does not support."""
        start = self.i
        try:
            value = self.expr()
        except Unsupported:
            self.i = start
            self._skip_element()
            value = None
        self.skip_nl()
        if self.peek()[1] == ",":
            self.take()
            self.skip_nl()
        return value

    def _skip_element(self) -> None:
        depth = 0
        while True:
            tok = self.peek()[1]
            if tok in "([{" and tok:
                depth += 1
            elif tok in ")]}" and tok:
                if depth == 0:
                    return
                depth -= 1
            elif tok == "," and depth == 0:
                return
            if self.peek()[0] == "eof":
                return
            self.take()

    def call(self, name: str) -> Any:
        args, spread = self.args()
        short = name.rsplit(".", 1)[-1]
        if short in _PATTERNS:
            return Val(_PATTERNS[short] % _plain(args[0]))
        if short == "Hex8_4_4_4_12":
            return Val(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        if name == "secrets.NewSecret":
            return Val.generated(self.gen(_plain(args[0])))
        if name == "newPlausibleSecret":  # generic.go: a digit and no stop word, retried until so
            for _ in range(1000):
                s = self.gen(_plain(args[0]))
                low = s.lower()
                if re.search("[1-9]", s) and not any(w in low for w in self.stopwords()):
                    return Val.generated(s)
            raise Unsupported("no plausible secret in 1000 tries")
        if short == "GenerateSampleSecret":
            i, s = _plain(args[0]), args[1]
            return _wrap(f'{i}_api_token = "{{s}}"', s)
        if short == "GenerateSampleSecrets":
            i, s = _plain(args[0]), args[1]
            return [_wrap(t.replace("{i}", i).replace("{I}", i.upper()), s) for t in _SAMPLES]
        if name == "append":
            base = list(args[0])
            for a in args[1:]:
                base.extend(a if spread and isinstance(a, list) else [a])
            return base
        if name == "fmt.Sprintf":
            return _sprintf(args[0], args[1:])
        if name == "strings.Repeat":
            return Val(_plain(args[0]) * int(args[1]))
        if short == "EncodeToString":
            data = args[0].text.encode()
            enc = {"StdEncoding": base64.b64encode(data), "URLEncoding": base64.urlsafe_b64encode(data),
                   "RawStdEncoding": base64.b64encode(data).rstrip(b"="),
                   "RawURLEncoding": base64.urlsafe_b64encode(data).rstrip(b"=")}
            kind = name.split(".")[-2] if "." in name else ""
            if kind not in enc:
                raise Unsupported(name)
            out = enc[kind].decode()
            return Val.generated(out) if args[0].span else Val(out)
        raise Unsupported(f"call {name}")

    def run(self) -> dict[str, Any]:
        """Evaluate assignments; return the tps/fps given to utils.Validate*."""
        result: dict[str, Any] = {}
        while self.peek()[0] != "eof":
            if self.peek()[1] == "var" and self.peek(1)[0] == "id" and self.peek(2)[1] == "=":
                self.i += 1
            kind, tok = self.peek()
            if kind == "id" and self.peek(1)[1] in (":=", "="):
                name = tok
                self.i += 2
                start = self.i
                try:
                    self.vars[name] = self.expr()
                except Unsupported:
                    self.i = start
                    self.vars[name] = UNKNOWN
                    self._skip_statement()
                continue
            if tok == "return" and self.peek(1)[1] == "utils" and self.peek(3)[1].startswith("Validate"):
                self.i += 4
                try:
                    args, _ = self.args()
                    result = {"tps": args[1], "fps": args[2] if len(args) > 2 else None}
                except Unsupported as exc:
                    result = {"error": str(exc)}
                continue
            self.i += 1
        return result

    def _skip_statement(self) -> None:
        depth = 0
        while self.peek()[0] != "eof":
            tok = self.peek()[1]
            if tok in ("(", "[", "{"):
                depth += 1
            elif tok in (")", "]", "}"):
                depth -= 1
            elif self.peek()[0] == "nl" and depth <= 0:
                return
            self.take()


def _plain(v: Any) -> str:
    if isinstance(v, Val):
        return v.text
    if isinstance(v, int):
        return str(v)
    raise Unsupported("expected a string")


def _wrap(template: str, s: Val) -> Val:
    """``template`` with ``{s}`` replaced by ``s``; the secret is ``s``'s generated part (else all of ``s``)."""
    at = template.index("{s}")
    inner = s.span or (0, len(s.text))
    return Val(template.replace("{s}", s.text, 1), (at + inner[0], at + inner[1]))


def _sprintf(fmt: Any, args: list[Any]) -> Val:
    out = Val("")
    it = iter(args)
    pos = 0
    pattern = _plain(fmt)
    for m in re.finditer(r"%[-+# 0]*\d*[sdvq%]", pattern):
        out = out + Val(pattern[pos : m.start()])
        v = Val("%") if m.group(0) == "%%" else next(it)
        out = out + (v if isinstance(v, Val) else Val(_plain(v)))
        pos = m.end()
    return out + Val(pattern[pos:])
