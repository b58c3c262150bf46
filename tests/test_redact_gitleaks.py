"""The vendored gitleaks rule set: data and licence, RE2 translation, gitleaks' semantics, refresh, speed path."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from remem.core.redact import gitleaks
from remem.core.redact.prefix import literal_starts
from remem.core.redact.re2 import Untranslatable, translate
from remem.core.redact.redactor import Redactor
from remem.core.redact.rules import _B62, _B64URL, _HEX, FAKE_JWT, _fake

GL = Redactor(sources=("gitleaks",))
CASES = Path(__file__).resolve().parents[1] / "bench" / "data" / "gitleaks_cases.json"


# ------------------------------------------------------------------------------------------ the data
def test_vendored_toml_licence_and_version_are_recorded() -> None:
    source = json.loads(gitleaks.SOURCE_PATH.read_text())
    raw = gitleaks.TOML_PATH.read_bytes()
    assert source["project"] == "gitleaks" and source["licence"] == "MIT" and source["version"].startswith("v8.")
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert hashlib.sha256(raw).hexdigest() == source["sha256"]  # the file is gitleaks' own, unedited
    assert "MIT License" in (gitleaks.DATA / "gitleaks.LICENSE").read_text()
    loaded = gitleaks.load()
    assert loaded.version == source["version"] and len(loaded.rules) >= 200
    # only rules that need a file path are left out; every regex translated
    assert all("path" in why for why in loaded.skipped.values()), loaded.skipped


def test_every_translated_regex_compiles_under_python_re() -> None:
    for rule in gitleaks.load().rules:
        re.compile(rule.regex, rule.flags)


# ------------------------------------------------------------------------------------------ translation
@pytest.mark.parametrize("go, py", [
    (r"\b(p8e-(?i)[a-z0-9]{32})\b", r"\b(p8e-(?i:[a-z0-9]{32}))\b"),
    (r"a(?i)b|c", r"a(?i:b)|(?i:c)"),
    (r"(?i)[\w.-]{0,50}?(?:key)", r"(?i)[\w.-]{0,50}?(?:key)"),
    (r"\b(pat[[:alnum:]]{14})\b", r"\b(pat[0-9A-Za-z]{14})\b"),
    (r"x(?:[^\w-]|\z)", r"x(?:[^\w-]|\Z)"),
    (r"(?<tok>ab)\Q.*\E", r"(?P<tok>ab)\.\*"),
    (r"[a[b]", r"[a\[b]"),
    (r"\x{263a}", r"\u263a"),
])
def test_re2_syntax_is_translated(go: str, py: str) -> None:
    assert translate(go) == py
    re.compile(py)


def test_mid_pattern_flags_keep_re2_meaning() -> None:
    rx = re.compile(translate(r"\b(p8e-(?i)[a-z0-9]{4})"), re.ASCII)
    assert rx.search("p8e-AbC9") and not rx.search("P8E-abc9")  # the flag starts where RE2 starts it


@pytest.mark.parametrize("go", [r"\pL+", r"\p{Greek}", r"(?U)a+", r"[[:^alpha:]]", r"(a", r"a)"])
def test_untranslatable_syntax_raises(go: str) -> None:
    with pytest.raises(Untranslatable):
        translate(go)


def test_a_rule_that_cannot_be_translated_is_skipped_and_counted(tmp_path: Path) -> None:
    toml = tmp_path / "gitleaks.toml"
    toml.write_text(
        '[[rules]]\nid = "unicode"\nregex = \'\'\'\\pL{40}\'\'\'\nkeywords = ["x"]\n'
        '[[rules]]\nid = "broken"\nregex = \'\'\'(?P<a>x)(?P<a>y)\'\'\'\nkeywords = ["x"]\n'
        '[[rules]]\nid = "fine-token"\nregex = \'\'\'fine_[a-z0-9]{20}\'\'\'\nkeywords = ["fine_"]\n')
    loaded = gitleaks.load(str(toml))
    assert "unicode" in loaded.skipped and [r.rule_id for r in loaded.rules] == ["broken", "fine-token"]
    from remem.core.redact.ruleset import RuleSet

    rs = RuleSet(loaded.rules)  # "broken" only fails when compiled: dropped then, never raised
    rules, _ = rs.scan("x fine_abcdefghij0123456789")
    assert [r.rule_id for r in rules] == ["fine-token"] and "gitleaks:broken" in rs.broken


# ------------------------------------------------------------------------------------------ semantics
def test_keywords_gate_a_rule_and_are_case_insensitive() -> None:
    rule = next(r for r in gitleaks.load().rules if r.rule_id == "adafruit-api-key")
    value = _fake("abcdefghijklmnopqrstuvwxyz0123456789", 32)
    assert GL.redact(f"ADAFRUIT_KEY = {value}").counts == {"adafruit_api_key": 1}
    assert rule.applies("adafruit") and not rule.applies("key = " + value)


def test_secret_group_and_entropy_threshold() -> None:
    token = "ghp_" + _fake(_B62, 36)
    res = GL.redact(f'token: "{token}"')
    assert res.text == 'token: "[REDACTED:github_token]"'  # the secret group, not the quotes around it
    assert not GL.redact("ghp_" + "ab" * 18).changed  # entropy 1.0 <= 3: a placeholder to gitleaks


def test_rule_and_global_allowlists() -> None:
    assert not GL.redact("aws_access_key_id = AKIAIOSFODNN7EXAMPLE").changed  # rule allowlist: .+EXAMPLE$
    assert Redactor().redact("aws_access_key_id = AKIAIOSFODNN7EXAMPLE").changed  # remem's own rule wins
    # generic-api-key: stopword allowlist and the "match" target allowlist (primary_key)
    assert not GL.redact('primary_key = "Zq8rT2vL9mN4pX7wK1sD"').changed
    assert GL.redact('client_secret = "Zq8rT2vL9mN4pX7wK1sD"').counts == {"secret": 1}


def test_a_secret_may_end_at_sentence_punctuation() -> None:
    key = "AIza" + _fake(_B64URL, 35)
    assert GL.redact(f"the browser key is {key}. Rotate it.").text == "the browser key is [REDACTED:gcp_api_key]. Rotate it."


# gitleaks now covers these kinds, with the names remem used before (remem's own rules were dropped)
COVERED = [
    ("jwt", "id_token: " + FAKE_JWT, "The token starts with eyJ because base64 of a JSON brace is eyJ."),
    ("anthropic_api_key", "ANTHROPIC_API_KEY=sk-ant-api03-" + _fake(_B64URL, 93) + "AA", "Anthropic keys start with sk-ant-."),
    ("gcp_api_key", "const key = 'AIza" + _fake(_B64URL, 35) + "';", "Browser keys start with AIza."),
    ("digitalocean_token", "DIGITALOCEAN_TOKEN=dop_v1_" + _fake(_HEX, 64), "dop_v1_ tokens are 64 hex chars"),
    ("databricks_token", "DATABRICKS_TOKEN=dapi" + _fake(_HEX, 32), "dapi prefix"),
    ("hashicorp_vault_token", "VAULT_TOKEN=hvs." + _fake(_B64URL, 90), "hvs.example is short"),
    ("gitlab_token", "PRIVATE-TOKEN: glpat-" + _fake(_B64URL, 20), "glpat- is the prefix"),
    ("npm_token", "//registry.npmjs.org/:_authToken=npm_" + _fake(_B62, 36), "run npm_config_cache=/tmp npm ci"),
    ("pypi_token", "password = pypi-AgEIcHlwaS5vcmc" + _fake(_B64URL, 70), "pypi-AgE is the macaroon prefix"),
    ("atlassian_token", "JIRA_TOKEN=ATATT3xFfGF0" + _fake(_B64URL, 180), "ATATT3 prefix"),
    ("linear_api_key", "LINEAR_API_KEY=lin_api_" + _fake(_B62, 40), "lin_api_ prefix"),
    ("postman_api_key", "key PMAK-" + _fake(_HEX, 24) + "-" + _fake(_HEX, 34, 5), "PMAK- prefix"),
    ("age_secret_key", "# AGE-SECRET-KEY-1" + _fake("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "AGE-SECRET-KEY-1 prefix"),
    ("slack_token", "SLACK_BOT_TOKEN=xoxb-1234567890-9876543210-" + _fake(_B62, 24), "xoxb-tokens-are-for-bots"),
    ("slack_webhook", "url: https://hooks.slack.com/services/T0" + _fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 8)
     + "/B0" + _fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 8, 3) + "/" + _fake(_B62, 24), "See https://hooks.slack.com/"),
    ("stripe_key", "stripe.api_key = 'sk_live_" + _fake(_B62, 40) + "'", "Use sk_test_ keys in staging."),
    ("twilio_api_key", "TWILIO_API_KEY=SK" + _fake(_HEX, 32), "SKU12345 in stock"),
    ("sendgrid_api_key", "SENDGRID_API_KEY=SG." + _fake(_B64URL, 22) + "." + _fake(_B64URL, 43, 5), "SG.1 is a label"),
    ("shopify_token", "X-Shopify-Access-Token: shpat_" + _fake(_HEX, 32), "shpat_ prefix"),
    ("grafana_token", "GRAFANA_TOKEN=glsa_" + _fake(_B62, 32) + "_" + _fake(_HEX, 8), "glsa_ prefix"),
]


@pytest.mark.parametrize("kind, positive, negative", COVERED, ids=[c[0] for c in COVERED])
def test_kinds_gitleaks_now_covers_keep_their_names(kind: str, positive: str, negative: str) -> None:
    full = Redactor(pii=True)
    res = full.redact(positive)
    assert kind in res.counts and f"[REDACTED:{kind}]" in res.text, res.text
    assert not full.redact(negative).changed


def test_gitleaks_rules_find_their_own_test_cases() -> None:
    """A sample of gitleaks' per-rule true positives (bench/data): the translated rules still find them."""
    cases = json.loads(CASES.read_text())["cases"]
    loaded = {r.rule_id for r in gitleaks.load().rules}
    missed = []
    for rule_id, c in cases.items():
        if rule_id not in loaded:
            continue
        for tp in c["tp"][:3]:
            res = GL.redact(tp["text"])
            if (tp["secret"] in res.text) if tp["secret"] else not res.changed:
                missed.append((rule_id, tp["text"][:80]))
    assert missed == []


# ------------------------------------------------------------------------------------------ speed path
def test_literal_starts_of_common_shapes() -> None:
    assert literal_starts(r"(?i)(?:access|auth|(?-i:[Aa]pi|API)|key)\s*=", re.ASCII) == ("access", "api", "auth", "key")
    assert literal_starts(r"\b((?:A3T[A-Z0-9]|AKIA|ASIA)[A-Z2-7]{16})\b") == ("a3t", "akia", "asia")
    assert literal_starts(r"(?<![\w-])[\"']?(?P<n>\w+)=") is None  # may start anywhere: searched as usual
    assert literal_starts(r"[MNO][A-Za-z0-9]{23}") is None  # one-character starts are not worth it


def test_matching_at_literal_starts_finds_what_a_search_finds() -> None:
    from remem.bench.redaction_corpus import build_corpus
    from remem.core.redact.matching import Spans, _judge, _matches_at_starts, ascii_lower

    def searched(rule, text: str) -> list[tuple[int, int]]:  # the plain search loop, position by position
        out, pos = [], 0
        while (m := rule.compiled.search(text, pos)) is not None:
            found = _judge(rule, m, Spans([]))
            if found:
                out.append((found.start, found.end))
                pos = max(m.end(), m.start() + 1)
            else:
                pos = m.start() + 1
        return out

    texts = [s.text for s in build_corpus()][::2]
    rules = [r for r in Redactor(pii=True).rules if r.starts]
    assert len(rules) > 150
    compared = 0
    for rule in rules:
        for text in texts:
            low = ascii_lower(text)
            if not rule.applies(low):
                continue
            fast = [(f.start, f.end) for f in _matches_at_starts(rule, text, low, Spans([]))]
            assert fast == searched(rule, text), (rule.name, text[:80])
            compared += 1
    assert compared > 500


# ------------------------------------------------------------------------------------------ refresh
def test_refresh_vendors_toml_licence_and_commit_from_a_checkout(tmp_path: Path) -> None:
    from remem.core.redact.refresh_rules import refresh

    repo = tmp_path / "gitleaks"
    (repo / "config").mkdir(parents=True)
    (repo / "config" / "gitleaks.toml").write_bytes(gitleaks.TOML_PATH.read_bytes())
    (repo / "LICENSE").write_text("MIT License\n\nCopyright (c) 2019 Zachary Rice\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "rules"], check=True)
    subprocess.run(git + ["tag", "v8.99.0"], check=True)
    dest = tmp_path / "data"
    facts = refresh(repo, dest=dest)
    assert (dest / "gitleaks.toml").read_bytes() == gitleaks.TOML_PATH.read_bytes()
    assert "Zachary Rice" in (dest / "gitleaks.LICENSE").read_text()
    recorded = json.loads((dest / "gitleaks.source.json").read_text())
    assert recorded["version"] == "v8.99.0" and len(recorded["commit"]) == 40 and recorded["rules"] >= 200
    assert facts["translated"] == len(gitleaks.load().rules)


def test_the_stored_translation_is_the_translation_of_the_vendored_toml(tmp_path: Path, monkeypatch) -> None:
    raw = gitleaks.TOML_PATH.read_bytes()
    stored = json.loads(gitleaks.CACHE_PATH.read_text())
    assert {k: stored[k] for k in ("toml_sha256", "translator")} == gitleaks.cache_key(raw)
    fresh = json.loads(json.dumps(gitleaks.translate_data(gitleaks.parse_toml(raw))))
    assert {k: stored[k] for k in fresh} == fresh  # refresh_rules writes it; a stale copy fails here
    # a stored translation for another TOML is ignored: the TOML is parsed and translated instead
    monkeypatch.setattr(gitleaks, "CACHE_PATH", tmp_path / "stale.json")
    (tmp_path / "stale.json").write_text(json.dumps({**stored, "toml_sha256": "0" * 64, "rules": []}))
    assert len(gitleaks.load.__wrapped__().rules) == len(stored["rules"])


@pytest.mark.parametrize("secret", [
    "npm_prn47NcsVTGfAlSeiuXzKSm7fpX7qvBQ2GAU",  # holds "fAlSe"
    "npm_truE7NcsVTGflSeiuXzKSm7fpX7qvBQ2GAU1",  # starts with "true" after its prefix
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6nULL",  # ends with "null"
])
def test_a_token_holding_true_false_or_null_is_still_redacted(secret: str) -> None:
    """gitleaks' global allow-list ``(?i)^true|false|null$`` means a secret that is one of those words; read as
    written, it let through every secret containing "false" (or starting with "true", ending with "null")."""
    assert secret not in GL.redact(f"export NPM_CONFIG={secret}").text
    assert secret not in Redactor().redact(f"For the npm setup use this: {secret} and keep it handy.").text
    assert gitleaks._whole("(?i)^true|false|null$") == "(?i)^(?:true|false|null)$"
    assert gitleaks._whole("^(a|b)$") == "^(a|b)$" and gitleaks._whole(r"^a\|b$") == r"^a\|b$"


def test_a_setting_of_true_false_or_null_is_no_secret() -> None:
    for text in ("token: false", "GITHUB_TOKEN=null", "api_key = 'true'"):
        assert Redactor().redact(text).text == text
