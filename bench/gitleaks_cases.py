"""Extract gitleaks' own per-rule test cases (true and false positives) as data for the redaction bench.

    python -m remem.bench.gitleaks_cases --from /path/to/gitleaks [--rev HEAD]

Each gitleaks rule is written in Go under ``cmd/generate/config/rules/*.go`` together with the strings it
must find (``tps``) and must not (``fps``). This reads those files as text and evaluates the small subset of
Go they use to build the strings (literals, ``+``, ``[]string{...}``, ``append``, ``fmt.Sprintf`` and the
generator helpers ``utils.GenerateSampleSecret(s)``, ``secrets.NewSecret(regex)``, ...). Random secrets are
drawn from the regex with a seeded generator, so the output is reproducible. Cases it cannot evaluate are
counted, not guessed. Nothing of gitleaks' code is kept: the output is the list of strings, as JSON data,
written to ``bench/data/gitleaks_cases.json`` next to the commit it came from.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

from remem.core.redact.re2 import translate

OUT = Path(__file__).with_name("data") / "gitleaks_cases.json"
RULES_DIR = "cmd/generate/config/rules"

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


# ------------------------------------------------------------------------------------------- generator
class _Gen:
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


# ------------------------------------------------------------------------------------------- evaluator
def _tokens(src: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(src):
        kind = m.lastgroup
        if kind in ("ws", "com"):
            continue
        out.append((kind or "", m.group(0)))
    return out


def _go_string(tok: str) -> str:
    if tok.startswith("`"):
        return tok[1:-1]
    return json.loads(re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", tok.replace("\\'", "'")))


class _Func:
    """Evaluates the statements of one Go rule function."""

    def __init__(self, tokens: list[tuple[str, str]], gen: _Gen) -> None:
        self.t = tokens
        self.i = 0
        self.gen = gen
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
            return Val(_go_string(tok))
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
            start = self.i
            try:
                out.append(self.expr())
            except Unsupported:
                self.i = start
                self._skip_element()
                out.append(None)  # counted as not evaluated
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()
                self.skip_nl()
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
            start = self.i
            try:
                out.append(self.expr())
            except Unsupported:
                self.i = start
                self._skip_element()
                out.append(None)
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()
                self.skip_nl()
        self.take("}")
        return out

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
                if re.search("[1-9]", s) and not any(w in low for w in _generic_stopwords()):
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


def _generic_stopwords() -> tuple[str, ...]:
    global _STOPWORDS
    if _STOPWORDS is None:
        from remem.core.redact.gitleaks import TOML_PATH, parse_toml

        spec = next(r for r in parse_toml(TOML_PATH.read_bytes())["rules"] if r["id"] == "generic-api-key")
        _STOPWORDS = tuple(w.lower() for a in spec.get("allowlists", ()) for w in a.get("stopwords", ()))
    return _STOPWORDS


_STOPWORDS: tuple[str, ...] | None = None


def _functions(src: str) -> tuple[list[list[tuple[str, str]]], list[tuple[str, str]]]:
    """(function bodies, the file's top-level tokens: package-level ``var`` declarations)."""
    toks = _tokens(src)
    funcs, top, i = [], [], 0
    while i < len(toks):
        if toks[i][1] == "func":
            j = i
            while j < len(toks) and toks[j][1] != "{":
                j += 1
            depth, k = 0, j
            while k < len(toks):
                if toks[k][1] == "{":
                    depth += 1
                elif toks[k][1] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            funcs.append(toks[j + 1 : k])
            i = k + 1
            continue
        top.append(toks[i])
        i += 1
    return funcs, top


def _rule_id(body: list[tuple[str, str]]) -> str | None:
    for a, b, c in zip(body, body[1:], body[2:]):
        if a[1] == "RuleID" and b[1] == ":" and c[0] == "str":
            return _go_string(c[1])
    return None


def extract(files: dict[str, str], seed: int = 20240501) -> dict[str, Any]:
    """{rule id: {"tp": [{"text", "secret"}], "fp": [text]}} plus counts of what could not be evaluated."""
    cases: dict[str, Any] = {}
    unevaluated = 0
    for name in sorted(files):
        bodies, top = _functions(files[name])
        package = _Func(top, _Gen(random.Random(f"{seed}:{name}")))
        package.run()
        for body in bodies:
            rule_id = _rule_id(body)
            if not rule_id:
                continue
            func = _Func(body, _Gen(random.Random(f"{seed}:{rule_id}")))
            func.vars.update(package.vars)
            res = func.run()
            if "tps" not in res:
                unevaluated += 1
                continue
            entry = cases.setdefault(rule_id, {"tp": [], "fp": []})
            for key, out in (("tps", "tp"), ("fps", "fp")):
                values = res.get(key) or []
                if not isinstance(values, list):
                    values = [values]
                for v in values:
                    if not isinstance(v, Val):
                        unevaluated += 1
                        continue
                    entry[out].append({"text": v.text, "secret": v.secret} if out == "tp" else v.text)
    return {"cases": cases, "unevaluated": unevaluated}


def _read_rules(source: Path, rev: str) -> tuple[dict[str, str], dict[str, str]]:
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        git = ["git", f"--git-dir={source}"]
    elif (source / ".git").exists():
        git = ["git", "-C", str(source)]
    else:
        raise SystemExit(f"{source} is not a gitleaks git checkout")
    commit = subprocess.run(git + ["rev-parse", f"{rev}^{{commit}}"], check=True, capture_output=True,
                            text=True).stdout.strip()
    names = subprocess.run(git + ["ls-tree", "--name-only", f"{commit}:{RULES_DIR}"], check=True,
                           capture_output=True, text=True).stdout.split()
    files = {n: subprocess.run(git + ["show", f"{commit}:{RULES_DIR}/{n}"], check=True, capture_output=True,
                               text=True).stdout for n in names if n.endswith(".go")}
    describe = subprocess.run(git + ["describe", "--tags", commit], capture_output=True, text=True).stdout.strip()
    return files, {"commit": commit, "describe": describe}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m remem.bench.gitleaks_cases", description=__doc__)
    p.add_argument("--from", dest="source", required=True, type=Path, help="gitleaks work tree or git directory")
    p.add_argument("--rev", default="HEAD")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    files, facts = _read_rules(args.source.expanduser().resolve(), args.rev)
    data = extract(files)
    n_tp = sum(len(c["tp"]) for c in data["cases"].values())
    n_fp = sum(len(c["fp"]) for c in data["cases"].values())
    out = {"source": {"project": "gitleaks", "licence": "MIT", "path": RULES_DIR, **facts},
           "rules": len(data["cases"]), "tp": n_tp, "fp": n_fp, "unevaluated": data["unevaluated"],
           "cases": data["cases"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"{args.out}: {len(data['cases'])} rules, {n_tp} true and {n_fp} false positives, "
          f"{data['unevaluated']} cases not evaluated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
