"""remem's own rule overlay for :mod:`remem.core.redact.redactor` (the vendored gitleaks set does the rest).

Rules are data so that they can be reviewed, extended and tested as a table:
every rule carries a positive example (must be redacted to its kind) and a
negative example (must pass unchanged). All examples are *fake* secrets of the
right shape, built programmatically so nothing here resembles a live key.

Order matters: earlier rules win when matches overlap. ``SECRET_RULES`` holds
the provider formats remem keeps (where its rule is broader than gitleaks') and
the generic rules gitleaks lacks (assignments, connection strings, auth headers,
command lines, chat phrasings); generic rules run after every specific one.
"""

from __future__ import annotations

import base64
import re
from dataclasses import replace

from .assignments import (
    ASSIGNMENT, NAME_VALUE_PAIR, PGPASS, PLACEHOLDER, PROSE_IS, QUOTED_PAIR, VALUE_GROUPS,
    assignment_kind, prose_kind, is_placeholder,
)
from .chat import CHAT_RULES
from .headers import HEADER_RULES
from .plain import PLAIN_RULES
from .pii import PII_RULES
from .rule import Rule, on_value, shannon_entropy
from .rule import char_classes
from .rule import char_classes as _classes
from .rule import group_value as _value
from .rule import mixed as _mixed

__all__ = ["PII_RULES", "SECRET_RULES", "Rule", "shannon_entropy", "is_placeholder"]

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
    return not PLACEHOLDER.search(v) and any(c.isdigit() for c in v) and _classes(v) >= 2


def _url_password_ok(m: re.Match[str]) -> bool:
    v = m.group("pw")
    return not PLACEHOLDER.search(v) and v not in ("", "*", "password") and "{" not in v


def _aws_secret_ok(v: str) -> bool:
    """40 base64 characters that look random: not a hex digest, not a word run."""
    return char_classes(v) >= 2 and not re.fullmatch(r"[0-9a-fA-F]+", v) and shannon_entropy(v) >= 3.5


def _lone_aws_secret_ok(m: re.Match[str]) -> bool:
    """A lone 40-character line is an AWS secret when it looks random and is not part of a base64 block."""
    v = m.group("v")
    if char_classes(v) < 3 or not _aws_secret_ok(v):
        return False
    if sum(len(w) for w in re.findall(r"[A-Z][a-z]{2,}", v)) >= len(v) // 2:
        return False  # a CamelCase identifier ("MountSandboxapiContextHubRepoMountSpecS3"), not random base64
    text = m.string
    before = text[max(0, text.rfind("\n", 0, max(0, m.start() - 1)) + 1): m.start()].strip()
    after_end = text.find("\n", m.end() + 1)
    after = text[m.end(): len(text) if after_end < 0 else after_end].strip()
    block = re.compile(r"[A-Za-z0-9+/=]{40,}|-----(?:BEGIN|END)[^\n]*")
    return not (block.fullmatch(before) or block.fullmatch(after))


def _cookie_ok(m: re.Match[str]) -> bool:
    """A session cookie's value on a ``Cookie:``/``Set-Cookie:`` line: random-looking, not a placeholder."""
    start = m.string.rfind("\n", 0, m.start()) + 1
    return "cookie" in m.string[start:m.start()].lower() and _bearer_ok(m)  # the same test as a bearer token's


def _flag_value_ok(v: str) -> bool:
    """``--password X``: X must be a literal, not a variable, file or placeholder."""
    return (
        len(v) >= 3
        and not PLACEHOLDER.search(v)
        and not re.search(r"\.(?:txt|json|pem|key|env|yaml|yml)$|^/|\{", v)
    )



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
_AWS_PREFIXES = ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka")
_AWS_KEY_ID = r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}"
# token start boundary; also right after an escape in JSON or a URL ("...\nsk-proj-..", "%22sk-proj-..."),
# where a letter or digit precedes the token but belongs to the escape
_B = r"(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"
_E = r"(?![A-Za-z0-9_\-])"  # token end boundary

# Provider formats and key material.
_SPECIFIC: tuple[Rule, ...] = (
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
        # broader than gitleaks' jwt: ends at sentence punctuation, short segments, long signatures
        "jwt",
        _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{0,1000}" + _E,
        positive="id_token: " + FAKE_JWT,
        negative="The token starts with eyJ because base64 of a JSON brace is eyJ.",
        hints=("eyj",),
    ),
    # ---- LLM providers ----------------------------------------------------
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
        r"(?<![A-Z0-9])" + _AWS_KEY_ID + r"(?![A-Z0-9])",
        positive="aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        negative="AKIA is the prefix of long-term access key ids",
        hints=_AWS_PREFIXES,
    ),
    Rule(
        # a key id with its secret on one line: "AKIA... / <40 chars>", "key AKIA... secret <40 chars>", CSV
        "aws_secret_access_key",
        r"(?<![A-Z0-9])" + _AWS_KEY_ID + r"(?![A-Z0-9])[^\n]{0,60}?(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})"
        r"(?![A-Za-z0-9/+=])",
        "v",
        validator=on_value(_aws_secret_ok, "v"),
        positive="creds: AKIAIOSFODNN7EXAMPLE / " + FAKE_AWS_SECRET,
        negative="AKIA ids come with a 40-character secret; commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
        hints=_AWS_PREFIXES,
        rule_id="aws_key_id_and_secret",
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
        # a secret access key pasted on its own line or as a list item, with no name or key id near it: 40
        # base64 characters with upper case, lower case and digits (a hex digest or a word run has not all
        # three), not one line of a longer base64 block (a PEM body, a certificate)
        "aws_secret_access_key",
        r"(?m)^[ \t]*(?:[-*+>•][ \t]+|\d{1,3}[.)][ \t]+)?[\[(]?[\"'`]?(?P<v>[A-Za-z0-9/+]{40})[\"'`]?,?[ \t]*\r?$",
        "v",
        validator=lambda m: _lone_aws_secret_ok(m),
        positive="new keys for the backup user:\n- " + FAKE_AWS_SECRET + "\n- rotate in May",
        negative="-----BEGIN CERTIFICATE-----\nMIIB" + _fake(_B62 + "+/", 60, 11) + "\n" + FAKE_AWS_SECRET
        + "\n-----END CERTIFICATE-----\n3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
        rule_id="aws_secret_alone",
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
    # ---- messaging / SaaS ------------------------------------------------------
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
        "stripe_webhook_secret",
        _B + r"whsec_[A-Za-z0-9+/]{24,64}" + _E,
        positive="STRIPE_WEBHOOK_SECRET=whsec_" + _fake(_B62, 32),
        negative="whsec_ prefix",
        hints=("whsec_",),
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
        "notion_token",
        _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,50})" + _E,
        validator=on_value(_mixed(3)),
        positive="NOTION_TOKEN=ntn_" + _fake(_B62, 46),
        negative="secret_sauce_recipe",
        hints=("secret_", "ntn_"),
    ),
    # ---- provider prefixes gitleaks only finds next to the provider's name ----------------------------
    Rule(
        "new_relic_user_api_key",
        _B + r"NRAK-[A-Z0-9]{27}" + _E,
        positive="curl https://api.newrelic.com/graphql -H 'API-Key: NRAK-" + _fake(_B62.upper()[:36], 27) + "'",
        negative="New Relic user keys start with NRAK-",
        hints=("nrak-",),
    ),
    Rule(
        "new_relic_insert_key",
        _B + r"NRII-[A-Za-z0-9_\-]{32}" + _E,
        positive="insert key NRII-" + _fake(_B64URL, 32),
        negative="NRII- is the insert key prefix",
        hints=("nrii-",),
    ),
    Rule(
        "new_relic_browser_api_token",
        _B + r"NRJS-[a-f0-9]{19}" + _E,
        positive="browser agent NRJS-" + _fake(_HEX, 19),
        negative="NRJS-abc is too short",
        hints=("nrjs-",),
    ),
    Rule(
        "new_relic_license_key",
        r"(?<![A-Za-z0-9])[a-f0-9]{36}NRAL(?![A-Za-z0-9])",
        positive="license_key: " + _fake(_HEX, 36) + "NRAL",
        negative="NRAL ends a license key",
        hints=("nral",),
    ),
    Rule(
        "typeform_api_token",
        _B + r"tfp_[A-Za-z0-9\-_.=]{59}" + _E,
        validator=on_value(_mixed(3)),
        positive="tfp_" + _fake(_B62, 59),
        negative="tfp_ is typeform's prefix",
        hints=("tfp_",),
    ),
    Rule(
        "openrouter_api_key",
        _B + r"sk-or-v1-[a-f0-9]{64}" + _E,
        positive="OPENROUTER_KEY sk-or-v1-" + _fake(_HEX, 64),
        negative="sk-or-v1- keys are OpenRouter's",
        hints=("sk-or-",),
    ),
    Rule(
        "tailscale_key",
        _B + r"tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,24}-[A-Za-z0-9]{20,64}" + _E,
        positive="tailscale up --auth-key=tskey-auth-" + _fake(_B62, 12) + "-" + _fake(_B62, 32, 5),
        negative="tskey-auth- keys come from the admin console",
        hints=("tskey-",),
    ),
    Rule(
        "sentry_auth_token",
        _B + r"sntry[su]_[A-Za-z0-9+/=_\-]{40,200}" + _E,
        positive="SENTRY_AUTH_TOKEN=sntrys_" + _fake(_B62, 60),
        negative="sntrys_ prefix",
        hints=("sntr",),
    ),
)

# Generic context rules: run after every provider-specific rule (remem's and gitleaks').
_GENERIC: tuple[Rule, ...] = (
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
        rule_id="cli_password_flag",
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
        rule_id="cli_secret_flag",
    ),
    Rule(  # -p VALUE: mysql's glued (-pS3cret), sshpass's, a container registry login's (docker login -p S3cret)
        "password",
        r"(?<![\w\-])(?:(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?\s-p|sshpass\s+-p\s*|"
        r"(?:docker|podman|buildah|nerdctl|oras|helm\s+registry)\s+login\b[^\n]{0,200}?\s-p(?:\s+|=))"
        r"(?:'(?P<sq>[^'\n]{1,200})'|\"(?P<dq>[^\"\n]{1,200})\"|(?P<v>[^\s\-'\"$][^\s'\"]{0,200}))",
        ("sq", "dq", "v"),
        validator=lambda m: _flag_value_ok(_value(m, ("sq", "dq", "v"))),
        positive="mysqldump -u root -pS3cr3tPass app > dump.sql",
        negative="mysql -u root -p app",
        hints=("mysql", "mariadb", "sshpass", "login"),
        rule_id="cli_mysql_sshpass",
    ),
    Rule(
        "session_cookie",
        r"(?i)(?<![\w.\-])[\w.\-]*(?:sess|sid|auth|token|jwt|remember|login)[\w.\-]*=(?P<v>[^\s;,\"']{12,4096})",
        "v",
        validator=_cookie_ok,
        positive="Cookie: theme=dark; sessionid=" + _fake(_B62, 32) + "; lang=en",
        negative="Set-Cookie: session_timeout=30minutes; Path=/",
        hints=("cookie",),
        rule_id="session_cookie",
    ),
    Rule(
        "password",
        r"(?<![\w\-])(?:curl|wget|http)\b[^\n]{0,200}?\s(?:-u|--user|--http-user)[ =]['\"]?[^\s:'\"]{1,100}:(?P<v>[^\s'\"@]{1,200})",
        "v",
        validator=on_value(lambda v: not PLACEHOLDER.search(v), "v"),
        positive="curl -u admin:hunter2-Prod https://jenkins.acme.io/api/json",
        negative="curl -u admin https://jenkins.acme.io/api/json",
        hints=("-u", "--user"),
        rule_id="cli_curl_user",
    ),
    Rule(
        "password",
        r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<v>\S+)",
        "v",
        positive="machine api.heroku.com login me@acme.io password 0a1b2c3d-4e5f-6789",
        negative="machine learning login page: reset your password",
        hints=("machine",),
        rule_id="netrc",
    ),
    Rule(
        "password",
        r"(?i)<(?P<tag>password|passwd|db_password|adminpassword)>(?P<v>[^<\n]{3,300})</(?P=tag)>",
        "v",
        validator=on_value(lambda v: not PLACEHOLDER.search(v), "v"),
        positive="<server><id>nexus</id><password>n3xus-Pa55</password></server>",
        negative="<password>${env.NEXUS_PASSWORD}</password>",
        hints=("<pass", "<db_pass", "<adminpass"),
        rule_id="xml_password",
    ),
    # ---- generic assignments (last: least specific) --------------------
    # kind is "password" or "secret" depending on the variable name (validator decides)
    Rule(
        "password",
        ASSIGNMENT,
        VALUE_GROUPS,
        validator=assignment_kind,
        positive="export PGPASSWORD=Tr0ub4dor-3",
        negative="password = getpass.getpass('Password: ')",
        hints=_NAME_HINTS,
        anchor=_NAME_ANCHOR,
        rule_id="assignment",
    ),
    Rule(
        "password",
        NAME_VALUE_PAIR,
        VALUE_GROUPS[:2] + ("uv",),
        validator=assignment_kind,
        positive="env:\n  - name: POSTGRES_PASSWORD\n    value: \"w1nter-Is-c0ming\"",
        negative="env:\n  - name: POSTGRES_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db}",
        hints=("value:",),
        rule_id="env_name_value",
    ),
    Rule(
        "password",
        QUOTED_PAIR,
        ("dq", "sq"),
        validator=lambda m: assignment_kind(m, quoted_only=True),
        positive="define('DB_PASSWORD', 'w1nter-Is-c0ming');",
        negative="password = config.get('db', 'password')",
        hints=_NAME_HINTS,
        rule_id="quoted_pair",
    ),
    Rule(
        "password",
        PGPASS,
        "v",
        validator=on_value(lambda v: not is_placeholder(v), "v"),
        positive="db.internal:5432:app:app_user:Tr0ub4dor-3",
        negative="12:30:45 worker started",
        rule_id="pgpass",
    ),
    Rule(
        "password",
        PROSE_IS,
        "v",
        validator=prose_kind,
        positive="fyi the staging db password is Tr0ub4dor-3 until friday",
        negative="the password is incorrect, and the token is expired",
        hints=_NAME_HINTS,
        anchor=_PROSE_ANCHOR,
        rule_id="prose",
    ),
)

# Any-scheme header and plain-word rules go after the URL/Basic/Bearer ones (whose kinds users already have in
# their memories) and before the assignments: their spans are the whole credential, where an assignment rule
# would take only the first word ("passphrase: tomato camera ...", "Proxy-Authorization: SSWS ...").
_AUTH_KINDS = frozenset({"url_password", "basic_auth", "bearer_token", "authorization"})
_ORDERED = (tuple(r for r in _GENERIC if r.kind in _AUTH_KINDS) + HEADER_RULES + PLAIN_RULES
            + tuple(r for r in _GENERIC if r.kind not in _AUTH_KINDS))
SECRET_RULES: tuple[Rule, ...] = _SPECIFIC + tuple(replace(r, generic=True) for r in _ORDERED + CHAT_RULES)
