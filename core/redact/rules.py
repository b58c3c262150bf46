"""Rule table for :mod:`remem.core.redact.redactor`.

Rules are data so that they can be reviewed, extended and tested as a table:
every rule carries a positive example (must be redacted to its kind) and a
negative example (must pass unchanged). All examples are *fake* secrets of the
right shape, built programmatically so nothing here resembles a live key.

Order matters: earlier rules win when matches overlap, so specific provider
formats come first and generic "assignment"/"header" rules last.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from stdnum import iban as _iban
from stdnum import luhn as _luhn
from stdnum.es import dni as _es_dni
from stdnum.in_ import aadhaar as _aadhaar
from stdnum.it import codicefiscale as _it_cf

# A validator accepts (True / a more specific kind string) or rejects (False/None).
Validator = Callable[[re.Match[str]], "bool | str | None"]


@dataclass(frozen=True)
class Rule:
    """One detector: ``regex`` finds candidates, ``group`` is the part replaced.

    ``group`` may be a tuple of group names/numbers: the first that participated
    in the match is replaced (used for quoted vs. unquoted values).
    ``hints`` are lowercase substrings; if none occurs in the text the regex is
    skipped entirely (this is what keeps a typical prompt well under 1 ms).
    ``anchor`` (optional) is a tuple of lowercase literals (found with
    ``str.find``, the fastest scan CPython has) or a regex run on the lowercased
    text: the rule is then only tried with ``regex.match`` at the start of each
    token containing an anchor hit, instead of at every position of the text.
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
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)
    compiled_anchor: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    compiled_hints: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.regex, self.flags))
        anchor = re.compile(self.anchor) if isinstance(self.anchor, str) else None
        object.__setattr__(self, "compiled_anchor", anchor)
        hints = re.compile("|".join(map(re.escape, self.hints))) if self.hints else None
        object.__setattr__(self, "compiled_hints", hints)

    def applies(self, lowered: str) -> bool:
        """Cheap prefilter on the lowercased text (one C-level scan)."""
        return self.compiled_hints is None or self.compiled_hints.search(lowered) is not None

    def span(self, m: re.Match[str]) -> tuple[int, int] | None:
        """Span of the part to replace, or None when no listed group matched."""
        groups = self.group if isinstance(self.group, tuple) else (self.group,)
        for g in groups:
            if m.group(g) is not None:
                return m.span(g)
        return None


# --------------------------------------------------------------------------- #
# Shared helpers (also used by redact.py for the entropy detector)
# --------------------------------------------------------------------------- #


def shannon_entropy(s: str) -> float:
    """Bits per character; random base62 of length 20+ scores ~4, words ~3."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _classes(s: str) -> int:
    """How many of lower/upper/digit character classes occur in ``s``."""
    return sum(
        (
            any(c.islower() for c in s),
            any(c.isupper() for c in s),
            any(c.isdigit() for c in s),
        )
    )


def _value(m: re.Match[str], rule_group: int | str | tuple[int | str, ...]) -> str:
    groups = rule_group if isinstance(rule_group, tuple) else (rule_group,)
    for g in groups:
        v = m.group(g)
        if v is not None:
            return v
    return ""


def on_value(check: Callable[[str], bool], group: int | str = 0) -> Validator:
    """Adapt a plain ``str -> bool`` check into a match validator."""
    return lambda m: check(m.group(group) or "")


def _mixed(min_classes: int = 2) -> Callable[[str], bool]:
    return lambda v: _classes(v) >= min_classes


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
    r"primary|foreign|sort|partition|cache|idempotency|row|dict|hash|map|lookup|next|"
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
_SECRET_WORDS = re.compile(
    r"secret|token|api_?key|apikey|access_?key|private_?key|credential|creds?$|"
    r"(?:^|_)auth(?:_|$)|authorization|(?:signing|encryption|encrypt|master|account|"
    r"app|client|session|webhook|license|hmac|jwt|consumer|admin|service|storage|"
    r"shared|subscription|sas|crypt|cookie|csrf|xsrf|salt|dsn|conn)_?(?:key|secret)|"
    r"(?:^|_)(?:signature|salt|dsn)$|_key$|^key_secret"
)


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


# Values that are references, placeholders or types rather than secrets.
_PLACEHOLDER = re.compile(
    r"""^(?:
        \$|%\(|%s$|\{\{|\{%|\$\{|<|\#\{|@\{|&[A-Za-z_]\w*$|\*{2,}|\*[A-Za-z_]\w*$|
        !(?:vault|secret|Ref|Sub|GetAtt|ImportValue|env|include|ENV)\b|
        (?:process\.env|os\.environ|os\.getenv|getenv|env\(|ENV\[|secrets\.|vault:|
           ssm:|arn:aws:secretsmanager|\{\s*secret|op://|sm://|gcp-secret|keyring|
           ref\+|file:|/run/secrets|/var/run/secrets|\.\./|\./|~/|/etc/|/home/)|
        (?:your|my|enter|insert|replace|put|add)[_\-\s]?(?:your[_\-\s]?)?[a-z_\-\s]*(?:here|key|token|secret|password|pass)|
        x{3,}|X{3,}|\.{3,}|-{3,}|_{3,}|•+|
        (?:none|null|nil|true|false|undefined|empty|required|optional|todo|tbd|n/a|na|
           changeme|change_me|change-me|redacted|hidden|masked|secret|password|token|
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
_CODE_REF = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|[()\[\]{}]|^\w+\s*\(")


def _looks_like_prose(v: str) -> bool:
    words = v.split()
    return len(words) >= 3 and sum(w.isalpha() for w in words) >= len(words) - 1


def is_placeholder(v: str) -> bool:
    """``${VAR}``, ``<your-key>``, ``sk-ant-...``, ``None``: documentation, not secrets."""
    return bool(_PLACEHOLDER.search(v)) or v.endswith(("...", "\u2026")) or "REDACTED" in v


def _assignment_kind(m: re.Match[str], quoted_only: bool = False) -> str | None:
    """Kind for ``name <sep> value`` if it assigns a credential literal, not code."""
    kind = secret_name_kind(m.group("name"))
    if kind is None:
        return None
    quoted = quoted_only or m.group("uv") is None
    v = _value(m, ("dq", "sq", "bq", "uv")).strip()
    if len(v) < 3 or is_placeholder(v) or _TYPE_ANNOTATION.search(v):
        return None
    if v.lower() in _norm_name(m.group("name")):
        return None  # token=token, password=pass
    if quoted:
        ok = not _looks_like_prose(v) and "{" not in v
    else:
        ok = _unquoted_ok(m, v)
    return kind if ok else None


def _prose_kind(m: re.Match[str]) -> str | None:
    """``my password is hunter2``: value must mix letters with digits/symbols."""
    kind = secret_name_kind(m.group("name"))
    v = m.group("v")
    if kind is None or is_placeholder(v) or _CODE_REF.search(v):
        return None
    has_alpha = any(c.isalpha() for c in v)
    has_other = any(not c.isalpha() for c in v)
    return kind if has_alpha and has_other and not re.fullmatch(r"[\d.,:/\-]+[a-z]{0,3}", v) else None


def _unquoted_ok(m: re.Match[str], v: str) -> bool:
    """Unquoted values: reject identifiers/calls that are code, keep env/YAML values."""
    if _CODE_REF.search(v):
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
        if sep == ":" and not _at_line_start(m) and v.isalpha():
            return False  # prose: "password: see vault"
    if sep == ":" and v.endswith(":"):
        return False
    return True


def _at_line_start(m: re.Match[str]) -> bool:
    """True for YAML/header style keys: only indentation, list dash or brace before."""
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    return not m.string[line_start : m.start()].strip(" \t-{,\"'")


_NAME = r"(?P<name>[A-Za-z_][\w.\-]{0,60})"
_VALUE = (
    r"(?:\"(?P<dq>[^\"\n]{1,500})\"|'(?P<sq>[^'\n]{1,500})'|`(?P<bq>[^`\n]{1,500})`"
    r"|(?P<uv>[^\s\"'`,;&<>|]{1,500}))"
)
_ASSIGNMENT = (
    r"(?<![\w.\-])[\"']?" + _NAME + r"[\"']?(?P<sp1>[ \t]*)(?P<sep>:=|=>|:|(?<![=!<>])=(?!=))"
    r"(?P<sp2>[ \t]*)" + _VALUE
)
_VALUE_GROUPS = ("dq", "sq", "bq", "uv")

# `- name: DB_PASSWORD\n  value: "x"` (Kubernetes / GitHub Actions env lists)
_NAME_VALUE_PAIR = (
    r"(?<![\w\-])name:\s*[\"']?(?P<name>[A-Za-z_][\w.\-]{0,60})[\"']?[ \t]*\r?\n[ \t]*-?[ \t]*value:[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,500})\"|'(?P<sq>[^'\n]{1,500})'|(?P<uv>[^\s\"'#][^\s\"']{0,500}))"
)
# define('DB_PASSWORD', 'x') / setdefault("API_KEY", "x") / ("token", "x")
_QUOTED_PAIR = (
    r"(?i:define|setdefault|setenv|putenv|set|put|setitem|setproperty|store|save|add_secret)"
    r"[ \t]*\([ \t]*[\"'](?P<name>[A-Za-z_][\w.\-]{0,60})[\"'][ \t]*,[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,500})\"|'(?P<sq>[^'\n]{1,500})')"
)
# ~/.pgpass: hostname:port:database:username:password
_PGPASS = r"(?m)^[A-Za-z0-9.\-*]+:(?:\d{2,5}|\*):[^:\s]+:[^:\s]+:(?P<v>\S+)$"
# `the staging db password is Tr0ub4dor-3` in chat and tickets
_PROSE_IS = (
    r"(?i)(?<![\w\-])(?P<name>(?:api|access|secret|private|signing)[ _\-]?key|(?:[\w\-]{0,40}[_\-])?"
    r"(?:pass(?:word|wd|phrase|code)?|pwd|secret|token)s?)"
    r"[ \t]+(?:is|was|is now|are|=|->|=>|:)[ \t]+[\"'`]?(?P<v>[^\s\"'`]{4,199}[^\s\"'`.,;:!?)])"
)


# --------------------------------------------------------------------------- #
# Other validators
# --------------------------------------------------------------------------- #


def _basic_ok(m: re.Match[str]) -> bool:
    """Basic auth value must decode to ``user:pass``."""
    try:
        raw = base64.b64decode(m.group("v") + "==", validate=False).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    return ":" in raw and raw.isprintable()


def _bearer_ok(m: re.Match[str]) -> bool:
    v = m.group("v")
    return not _PLACEHOLDER.search(v) and any(c.isdigit() for c in v) and _classes(v) >= 2


def _url_password_ok(m: re.Match[str]) -> bool:
    v = m.group("pw")
    return not _PLACEHOLDER.search(v) and v not in ("", "*", "password") and "{" not in v


def _flag_value_ok(v: str) -> bool:
    """``--password X``: X must be a literal, not a variable, file or placeholder."""
    return (
        len(v) >= 3
        and not _PLACEHOLDER.search(v)
        and not re.search(r"\.(?:txt|json|pem|key|env|yaml|yml)$|^/|\{", v)
    )


def _card_ok(m: re.Match[str]) -> bool:
    """Luhn + known IIN prefix + consistent separators (rejects most random ids)."""
    raw = m.group(0)
    digits = re.sub(r"\D", "", raw)
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 2:
        return False
    seps = set(re.findall(r"\D", raw))
    if len(seps) > 1:
        return False
    if not re.match(r"4|5[1-5]|2[2-7]|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9])|35|62", digits):
        return False
    return _luhn.is_valid(digits)


def _iban_ok(m: re.Match[str]) -> bool:
    return _iban.is_valid(m.group(0))


def _phone_ok(m: re.Match[str]) -> bool:
    raw = m.group(0)
    digits = re.sub(r"\D", "", raw)
    if not 8 <= len(digits) <= 15 or len(set(digits)) < 3:
        return False
    if re.fullmatch(r"(?:19|20)\d\d[-./]\d\d[-./]\d\d", raw.strip("+ ")):
        return False  # a date
    return True


def _email_ok(m: re.Match[str]) -> bool:
    local, _, domain = m.group(0).rpartition("@")
    tld = domain.rsplit(".", 1)[-1].lower()
    if tld in {"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "css", "py", "md", "txt"}:
        return False
    return local.lower() not in {"git"} and not domain.lower().startswith("example.")


def _dni_ok(m: re.Match[str]) -> bool:
    return _es_dni.is_valid(m.group(0))


def _cf_ok(m: re.Match[str]) -> bool:
    return _it_cf.is_valid(m.group(0))


def _aadhaar_ok(m: re.Match[str]) -> bool:
    return _aadhaar.is_valid(m.group(0))


def _ssn_ok(m: re.Match[str]) -> bool:
    area, grp, serial = re.split(r"[- ]", m.group(0))
    return area not in ("000", "666") and area[0] != "9" and grp != "00" and serial != "0000"


# --------------------------------------------------------------------------- #
# Fake example builders (right shape, obviously not live)
# --------------------------------------------------------------------------- #


def _fake(alphabet: str, n: int, step: int = 7) -> str:
    """Deterministic pseudo-random-looking string, no RNG needed."""
    return "".join(alphabet[(i * step + i * i) % len(alphabet)] for i in range(n))


_B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789abcdef"
_B64URL = _B62 + "-_"

FAKE_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UifQ."
    + _fake(_B64URL, 43)
)
FAKE_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join("MIIE" + _fake(_B62 + "+/", 60, 3 + i) for i in range(3))
    + "\n-----END RSA PRIVATE KEY-----"
)
FAKE_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS documentation example

# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #

# Anchors run on the ASCII-lowercased text, so they are written in lowercase.
_NAME_ANCHOR = ("pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "salt", "dsn", "cookie", "signature")
_PROSE_ANCHOR = ("pass", "pwd", "secret", "token", "api", "access", "private", "signing")
_NAME_HINTS = ("pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "sig", "salt", "dsn", "cookie")
_B = r"(?<![A-Za-z0-9_\-])"  # token start boundary
_E = r"(?![A-Za-z0-9_\-])"  # token end boundary

SECRET_RULES: tuple[Rule, ...] = (
    # ---- key material / structured tokens ---------------------------------
    Rule(
        "gcp_service_account_key",
        r"\"private_key\"\s*:\s*\"(?P<v>-----BEGIN[^\"]{20,}?)\"",
        "v",
        positive='{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE'
        + _fake(_B62, 64)
        + '\\n-----END PRIVATE KEY-----\\n"}',
        negative='{"type": "service_account", "private_key_id_field": "see docs"}',
        hints=('"private_key"',),
    ),
    Rule(
        "private_key",
        # header lines (Proc-Type:, DEK-Info:), base64 body, optional END: no
        # lazy scan for END, so a truncated key costs linear time
        r"-----BEGIN[ A-Z0-9]{0,40} PRIVATE KEY(?: BLOCK)?-----(?:\s|\\n)*"
        r"(?:[A-Za-z][A-Za-z\-]{0,30}:[^\n\\]{0,200}(?:\r?\n|\\n))*"
        r"[A-Za-z0-9+/=\s\\]{0,20000}(?:-----END[ A-Z0-9]{0,40} PRIVATE KEY(?: BLOCK)?-----)?",
        positive="key.pem:\n" + FAKE_PEM + "\n",
        negative="Paste the -----BEGIN PUBLIC KEY----- block from the docs.",
        hints=("private key",),
    ),
    Rule(
        "jwt",
        _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{0,1000}" + _E,
        positive="id_token: " + FAKE_JWT,
        negative="The token starts with eyJ because base64 of a JSON brace is eyJ.",
        hints=("eyj",),
    ),
    # ---- LLM providers ----------------------------------------------------
    Rule(
        "anthropic_api_key",
        _B + r"sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_\-]{20,300}" + _E,
        positive="ANTHROPIC_API_KEY=sk-ant-api03-" + _fake(_B64URL, 93) + "AA",
        negative="Anthropic keys start with sk-ant- followed by a version.",
        hints=("sk-ant-",),
    ),
    Rule(
        "openai_api_key",
        _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,300}" + _E,
        validator=on_value(lambda v: _classes(v) == 3),
        positive="client = OpenAI(api_key='sk-proj-" + _fake(_B64URL, 120) + "')",
        negative="pip install sk-learn-style-packages-are-not-keys",
        hints=("sk-",),
    ),
    Rule(
        "huggingface_token",
        _B + r"hf_[A-Za-z0-9]{30,40}" + _E,
        validator=on_value(_mixed(3)),
        positive="HF_TOKEN=hf_" + _fake(_B62, 34),
        negative="from huggingface_hub import hf_hub_download",
        hints=("hf_",),
    ),
    Rule(
        "groq_api_key",
        _B + r"gsk_[A-Za-z0-9]{48,56}" + _E,
        positive="GROQ key gsk_" + _fake(_B62, 52),
        negative="gsk_ prefix is documented",
        hints=("gsk_",),
    ),
    Rule(
        "replicate_token",
        _B + r"r8_[A-Za-z0-9]{37}" + _E,
        validator=on_value(_mixed(3)),
        positive="export REPLICATE_API_TOKEN=r8_" + _fake(_B62, 37),
        negative="r8_ is the replicate prefix",
        hints=("r8_",),
    ),
    Rule(
        "xai_api_key",
        _B + r"xai-[A-Za-z0-9]{70,90}" + _E,
        positive="XAI_API_KEY=xai-" + _fake(_B62, 80),
        negative="xai-sdk is a package",
        hints=("xai-",),
    ),
    # ---- cloud ---------------------------------------------------------------
    Rule(
        "aws_access_key_id",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}(?![A-Z0-9])",
        positive="aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        negative="AKIA is the prefix of long-term access key ids",
        hints=("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
    ),
    Rule(
        "aws_secret_access_key",
        r"(?i:aws|amazon)[\w\-. ]{0,30}?(?i:secret|sk)[\w\-. ]{0,20}?[\"']?\s*(?:[:=]|=>)\s*[\"']?"
        r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        "v",
        positive="aws_secret_access_key = " + FAKE_AWS_SECRET,
        negative="aws_secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']",
        hints=("aws", "amazon"),
    ),
    Rule(
        "gcp_api_key",
        _B + r"AIza[0-9A-Za-z_\-]{35}" + _E,
        positive="const key = 'AIza" + _fake(_B64URL, 35) + "';",
        negative="Browser keys start with AIza.",
        hints=("aiza",),
    ),
    Rule(
        "google_oauth_token",
        _B + r"ya29\.[0-9A-Za-z_\-]{20,2000}" + _E,
        positive="access_token ya29." + _fake(_B64URL, 80),
        negative="ya29 is a prefix",
        hints=("ya29.",),
    ),
    Rule(
        "google_refresh_token",
        r"(?<![\w/])1//0[0-9A-Za-z_\-]{40,200}" + _E,
        positive="refresh: 1//0" + _fake(_B64URL, 60),
        negative="ratio 1//0 is undefined",
        hints=("1//0",),
    ),
    Rule(
        "azure_storage_key",
        r"(?i:AccountKey|SharedAccessKey|SharedKey)\s*=\s*(?P<v>[A-Za-z0-9+/]{30,120}={0,2})",
        "v",
        positive="DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        + _fake(_B62 + "+/", 86)
        + "==;EndpointSuffix=core.windows.net",
        negative="Set AccountKey in the connection string.",
        hints=("accountkey", "sharedaccesskey", "sharedkey"),
    ),
    Rule(
        "azure_sas_token",
        r"[?&]sig=(?P<v>[A-Za-z0-9%+/]{30,200}(?:%3D|=){0,2})",
        "v",
        positive="https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig="
        + _fake(_B62, 43)
        + "%3D",
        negative="https://example.com/?sig=short",
        hints=("sig=",),
    ),
    Rule(
        "digitalocean_token",
        _B + r"do[por]_v1_[a-f0-9]{64}" + _E,
        positive="DIGITALOCEAN_TOKEN=dop_v1_" + _fake(_HEX, 64),
        negative="dop_v1_ tokens are 64 hex chars",
        hints=("_v1_",),
    ),
    Rule(
        "databricks_token",
        _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E,
        positive="DATABRICKS_TOKEN=dapi" + _fake(_HEX, 32),
        negative="dapi prefix",
        hints=("dapi",),
    ),
    Rule(
        "hashicorp_vault_token",
        _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,200}" + _E,
        positive="VAULT_TOKEN=hvs." + _fake(_B64URL, 90),
        negative="hvs.example is short",
        hints=("hvs.", "hvb.", "hvr."),
    ),
    Rule(
        "doppler_token",
        _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E,
        positive="DOPPLER_TOKEN=dp.st." + _fake(_B62, 43),
        negative="dp.st. prefix",
        hints=("dp.",),
    ),
    # ---- code hosting / CI / package registries --------------------------
    Rule(
        "github_token",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})" + _E,
        positive="git clone https://ghp_" + "A1b2" * 9 + "@github.com/acme/repo.git",
        negative="ghp_ tokens are classic personal access tokens",
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule(
        "gitlab_token",
        _B + r"gl(?:pat|ptt|rt|dt|cbt|oas|soat|ft|imt|agent|ft)-[A-Za-z0-9_\-]{20,64}" + _E,
        positive="PRIVATE-TOKEN: glpat-" + _fake(_B64URL, 20),
        negative="glpat- is the prefix",
        hints=("glpat-", "glptt-", "glrt-", "gldt-", "glcbt-", "gloas-", "glsoat-", "glft-", "glimt-", "glagent-"),
    ),
    Rule(
        "npm_token",
        _B + r"npm_[A-Za-z0-9]{36}" + _E,
        positive="//registry.npmjs.org/:_authToken=npm_" + _fake(_B62, 36),
        negative="run npm_config_cache=/tmp npm ci",
        hints=("npm_",),
    ),
    Rule(
        "pypi_token",
        _B + r"pypi-AgE[A-Za-z0-9_\-]{50,300}" + _E,
        positive="password = pypi-AgEIcHlwaS5vcmc" + _fake(_B64URL, 70),
        negative="pypi-AgE is the macaroon prefix",
        hints=("pypi-age",),
    ),
    Rule(
        "atlassian_token",
        _B + r"ATATT3[A-Za-z0-9_\-=]{60,300}" + _E,
        positive="JIRA_TOKEN=ATATT3xFfGF0" + _fake(_B64URL, 180),
        negative="ATATT3 prefix",
        hints=("atatt3",),
    ),
    Rule(
        "linear_api_key",
        _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _E,
        positive="LINEAR_API_KEY=lin_api_" + _fake(_B62, 40),
        negative="lin_api_ prefix",
        hints=("lin_api_", "lin_oauth_"),
    ),
    Rule(
        "postman_api_key",
        _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E,
        positive="key PMAK-" + _fake(_HEX, 24) + "-" + _fake(_HEX, 34, 5),
        negative="PMAK- prefix",
        hints=("pmak-",),
    ),
    Rule(
        "age_secret_key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        positive="# AGE-SECRET-KEY-1" + _fake("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        negative="AGE-SECRET-KEY-1 is the bech32 prefix",
        hints=("age-secret-key-",),
    ),
    # ---- messaging / SaaS ------------------------------------------------------
    Rule(
        "slack_token",
        _B + r"(?:xox[abposre]-[A-Za-z0-9\-]{10,250}|xapp-\d-[A-Za-z0-9\-]{10,250})" + _E,
        validator=on_value(lambda v: sum(c.isdigit() for c in v) >= 4),
        positive="SLACK_BOT_TOKEN=xoxb-" + "1234567890-" + "9876543210-" + _fake(_B62, 24),
        negative="xoxb-tokens-are-for-bots",
        hints=("xox", "xapp-"),
    ),
    Rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/\-]{20,200})",
        "v",
        positive="url: https://hooks.slack.com/services/T0" + _fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 8)
        + "/B0" + _fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 8, 3) + "/" + _fake(_B62, 24),
        negative="See https://hooks.slack.com/ for docs",
        hints=("hooks.slack.com",),
    ),
    Rule(
        "discord_webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/(?P<v>[A-Za-z0-9_\-]{30,100})",
        "v",
        positive="https://discord.com/api/webhooks/123456789012345678/" + _fake(_B64URL, 68),
        negative="https://discord.com/api/webhooks/ docs",
        hints=("discord",),
    ),
    Rule(
        "discord_bot_token",
        _B + r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}" + _E,
        validator=on_value(lambda v: _classes(v) == 3),
        positive="DISCORD_TOKEN=MTE" + _fake(_B62, 23) + "." + _fake(_B64URL, 6, 3) + "." + _fake(_B64URL, 38, 5),
        negative="Module.function.attribute_name_that_is_long_enough_here",
        hints=(".",),
        anchor=r"\.[a-z0-9_\-]{6}\.",
    ),
    Rule(
        "telegram_bot_token",
        r"(?<![\d:])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E,
        positive="https://api.telegram.org/bot1234567890:AA" + _fake(_B64URL, 33) + "/getMe",
        negative="at 12:30 we met",
        hints=(":aa",),
    ),
    Rule(
        "stripe_key",
        _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,250}" + _E,
        positive="stripe.api_key = 'sk_live_" + _fake(_B62, 40) + "'",
        negative="Use sk_test_ keys in staging.",
        hints=("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    ),
    Rule(
        "stripe_webhook_secret",
        _B + r"whsec_[A-Za-z0-9+/]{24,64}" + _E,
        positive="STRIPE_WEBHOOK_SECRET=whsec_" + _fake(_B62, 32),
        negative="whsec_ prefix",
        hints=("whsec_",),
    ),
    Rule(
        "twilio_api_key",
        r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])",
        positive="TWILIO_API_KEY=SK" + _fake(_HEX, 32),
        negative="SKU12345 in stock",
        hints=("sk",),
    ),
    Rule(
        "twilio_account_sid",
        r"(?i:twilio|account_?sid)[^\n]{0,40}?(?<![A-Za-z0-9])(?P<v>AC[0-9a-f]{32})(?![A-Za-z0-9])",
        "v",
        positive="TWILIO_ACCOUNT_SID=AC" + _fake(_HEX, 32),
        negative="AC" + _fake(_HEX, 32) + " appears without context",
        hints=("twilio", "sid"),
    ),
    Rule(
        "sendgrid_api_key",
        _B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{40,50}" + _E,
        positive="SENDGRID_API_KEY=SG." + _fake(_B64URL, 22) + "." + _fake(_B64URL, 43, 5),
        negative="SG.1 is a version label",
        hints=("sg.",),
    ),
    Rule(
        "mailgun_api_key",
        _B + r"key-[0-9a-f]{32}" + _E,
        positive="MAILGUN_API_KEY=key-" + _fake(_HEX, 32),
        negative="key-value store",
        hints=("key-",),
    ),
    Rule(
        "mailgun_api_key",
        r"(?i:mailgun)[^\n]{0,60}?" + _B + r"(?P<v>[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})" + _E,
        "v",
        positive="mailgun: " + _fake(_HEX, 32) + "-" + _fake(_HEX, 8, 3) + "-" + _fake(_HEX, 8, 5),
        negative="mailgun domain mg.acme.io",
        hints=("mailgun",),
    ),
    Rule(
        "shopify_token",
        _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E,
        positive="X-Shopify-Access-Token: shpat_" + _fake(_HEX, 32),
        negative="shpat_ prefix",
        hints=("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    Rule(
        "notion_token",
        _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,50})" + _E,
        validator=on_value(_mixed(3)),
        positive="NOTION_TOKEN=ntn_" + _fake(_B62, 46),
        negative="secret_sauce_recipe",
        hints=("secret_", "ntn_"),
    ),
    Rule(
        "sentry_auth_token",
        _B + r"sntry[su]_[A-Za-z0-9+/=_\-]{40,200}" + _E,
        positive="SENTRY_AUTH_TOKEN=sntrys_" + _fake(_B62, 60),
        negative="sntrys_ prefix",
        hints=("sntr",),
    ),
    Rule(
        "grafana_token",
        _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})" + _E,
        positive="GRAFANA_TOKEN=glsa_" + _fake(_B62, 32) + "_" + _fake(_HEX, 8),
        negative="glsa_ prefix",
        hints=("glsa_", "glc_"),
    ),
    # ---- credentials embedded in URLs, headers, command lines ------------
    Rule(
        "url_password",
        r"(?i)\b[a-z][a-z0-9+.\-]{1,30}://(?P<user>[^\s:/@'\"<>]{0,200}):(?P<pw>[^\s@/'\"<>]{1,200})@"
        r"(?=[A-Za-z0-9\[\-_.]+)",
        "pw",
        validator=_url_password_ok,
        positive="DATABASE_URL=postgres://app:" + "Tr0ub4dor" + "@db.internal:5432/app",
        negative="postgres://app@db.internal:5432/app (password from PGPASSFILE)",
        hints=("://",),
        anchor=("://",),
    ),
    Rule(
        "basic_auth",
        r"(?i)\bbasic\s+(?P<v>[A-Za-z0-9+/]{8,500}={0,2})(?![A-Za-z0-9+/=])",
        "v",
        validator=_basic_ok,
        positive="Authorization: Basic " + base64.b64encode(b"admin:" + b"s3cr3t-pass").decode(),
        negative="Basic authentication sends credentials in every request.",
        hints=("basic",),
        anchor=("basic",),
    ),
    Rule(
        "bearer_token",
        r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9\-._~+/]{12,2000}=*)(?![A-Za-z0-9\-._~+/=])",
        "v",
        validator=_bearer_ok,
        positive="curl -H 'Authorization: Bearer " + _fake(_B62, 40) + "' https://api.acme.io",
        negative="The bearer token must be sent in the Authorization header.",
        hints=("bearer",),
        anchor=("bearer",),
    ),
    Rule(
        "authorization",
        r"(?i)\b(?:authorization|x-auth-token|x-access-token|private-token)\s*[:=]\s*[\"']?"
        r"(?!bearer\b|basic\b)(?:token\s+)?(?P<v>[A-Za-z0-9\-._~+/]{16,2000}=*)",
        "v",
        validator=on_value(lambda v: _classes(v) >= 2 and any(c.isdigit() for c in v), "v"),
        positive="Authorization: token " + _fake(_B62, 40),
        negative="Authorization: Bearer <token>",
        hints=("authorization", "x-auth-token", "x-access-token", "private-token"),
        anchor=("authorization", "x-auth-token", "x-access-token", "private-token"),
    ),
    Rule(
        "password",
        r"(?i)(?<![\w\-])--?(?:password|passwd|pass|db-password|admin-password)(?:\s+|=)"
        r"(?:\"(?P<dq>[^\"\n]{1,300})\"|'(?P<sq>[^'\n]{1,300})'|(?P<uv>[^\s\"'$<\-][^\s\"']{0,300}))",
        ("dq", "sq", "uv"),
        validator=lambda m: _flag_value_ok(_value(m, ("dq", "sq", "uv"))),
        positive="mysql --host db --user root --password 'Sup3r-S3cret!' app",
        negative="docker login --password-stdin < token.txt",
        hints=("-pass",),
        anchor=("-pass", "-db-pass", "-admin-pass"),
    ),
    Rule(
        "secret",
        r"(?i)(?<![\w\-])--(?:token|api-key|apikey|secret|client-secret|auth-token|access-token|"
        r"secret-key|access-key|private-key|github-token|hf-token)(?:\s+|=)"
        r"(?:\"(?P<dq>[^\"\n]{1,300})\"|'(?P<sq>[^'\n]{1,300})'|(?P<uv>[^\s\"'$<\-][^\s\"']{0,300}))",
        ("dq", "sq", "uv"),
        validator=lambda m: _flag_value_ok(_value(m, ("dq", "sq", "uv"))),
        positive="huggingface-cli login --token " + _fake(_B62, 30),
        negative="gh auth login --with-token < mytoken.txt",
        hints=("--",),
        anchor=r"--(?:token|api-?key|secret|client-secret|auth-token|access-token|access-key|private-key|github-token|hf-token)",
    ),
    Rule(
        "password",
        r"(?<![\w\-])(?:(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?\s-p|sshpass\s+-p\s*)"
        r"(?:'(?P<sq>[^'\n]{1,200})'|\"(?P<dq>[^\"\n]{1,200})\"|(?P<v>[^\s\-'\"$][^\s'\"]{0,200}))",
        ("sq", "dq", "v"),
        positive="mysqldump -u root -pS3cr3tPass app > dump.sql",
        negative="mysql -u root -p app",
        hints=("mysql", "mariadb", "sshpass"),
    ),
    Rule(
        "password",
        r"(?<![\w\-])(?:curl|wget|http)\b[^\n]{0,200}?\s(?:-u|--user|--http-user)[ =]['\"]?[^\s:'\"]{1,100}:(?P<v>[^\s'\"@]{1,200})",
        "v",
        validator=on_value(lambda v: not _PLACEHOLDER.search(v), "v"),
        positive="curl -u admin:hunter2-Prod https://jenkins.acme.io/api/json",
        negative="curl -u admin https://jenkins.acme.io/api/json",
        hints=("-u", "--user"),
    ),
    Rule(
        "password",
        r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<v>\S+)",
        "v",
        positive="machine api.heroku.com login me@acme.io password 0a1b2c3d-4e5f-6789",
        negative="machine learning login page: reset your password",
        hints=("machine",),
    ),
    Rule(
        "password",
        r"(?i)<(?P<tag>password|passwd|db_password|adminpassword)>(?P<v>[^<\n]{3,300})</(?P=tag)>",
        "v",
        validator=on_value(lambda v: not _PLACEHOLDER.search(v), "v"),
        positive="<server><id>nexus</id><password>n3xus-Pa55</password></server>",
        negative="<password>${env.NEXUS_PASSWORD}</password>",
        hints=("<pass", "<db_pass", "<adminpass"),
    ),
    # ---- generic assignments (last: least specific) --------------------
    # kind is "password" or "secret" depending on the variable name (validator decides)
    Rule(
        "password",
        _ASSIGNMENT,
        _VALUE_GROUPS,
        validator=_assignment_kind,
        positive="export PGPASSWORD=Tr0ub4dor-3",
        negative="password = getpass.getpass('Password: ')",
        hints=_NAME_HINTS,
        anchor=_NAME_ANCHOR,
    ),
    Rule(
        "password",
        _NAME_VALUE_PAIR,
        _VALUE_GROUPS[:2] + ("uv",),
        validator=_assignment_kind,
        positive="env:\n  - name: POSTGRES_PASSWORD\n    value: \"w1nter-Is-c0ming\"",
        negative="env:\n  - name: POSTGRES_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db}",
        hints=("value:",),
    ),
    Rule(
        "password",
        _QUOTED_PAIR,
        ("dq", "sq"),
        validator=lambda m: _assignment_kind(m, quoted_only=True),
        positive="define('DB_PASSWORD', 'w1nter-Is-c0ming');",
        negative="password = config.get('db', 'password')",
        hints=_NAME_HINTS,
    ),
    Rule(
        "password",
        _PGPASS,
        "v",
        validator=on_value(lambda v: not is_placeholder(v), "v"),
        positive="db.internal:5432:app:app_user:Tr0ub4dor-3",
        negative="12:30:45 worker started",
        hints=(":",),
    ),
    Rule(
        "password",
        _PROSE_IS,
        "v",
        validator=_prose_kind,
        positive="fyi the staging db password is Tr0ub4dor-3 until friday",
        negative="the password is incorrect, and the token is expired",
        hints=_NAME_HINTS,
        anchor=_PROSE_ANCHOR,
    ),
)

PII_RULES: tuple[Rule, ...] = (
    Rule(
        "email",
        r"(?<![\w.%+\-/:])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}\.)+[A-Za-z]{2,24}(?![\w\-])",
        validator=_email_ok,
        positive="Contact jane.doe+work@acme-corp.com for access.",
        negative="git clone git@github.com:acme/repo.git; logo@2x.png",
        hints=("@",),
        pii=True,
    ),
    Rule(
        "credit_card",
        r"(?<![\d\-.])(?:\d[ \-]?){12,18}\d(?![\d\-.])",
        validator=_card_ok,
        positive="card: 4111 1111 1111 1111 exp 12/29",
        negative="order id 4111 1111 1111 1112",
        pii=True,
    ),
    Rule(
        "iban",
        r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])",
        validator=_iban_ok,
        positive="IBAN: GB82 WEST 1234 5698 7654 32",
        negative="SKU: GB82 WEST 1234 5698 7654 33",
        pii=True,
    ),
    Rule(
        "us_ssn",
        r"(?<![\d\-])\d{3}-\d{2}-\d{4}(?![\d\-])",
        validator=_ssn_ok,
        positive="SSN 123-45-6789 on file",
        negative="part 666-12-3456 and 900-12-3456",
        pii=True,
    ),
    Rule(
        "uk_nino",
        r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])",
        positive="NI number: JG 10 37 52 B",
        negative="model GB123456A",
        pii=True,
    ),
    Rule(
        "es_dni",
        r"(?<![A-Za-z0-9])\d{8}-?[A-Z](?![A-Za-z0-9])",
        validator=_dni_ok,
        positive="DNI 12345678Z",
        negative="ref 12345678A",
        pii=True,
    ),
    Rule(
        "it_codice_fiscale",
        r"(?<![A-Za-z0-9])[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z](?![A-Za-z0-9])",
        validator=_cf_ok,
        positive="CF: RCCMNL83S18D969H",
        negative="CF: RCCMNL83S18D969A",
        pii=True,
    ),
    Rule(
        "in_aadhaar",
        r"(?<![\d\-])[2-9]\d{3}[ \-]\d{4}[ \-]\d{4}(?![\d\-])",
        validator=_aadhaar_ok,
        positive="Aadhaar 2345 6789 0124",
        negative="Aadhaar 2345 6789 0123",
        pii=True,
    ),
    Rule(
        "phone",
        r"(?<![\w+.\-/:])(?:"
        r"\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{1,4}(?:[ .\-]?\d{2,4}){1,4}"
        r"|\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}"
        r"|\d{3}[.\-]\d{3}[.\-]\d{4}"
        r"|\d{3} \d{3} \d{4}"
        r"|0\d{2,4}[ \-]\d{3,4}[ \-]?\d{3,4}"
        r"|0[1-9](?:[ .]\d{2}){4}"
        r")(?![\w\-/:]|\.\w)",  # a sentence-ending period may follow; "1.2.3.4" style runs may not
        validator=_phone_ok,
        positive="call me at +1 (415) 555-0132 tomorrow",
        negative="released v1.6.0 on 2024-05-01 from 10.0.0.12",
        pii=True,
    ),
)
