"""The vendored gitleaks rule set (``data/gitleaks.toml``, MIT) as :class:`~remem.core.redact.rule.Rule` s.

Gitleaks is a maintained secret scanner whose ~220 rules (provider token formats, keywords, entropy
thresholds, allow-lists) change as providers change theirs; remem reads its configuration as data and follows
its semantics:

* ``keywords``: the rule runs only when one occurs in the text (case-insensitive);
* the secret is ``secretGroup``, else the first capture group that matched, else the whole match;
* ``entropy``: a secret whose Shannon entropy is at or below it is not one;
* allow-lists (the global one and each rule's): ``regexes`` against the secret, the match or the line
  (``regexTarget``), ``stopwords`` contained in the secret, ``condition`` OR/AND. Allow-lists and rules that
  depend on a file path or a commit never apply to text that has neither (as in gitleaks without a path).

Regexes are RE2; :mod:`remem.core.redact.re2` translates them, and a rule it cannot translate is skipped
and reported (``skipped``), never a crash. Regexes compile on first use (a rule whose keyword never occurs
costs nothing); one that Python's ``re`` still rejects then is dropped by the redactor the same way. Refresh the data with ``python -m remem.core.redact.refresh_rules``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from .re2 import Untranslatable, top_level_alternation, translate
from .rule import FIRST_GROUP, Rule, shannon_entropy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DATA = Path(__file__).with_name("data")
TOML_PATH = DATA / "gitleaks.toml"
SOURCE_PATH = DATA / "gitleaks.source.json"
CACHE_PATH = DATA / "gitleaks.translated.json"

# Rules that match on a generic context (an assignment, a header, a command line) rather than a token format:
# they run after remem's own generic rules, so the kinds users already see (password, secret, bearer_token)
# stay what they were.
GENERIC_IDS = frozenset({"generic-api-key", "curl-auth-header", "curl-auth-user"})

# gitleaks id -> the kind remem already reported for that secret (placeholders users have in their memories).
# Every other rule's kind is its id with '-' replaced by '_'.
KIND_NAMES: dict[str, str] = {
    "private-key": "private_key", "jwt": "jwt", "jwt-base64": "jwt",
    "anthropic-api-key": "anthropic_api_key", "anthropic-admin-api-key": "anthropic_api_key",
    "openai-api-key": "openai_api_key",
    "huggingface-access-token": "huggingface_token", "huggingface-organization-api-token": "huggingface_token",
    "aws-access-token": "aws_access_key_id", "gcp-api-key": "gcp_api_key",
    "digitalocean-access-token": "digitalocean_token", "digitalocean-pat": "digitalocean_token",
    "digitalocean-refresh-token": "digitalocean_token", "databricks-api-token": "databricks_token",
    "vault-service-token": "hashicorp_vault_token", "vault-batch-token": "hashicorp_vault_token",
    "doppler-api-token": "doppler_token",
    "github-pat": "github_token", "github-oauth": "github_token", "github-app-token": "github_token",
    "github-refresh-token": "github_token", "github-fine-grained-pat": "github_token",
    "gitlab-pat": "gitlab_token", "gitlab-pat-routable": "gitlab_token", "gitlab-ptt": "gitlab_token",
    "gitlab-rrt": "gitlab_token", "gitlab-deploy-token": "gitlab_token", "gitlab-cicd-job-token": "gitlab_token",
    "gitlab-feed-token": "gitlab_token", "gitlab-feature-flag-client-token": "gitlab_token",
    "gitlab-incoming-mail-token": "gitlab_token", "gitlab-kubernetes-agent-token": "gitlab_token",
    "gitlab-oauth-app-secret": "gitlab_token", "gitlab-runner-authentication-token": "gitlab_token",
    "gitlab-runner-authentication-token-routable": "gitlab_token", "gitlab-scim-token": "gitlab_token",
    "gitlab-session-cookie": "gitlab_token",
    "npm-access-token": "npm_token", "pypi-upload-token": "pypi_token", "atlassian-api-token": "atlassian_token",
    "linear-api-key": "linear_api_key", "postman-api-token": "postman_api_key", "age-secret-key": "age_secret_key",
    "slack-bot-token": "slack_token", "slack-user-token": "slack_token", "slack-app-token": "slack_token",
    "slack-legacy-bot-token": "slack_token", "slack-legacy-token": "slack_token",
    "slack-legacy-workspace-token": "slack_token", "slack-config-access-token": "slack_token",
    "slack-config-refresh-token": "slack_token", "slack-webhook-url": "slack_webhook",
    "telegram-bot-api-token": "telegram_bot_token", "stripe-access-token": "stripe_key",
    "twilio-api-key": "twilio_api_key", "sendgrid-api-token": "sendgrid_api_key",
    "mailgun-private-api-token": "mailgun_api_key", "shopify-access-token": "shopify_token",
    "shopify-custom-access-token": "shopify_token", "shopify-private-app-access-token": "shopify_token",
    "shopify-shared-secret": "shopify_token", "notion-api-token": "notion_token",
    "sentry-user-token": "sentry_auth_token", "sentry-org-token": "sentry_auth_token",
    "sentry-access-token": "sentry_auth_token", "grafana-api-key": "grafana_token",
    "grafana-cloud-api-token": "grafana_token", "grafana-service-account-token": "grafana_token",
    "curl-auth-user": "password", "generic-api-key": "secret",
}

# gitleaks' semi-generic rules start with `[\w.-]{0,50}?` (the identifier before the keyword). It only moves
# the start of the match, which a lazy prefix makes Python retry up to 50 times at every position: it is
# stripped from the compiled regex and the start is found again by walking back (for "match" allow-lists).
_LAZY_PREFIX = "[\\w.-]{0,50}?"
_PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


# gitleaks ends most secrets with this group, written for code and config files. In chat a secret is as often
# followed by sentence punctuation ("the key is sk_live_..."), so ".,!?" then a space or the end also end it,
# and so do closing brackets.
_SECRET_END = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_PROSE_END = "(?:[\\x60'\"\\s;)\\]}>]|[.,!?](?=\\s|$)|\\\\[nr]|$)"


# How far a match may reach from its start (see Rule.window): no secret is longer than a large PEM key, and a
# `.*` rule (curl's) gets one screenful of command line.
WINDOW = 8192
DOTSTAR_WINDOW = 512


_LEADING_FLAGS = re.compile(r"\(\?([a-zA-Z]+)\)")


def parse_toml(raw: bytes | str) -> dict[str, Any]:
    return tomllib.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)


@dataclass(frozen=True)
class Allowlist:
    """One gitleaks allow-list, reduced to what applies to text (no path, no commit)."""

    target: str = "secret"  # secret | match | line
    regexes: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()
    all_of: bool = False  # condition = "AND"

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], ...]:
        """One alternation for all regexes (one search instead of a dozen per finding), else one each."""
        scoped = [f"(?{m.group(1)}:{r[m.end():]})" if (m := _LEADING_FLAGS.match(r)) else r for r in self.regexes]
        try:
            return (re.compile("|".join(f"(?:{r})" for r in scoped), re.ASCII),) if scoped else ()
        except re.error:
            return tuple(re.compile(r, re.ASCII) for r in self.regexes)

    @cached_property
    def _stopword_automaton(self) -> Any:
        import ahocorasick

        auto = ahocorasick.Automaton()
        for word in self.stopwords:
            auto.add_word(word, word)
        auto.make_automaton()
        return auto

    def _has_stopword(self, secret: str) -> bool:
        if not self.stopwords or not secret:
            return False
        return next(self._stopword_automaton.iter(secret.lower()), None) is not None

    def allows(self, secret: str, match: str, line: str) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        regex_ok = bool(target) and any(rx.search(target) for rx in self._compiled)
        if self.all_of:
            checks = ([regex_ok] if self.regexes else []) + ([self._has_stopword(secret)] if self.stopwords else [])
            return bool(checks) and all(checks)
        return regex_ok or self._has_stopword(secret)


@dataclass(frozen=True)
class _Check:
    """The validator of one gitleaks rule: entropy, then the global and the rule's allow-lists."""

    group: int
    entropy: float
    allowlists: tuple[Allowlist, ...]
    walk_back: int = 0

    def __call__(self, m: re.Match[str]) -> bool:
        if self.group:
            if (m.re.groups or 0) < self.group:
                return False
            secret = m.group(self.group) or ""
        else:
            s, e = _first_group_span(m)
            secret = m.string[s:e]
        if self.entropy and shannon_entropy(secret) <= self.entropy:
            return False
        if not self.allowlists:
            return True
        text, start, end = m.string, m.start(), m.end()
        floor = max(0, start - self.walk_back)
        while start > floor and text[start - 1] in _PREFIX_CHARS:
            start -= 1
        match = text[start:end].strip("\n")
        line = text[text.rfind("\n", 0, start) + 1 : _line_end(text, end)]
        return not any(a.allows(secret, match, line) for a in self.allowlists)


def _line_end(text: str, end: int) -> int:
    i = text.find("\n", max(end - 1, 0))
    return len(text) if i < 0 else i


def _first_group_span(m: re.Match[str]) -> tuple[int, int]:
    for g in range(1, (m.re.groups or 0) + 1):
        s, e = m.span(g)
        if e > s:
            return s, e
    return m.span(0)


def _allowlist_data(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The text-applicable part of an allow-list as plain data, or None when it can never apply to text."""
    all_of = str(spec.get("condition", "OR")).upper() == "AND"
    if all_of and (spec.get("paths") or spec.get("commits")):
        return None  # needs a path/commit match as well: never true for text
    regexes = [translate(_whole(str(r))) for r in spec.get("regexes", ())]
    stopwords = [str(w).lower() for w in spec.get("stopwords", ())]
    if not regexes and not stopwords:
        return None
    return {"target": str(spec.get("regexTarget", "secret")), "regexes": regexes, "stopwords": stopwords,
            "all_of": all_of}


def _whole(regex: str) -> str:
    """An allow-list regex ``^a|b|c$`` as it is meant, ``^(?:a|b|c)$``: the whole secret is one of them. The
    anchors bind to the first and last alternatives only, so gitleaks' global ``(?i)^true|false|null$`` allowed
    any secret that contains "false" (an npm token with "fAlSe" in it stayed in clear) or starts with "true"."""
    m = re.fullmatch(r"(\(\?[a-zA-Z]+\))?\^(.*)\$", regex, re.S)
    return f"{m.group(1) or ''}^(?:{m.group(2)})$" if m and top_level_alternation(m.group(2)) else regex


def _rule_data(spec: dict[str, Any]) -> dict[str, Any]:
    """One gitleaks rule translated to plain data (what the translation cache holds)."""
    rule_id = str(spec["id"])
    regex = translate(str(spec["regex"]))
    walk_back = 0
    stripped = True
    while stripped:  # some rules nest it twice: [\w.-]{0,50}?(?i:[\w.-]{0,50}?(?:meraki)...
        stripped = False
        for lead in ("(?i)", "(?i:", ""):
            if regex.startswith(lead + _LAZY_PREFIX):
                regex, walk_back, stripped = lead + regex[len(lead) + len(_LAZY_PREFIX) :], walk_back + 50, True
                break
    regex = regex.replace(_SECRET_END, _PROSE_END)
    return {"id": rule_id, "kind": KIND_NAMES.get(rule_id, rule_id.replace("-", "_")), "regex": regex,
            "group": int(spec.get("secretGroup", 0) or 0), "entropy": float(spec.get("entropy", 0) or 0),
            "walk_back": walk_back, "window": DOTSTAR_WINDOW if ".*" in regex else WINDOW,
            "keywords": list(dict.fromkeys(str(k).lower() for k in spec.get("keywords", ()))),
            "allowlists": [a for a in (_allowlist_data(s) for s in spec.get("allowlists", ())) if a is not None]}


def translate_data(data: dict[str, Any]) -> dict[str, Any]:
    """A parsed gitleaks configuration translated to plain data: ``{"global", "rules", "skipped"}``."""
    skipped: dict[str, str] = {}
    global_specs = data.get("allowlists") or ([data["allowlist"]] if isinstance(data.get("allowlist"), dict) else [])
    try:
        global_lists = [a for a in (_allowlist_data(s) for s in global_specs) if a is not None]
    except Untranslatable as exc:
        skipped["(global allowlist)"] = str(exc)
        global_lists = []
    rules: list[dict[str, Any]] = []
    for spec in data.get("rules", ()):
        rule_id = str(spec.get("id", "?"))
        if "regex" not in spec:
            skipped[rule_id] = "path-only rule (matches file names, not text)"
        elif spec.get("path"):
            skipped[rule_id] = "path-scoped rule (gitleaks applies it to matching files only)"
        else:
            try:
                rules.append(_rule_data(spec))
            except (Untranslatable, re.error, ValueError, KeyError) as exc:
                skipped[rule_id] = f"{type(exc).__name__}: {exc}"
    return {"global": global_lists, "rules": rules, "skipped": skipped}


def build_rules(translated: dict[str, Any]) -> tuple[Rule, ...]:
    """Rules from translated data (regexes compile on first use)."""
    def lists(items: list[dict[str, Any]]) -> tuple[Allowlist, ...]:
        return tuple(Allowlist(a["target"], tuple(a["regexes"]), tuple(a["stopwords"]), a["all_of"]) for a in items)

    global_lists = lists(translated["global"])
    return tuple(
        Rule(d["kind"], d["regex"], d["group"] or FIRST_GROUP,
             validator=_Check(d["group"], d["entropy"], global_lists + lists(d["allowlists"]), d["walk_back"]),
             hints=tuple(d["keywords"]), flags=re.ASCII, source="gitleaks", generic=d["id"] in GENERIC_IDS,
             rule_id=d["id"], window=d["window"])
        for d in translated["rules"]
    )


def translate_rules(data: dict[str, Any]) -> tuple[tuple[Rule, ...], dict[str, str]]:
    """(rules, {rule id: why it was skipped}) for a parsed gitleaks configuration."""
    translated = translate_data(data)
    return build_rules(translated), translated["skipped"]


# Translating ~220 rules and parsing the TOML costs ~20 ms, which every hook process would pay for its first log
# line. The translation is data, so refresh_rules stores it next to the TOML, keyed by the TOML's sha256 and
# TRANSLATOR (bump it when the translation changes; a test checks the stored copy equals a fresh one).
TRANSLATOR = "2"


def cache_key(raw: bytes) -> dict[str, str]:
    return {"toml_sha256": hashlib.sha256(raw).hexdigest(), "translator": TRANSLATOR}


def _cached(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(CACHE_PATH.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or {k: data.get(k) for k in ("toml_sha256", "translator")} != cache_key(raw):
        return None
    return data


@dataclass(frozen=True)
class RuleSet:
    """The loaded gitleaks rules plus what was skipped and where they came from."""

    rules: tuple[Rule, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return str(self.source.get("version") or "unknown")


@lru_cache(maxsize=4)
def load(path: str | None = None) -> RuleSet:
    """The vendored rule set (or the gitleaks TOML at ``path``), translated once per process: from the stored
    translation when it matches the TOML, else by parsing the TOML (tomllib) and translating it."""
    toml_path = Path(path) if path else TOML_PATH
    raw = toml_path.read_bytes()
    translated = (_cached(raw) if path is None else None) or translate_data(parse_toml(raw))
    rules, skipped = build_rules(translated), dict(translated["skipped"])
    try:
        source = json.loads(SOURCE_PATH.read_text("utf-8")) if path is None else {"file": str(toml_path)}
    except (OSError, ValueError):
        source = {}
    return RuleSet(rules, skipped, source)

