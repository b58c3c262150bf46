"""How remem tells a credential assignment from code that merely mentions one.

``PASSWORD=Tr0ub4dor-3`` is a secret; ``password = getpass()``, ``token: str``, ``API_KEY=${API_KEY}`` and
``<your-key>`` are not. These heuristics (names that mean a credential, values that are placeholders,
references or types) back remem's generic assignment and prose rules, which gitleaks' format-specific
rules do not cover.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .rule import group_value as _value
from .words import hyphenated_words, is_word

# --------------------------------------------------------------------------- #
# Assignment rules: ``NAME = value`` in code, config and shell
# --------------------------------------------------------------------------- #

# Name suffixes that mean "metadata about a secret", not the secret itself.
_META_SUFFIX = re.compile(
    r"(?:_|^)(?:id|ids|type|url|uri|endpoint|path|file|dir|name|prefix|header|field|"
    r"env|var|policy|expiry|expires|expiration|ttl|timeout|length|len|size|count|min|"
    r"max|limit|required|enabled|regex|pattern|hint|label|placeholder|prompt|manager|"
    r"provider|store|validator|source|kind|mode|format|location|reset|changed|strength|"
    r"rotation|version|algorithm|algo|method|scheme|scope|scopes|audience|issuer|"
    r"format|encoding|cache|used|usage|budget|estimate|estimator|counter|tokenizer|"
    r"class|module|handler|getter|setter|field|column|input|form|dialog|error|message|"
    r"msg|text|description|doc|help|length|chars|hash_algorithm|set|is_set|exists|seconds|secs|"
    r"sec|minutes|mins|hours|days|ms|retries|attempts|interval|delay|duration|window|age|"
    r"lifetime|threshold|ratio|rate|percent|bytes|bits|bucket|refresh_interval)$"
)
_META_PREFIX = re.compile(
    r"^(?:max|min|num|n|total|count|is|has|use|show|hide|reset|forgot|check|validate|"
    r"verify|confirm|new|old|get|set|enable|disable|require|allow|public|publishable|"
    r"primary|foreign|sort|partition|cache|idempotency|row|dict|hash|map|lookup|next|bucket|schema|sequence|"
    r"natural|idx|hot|"
    r"prev|last|first|input|output|stop|special|bos|eos|pad|unk|sep|cls|mask)_"
)
_NON_SECRET_NAMES = frozenset(
    {
        "key", "keys", "tokens", "author", "authors", "authority", "auth", "oauth",
        "pass", "passed", "bypass", "compass", "passes", "passthrough", "password_field",
        "surpass", "tokenize", "tokenizer", "tokenized", "keyword", "keywords", "keyboard",
        "keyfile", "keypath", "keystore", "keyring", "keychain", "monkey", "hotkey",
        "turkey", "authenticated", "authentication", "authorized", "authorize",
        "secretary", "passenger", "passport", "passage", "passive", "pwd_dir", "cwd",
        "pwd", "token_type", "sort_key", "primary_key", "foreign_key", "pkey",
    }
)

_PASSWORD_WORDS = re.compile(r"pass(?:word|wd|phrase|code)?|pwd|pw$|^pw_|_pw_")
_NAMED_SECRET_WORDS = (
    r"secret|token|api_?key|apikey|access_?key|private_?key|credential|creds?$|"
    r"(?:^|_)auth(?:_|$)|authorization|(?:signing|encryption|encrypt|master|account|"
    r"app|client|session|webhook|license|hmac|jwt|consumer|admin|service|storage|"
    r"shared|subscription|sas|crypt|cookie|csrf|xsrf|salt|dsn|conn)_?(?:key|secret)|"
    r"(?:^|_)(?:signature|salt|dsn)$|^key_secret"
)
_SECRET_WORDS = re.compile(_NAMED_SECRET_WORDS + r"|_key$")  # in text, any ``*_key = literal`` is one
_NAMED_SECRET = re.compile(_NAMED_SECRET_WORDS)


def _norm_name(name: str) -> str:
    """``X-Api-Key`` / ``db.password`` / ``dbPassword`` -> ``x_api_key`` etc."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip("\"'`"))
    return re.sub(r"[.\-\s]+", "_", name).lower().strip("_")


@lru_cache(maxsize=4096)
def secret_name_kind(name: str) -> str | None:
    """'password' / 'secret' if ``name`` names a credential, else None."""
    n = _norm_name(name)
    if not n or n in _NON_SECRET_NAMES or len(n) > 60:
        return None
    last = n.rsplit(".", 1)[-1]
    if _META_SUFFIX.search(last) or _META_PREFIX.search(last):
        return None
    if _PASSWORD_WORDS.search(last) and not re.search(
        r"bypass|compass|passenger|passport|passage|passive|passthrough|surpass|passed|passes",
        last,
    ):
        return "password"
    if _SECRET_WORDS.search(last) and "tokeniz" not in last:
        return "secret"
    return None


def names_a_credential(name: str) -> bool:
    """Whether a structured field (a metadata key) named ``name`` holds a credential: as :func:`secret_name_kind`
    reads an assignment in text, without its catch-all ``*_key`` (``cache_key``, ``s3_key``, ``sort_key`` name
    ids and paths in data)."""
    kind = secret_name_kind(name)
    return kind == "password" or (kind is not None and bool(_NAMED_SECRET.search(_norm_name(name))))


# Values that are references, placeholders or types rather than secrets.
PLACEHOLDER = re.compile(
    r"""^(?:
        \$|%\(|%s$|\{\{|\{%|\$\{|<|\#\{|@\{|&[A-Za-z_]\w*$|\*{2,}|\*[A-Za-z_]\w*$|
        !(?:vault|secret|Ref|Sub|GetAtt|ImportValue|env|include|ENV)\b|
        (?:process\.env|os\.environ|os\.getenv|getenv|env\(|ENV\[|secrets\.|vault:|
           ssm:|arn:aws:secretsmanager|\{\s*secret|op://|sm://|gcp-secret|keyring|
           ref\+|file:|/run/secrets|/var/run/secrets|\.\./|\./|~/|/etc/|/home/)|
        (?:your|my|enter|insert|replace|put|add)[_\-\s]?(?:your[_\-\s]?)?[a-z_\-\s]*(?:here|key|token|secret|password|pass)$|
        x{3,}|X{3,}|\.{3,}|-{3,}|_{3,}|•+|\[[A-Za-z_\ -]+\]$|.*>$|
        (?:none|null|nil|true|false|undefined|empty|required|optional|todo|tbd|n/a|na|
           changeme|change_me|change-me|redacted|hidden|masked|secret|password|pass|pwd|token|
           string|str|int|bool|bytes|any|secretstr|secretbytes|object|dict|list|
           example|sample|dummy|placeholder|foo|bar|baz|test|demo|default)$
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_TYPE_ANNOTATION = re.compile(
    r"^(?:Optional|List|Dict|Union|Annotated|Literal|Final|ClassVar|SecretStr|SecretBytes|"
    r"str|bytes|int|bool|Any|Callable|Sequence|Mapping|Iterable|tuple|list|dict|set)"
    r"(?:\[|\||$|,)"
)
CODE_REF = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|[()\[\]{}]|^\w+\s*\(")


def _looks_like_prose(v: str) -> bool:
    words = v.split()
    return len(words) >= 3 and sum(w.isalpha() for w in words) >= len(words) - 1


def is_placeholder(v: str) -> bool:
    """``${VAR}``, ``<your-key>``, ``sk-ant-...``, ``None``: documentation, not secrets."""
    return bool(PLACEHOLDER.search(v)) or v.endswith(("...", "\u2026")) or "REDACTED" in v


AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "apikey", "oauth"})


# ``pwd`` is also the shell's working directory (``PWD=/srv/app``, ``OLDPWD``) and ``pass`` Python's keyword and
# a test verdict (``PASS: t/basic.sh``, ``pass=3 fail=0``): as field names they hold a password only when the
# value is no path, number or verdict (see :func:`_short_field_ok`).
_SHORT_FIELDS = frozenset({"pwd", "pass"})
_PATH = re.compile(r"^(?:[/~.\\]|[A-Za-z]:[\\/]|\$)|^[\w.\-]+/[\w.\-/]+$")
_USER_FIELD = re.compile(r"(?i)(?<![\w\-])[\"']?(?:user(?:name)?|login|uid|email|account|db_?user|u)[\"']?[ \t]*[:=]")
_VERDICTS = frozenset({"ok", "yes", "no", "true", "false", "pass", "passed", "fail", "failed", "skip", "skipped",
                       "error", "none", "null"})


def _short_field_ok(m: re.Match[str], name: str, v: str) -> bool:
    """A value of a ``pwd`` / ``pass`` field that is a password: not a path, a count or a verdict; for ``pass``
    also either no plain word (``Tr0ub4dor``, ``swordf1sh``) or next to a user name field (``user=bob&pass=x``,
    ``user: bob`` / ``pass: swordfish``), and never the upper-case ``PASS:`` of a test log."""
    if _PATH.search(v) or v.lower() in _VERDICTS or re.fullmatch(r"[\d.,:/%\-]+", v) or "$" in v:
        return False  # a path, a verdict, a count, code (`$pass = !$pass;`)
    if _norm_name(name).endswith("pwd"):
        return True
    if (name.strip("\"'`").isupper() and m.groupdict().get("sep") == ":") or re.search(r"\s", v):
        return False  # a test log's `PASS:`; text under a "pass" key ('pass': 'The "pass" statement')
    if not re.fullmatch(r"[A-Za-z]+", v):
        return True
    if not is_word(v):  # the dictionary loads only for a `pass` field with a word for a value
        return True
    near = m.string[max(0, m.start() - 120): m.end() + 120]
    return _USER_FIELD.search(near) is not None


def assignment_kind(m: re.Match[str], quoted_only: bool = False) -> str | None:
    """Kind for ``name <sep> value`` if it assigns a credential literal, not code."""
    name = m.group("name")
    short = _norm_name(name) in _SHORT_FIELDS or _norm_name(name).endswith("pwd")
    kind = "password" if short else secret_name_kind(name)
    if kind is None:
        return None
    quoted = quoted_only or m.group("uv") is None
    v = _value(m, ("dq", "sq", "bq", "uv")).strip()
    if short and not _short_field_ok(m, name, v):
        return None
    if len(v) < 3 or is_placeholder(v) or _TYPE_ANNOTATION.search(v):
        return None
    if v.lower() in _norm_name(m.group("name")) or v.lower() in AUTH_SCHEMES:
        return None  # token=token, password=pass, ("Authorization", "Bearer " + token)
    if quoted:
        ok = not _looks_like_prose(v) and "{" not in v
    else:
        ok = _unquoted_ok(m, v)
    return kind if ok else None


def prose_kind(m: re.Match[str]) -> str | None:
    """``my password is hunter2``: value must mix letters with digits/symbols."""
    kind = secret_name_kind(m.group("name"))
    v = m.group("v")
    if kind is None or is_placeholder(v) or CODE_REF.search(v):
        return None
    if "-" in v and hyphenated_words(v):  # "case-sensitive", "auto-generated": two words, not a secret
        return None
    has_alpha = any(c.isalpha() for c in v)
    has_other = any(not c.isalpha() for c in v)
    return kind if has_alpha and has_other and not re.fullmatch(r"[\d.,:/\-]+[a-z]{0,3}", v) else None


def _unquoted_ok(m: re.Match[str], v: str) -> bool:
    """Unquoted values: reject identifiers/calls that are code, keep env/YAML values."""
    if CODE_REF.search(v):
        return False
    sep = m.group("sep")
    spaced = bool(m.group("sp1") or m.group("sp2"))
    after = m.string[m.end() : m.end() + 2].lstrip(" ")
    bare_ident = re.fullmatch(r"[A-Za-z_]\w*", v) is not None
    if bare_ident and not any(c.isdigit() for c in v):
        # `password = hunter` / f(token=tok) is a variable; `PASSWORD=hunter` is not.
        if sep != ":" and (spaced or after[:1] in (",", ")")):
            return False
        if sep == ":" and (after[:1] in ("=", ",", ")", "}") or v[0].isupper() and not v.isupper()):
            return False  # `password: SecretStr = ...`, `def f(token: Token)`, {"k": var}
        if sep == ":" and v.isalpha() and (not _at_line_start(m) or _words_follow(m)):
            return False  # prose: "password: see vault", "Password: see the onboarding doc"
    if sep == ":" and v.endswith(":"):
        return False
    return True


def _words_follow(m: re.Match[str]) -> bool:
    """More words after the value on its line ("Password: ask Dana, she has it"): a sentence, not a YAML value."""
    return re.match(r"[ \t]*,?[ \t]+[A-Za-z]{2,}", m.string[m.end():m.end() + 40]) is not None


def _at_line_start(m: re.Match[str]) -> bool:
    """True for YAML/header style keys: only indentation, list dash or brace before."""
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    return not m.string[line_start : m.start()].strip(" \t-{,\"'")


_NAME = r"(?P<name>[A-Za-z_][\w.\-]{0,60})"
# An unquoted value runs to whitespace or a quote. `, ; & |` inside it are its own (`Tr0ub4dor&3`, `p@ss,word9`)
# unless they end it: at the end of the text or before whitespace, another separator or the next `name=`
# (`?token=abc&user=bob`, `Server=db;Password=x;User=bob`, `f(password=x, user=y)`).
_UV_END = r"[,;&|](?:$|[\s,;&|<>]|[A-Za-z_][\w .\-]{0,60}=)"
_VALUE = (
    r"(?:\"(?P<dq>[^\"\n]{1,500})\"|'(?P<sq>[^'\n]{1,500})'|`(?P<bq>[^`\n]{1,500})`"
    r"|(?P<uv>[^\s\"'`,;&<>|](?:(?!" + _UV_END + r")[^\s\"'`<>]){0,499}))"
)
ASSIGNMENT = (
    r"(?<![\w.\-])[\"']?" + _NAME + r"[\"']?(?P<sp1>[ \t]*)(?P<sep>:=|=>|:|(?<![=!<>])=(?!=))"
    r"(?P<sp2>[ \t]*)" + _VALUE
)
VALUE_GROUPS = ("dq", "sq", "bq", "uv")

# `- name: DB_PASSWORD\n  value: "x"` (Kubernetes / GitHub Actions env lists)
NAME_VALUE_PAIR = (
    r"(?<![\w\-])name:\s*[\"']?(?P<name>[A-Za-z_][\w.\-]{0,60})[\"']?[ \t]*\r?\n[ \t]*-?[ \t]*value:[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,500})\"|'(?P<sq>[^'\n]{1,500})'|(?P<uv>[^\s\"'#][^\s\"']{0,500}))"
)
# define('DB_PASSWORD', 'x') / setdefault("API_KEY", "x") / ("token", "x")
QUOTED_PAIR = (
    r"(?i:define|setdefault|setenv|putenv|set|put|setitem|setproperty|store|save|add_secret)"
    r"[ \t]*\([ \t]*[\"'](?P<name>[A-Za-z_][\w.\-]{0,60})[\"'][ \t]*,[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,500})\"|'(?P<sq>[^'\n]{1,500})')"
)
# ~/.pgpass: hostname:port:database:username:password
PGPASS = r"(?m)^[A-Za-z0-9.\-*]+:(?:\d{2,5}|\*):[^:\s]+:[^:\s]+:(?P<v>\S+)$"
# `the staging db password is Tr0ub4dor-3` in chat and tickets
PROSE_IS = (
    r"(?i)(?<![\w\-])(?P<name>(?:api|access|secret|private|signing)[ _\-]?key|(?:[\w\-]{0,40}[_\-])?"
    r"(?:pass(?:word|wd|phrase|code)?|pwd|secret|token)s?)"
    r"[ \t]+(?:is|was|is now|are|=|->|=>|:)[ \t]+[\"'`]?(?P<v>[^\s\"'`]{4,199}[^\s\"'`.,;:!?)])"
)

