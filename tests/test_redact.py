"""Tests for remem.core.redact.redactor: rule table, false positives, API contract."""

from __future__ import annotations

import copy
import json
import threading

import pytest

from remem.core.redact.redactor import RedactionResult, Redactor, redact
from remem.core.redact.rules import PII_RULES, SECRET_RULES, Rule

FAKE_GH = "ghp_" + "A1b2" * 9
FAKE_AWS_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS documentation example
FAKE_OPENAI = "sk-proj-" + "Xy9Z" * 30


@pytest.fixture(scope="module")
def r() -> Redactor:
    return Redactor()


@pytest.fixture(scope="module")
def rp() -> Redactor:
    return Redactor(pii=True)


# --------------------------------------------------------------------- table


@pytest.mark.parametrize("rule", SECRET_RULES + PII_RULES, ids=lambda rl: rl.kind)
def test_rule_table_examples(rule: Rule, rp: Redactor) -> None:
    assert rule.positive and rule.negative, "every rule needs both examples"
    pos = rp.redact(rule.positive)
    assert rule.kind in pos.counts, (rule.kind, pos.text)
    assert f"[REDACTED:{rule.kind}]" in pos.text
    neg = rp.redact(rule.negative)
    assert not neg.changed, (rule.kind, neg.text)


@pytest.mark.parametrize("rule", SECRET_RULES + PII_RULES, ids=lambda rl: rl.kind)
def test_rule_table_idempotent(rule: Rule, rp: Redactor) -> None:
    once = rp.redact(rule.positive).text
    assert rp.redact(once).text == once
    assert not rp.redact(once).changed


# ---------------------------------------------------------- false positives

BENIGN = [
    "password = getpass()",
    "password = getpass.getpass('Password: ')",
    'token = request.headers.get("x")',
    "if secret is None:\n    return",
    "def login(username: str, password: str) -> Token:",
    "    password: SecretStr = Field(..., min_length=12)",
    "client = Client(api_key=api_key, token=self.token)",
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
    "request_id=550e8400-e29b-41d4-a716-446655440000",
    "/usr/local/lib/python3.11/site-packages/remem/core/redact.py",
    "released v1.6.0 on 2024-05-01 at 12:00:00Z",
    "connect to 192.168.1.20:5432 and [2001:db8::1]:443",
    "Please reset your password via the link; the password must be 12+ chars.",
    "max_tokens=1024",
    "secret_key = os.environ['SECRET_KEY']",
    "API_KEY=${API_KEY}",
    "OPENAI_API_KEY=<your-api-key>",
    "Authorization: Bearer <token>",
    'headers = {"Authorization": f"Bearer {token}"}',
    "image: ghcr.io/acme/api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "echo aGVsbG8gd29ybGQ= | base64 -d",
    "password: '{{ vault_db_password }}'",
    "TOKEN_TTL_SECONDS = 3600",
    "<input type=\"password\" name=\"password\">",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_unchanged(text: str, r: Redactor) -> None:
    res = r.redact(text)
    assert res.text == text and not res.changed and res.total == 0


# ---------------------------------------------------------------- behaviour


def test_assignment_keeps_variable_name(r: Redactor) -> None:
    res = r.redact("export DATABASE_PASSWORD=Tr0ub4dor-3\nAPI_TOKEN='q8Zk2LmN4pX7wK1sD3fG'")
    assert "DATABASE_PASSWORD=[REDACTED:password]" in res.text
    assert "API_TOKEN='[REDACTED:secret]'" in res.text
    assert "Tr0ub4dor" not in res.text and "q8Zk2" not in res.text


@pytest.mark.parametrize("text, redacted", [
    ("password=Tr0ub4dor&3", "password=[REDACTED:password]"),  # a review: "&3" was kept, in store and export
    ("password=Xy7&Zq9#Lm now", "password=[REDACTED:password] now"),
    ("password=abc;def123", "password=[REDACTED:password]"),
    ("password=p@ss,word99", "password=[REDACTED:password]"),
    ("DB_PASS=S3cr3t&Key!", "DB_PASS=[REDACTED:password]"),
    # where `& ; , |` end a value: before the next name=, whitespace, another separator or the end
    ("https://app.io/login?password=Hunter2x9&user=bob", "https://app.io/login?password=[REDACTED:password]&user=bob"),
    ("Server=db;Password=Hunter2x9;User Id=bob;", "Server=db;Password=[REDACTED:password];User Id=bob;"),
    ("connect(password=Hunter2x9, user=bob)", "connect(password=[REDACTED:password], user=bob)"),
    ("export PGPASSWORD=Hunter2x9; psql", "export PGPASSWORD=[REDACTED:password]; psql"),
])
def test_an_unquoted_value_is_redacted_whole(text: str, redacted: str, r: Redactor) -> None:
    assert r.redact(text).text == redacted


@pytest.mark.parametrize(
    "url, user, host",
    [
        ("postgres://app:Tr0ub4dor-3@db.internal:5432/app", "postgres://app:", "@db.internal:5432/app"),
        ("mongodb+srv://svc:pa55-Word@cluster0.mongodb.net/?x=1", "mongodb+srv://svc:", "@cluster0.mongodb.net"),
        ("redis://:s3cr3t-redis@cache:6379/0", "redis://:", "@cache:6379/0"),
    ],
)
def test_connection_string_redacts_password_only(url: str, user: str, host: str, r: Redactor) -> None:
    res = r.redact(f"DATABASE_URL={url}")
    assert user in res.text and host in res.text
    assert "[REDACTED:url_password]" in res.text
    assert res.counts == {"url_password": 1}


def test_counts_report_kinds_not_values(r: Redactor) -> None:
    text = f"key {FAKE_AWS_ID} and token {FAKE_GH} and {FAKE_GH}"
    res = r.redact(text)
    assert res.counts == {"aws_access_key_id": 1, "github_token": 2}
    assert res.total == 3 and res.changed
    for secret in (FAKE_AWS_ID, FAKE_GH):
        assert secret not in res.text and secret not in repr(res.counts) and secret not in repr(res)


def test_idempotent_on_mixed_text(r: Redactor) -> None:
    text = f"OPENAI_API_KEY={FAKE_OPENAI}\npassword: hunter22\ncurl -H 'Authorization: Bearer {'Zz9' * 10}'"
    once = r.redact(text)
    assert once.changed
    twice = r.redact(once.text)
    assert twice.text == once.text and not twice.changed


def test_existing_placeholders_left_alone(r: Redactor) -> None:
    text = "token = '[REDACTED:github_token]' and password=[REDACTED:password]"
    assert r.redact(text).text == text


def test_pii_off_by_default_on_when_asked(rp: Redactor) -> None:
    text = "mail jane.doe@acme-corp.com or call +1 (415) 555-0132, card 4111-1111-1111-1111"
    assert redact(text).text == text
    res = redact(text, pii=True)
    assert res.counts == {"email": 1, "phone": 1, "credit_card": 1}
    assert "jane.doe" not in res.text and "555-0132" not in res.text


def test_pii_lookalikes_not_redacted(rp: Redactor) -> None:
    text = "v10.2.3 built 2024-05-01 on 10.0.0.12, order 4111111111111112, ts 1716239022123"
    assert rp.redact(text).text == text


def test_allow_literal_and_regex() -> None:
    red = Redactor(allow=(FAKE_AWS_ID, r"ghp_A1b2\w+"))
    text = f"{FAKE_AWS_ID} {FAKE_GH} password=Tr0ub4dor-3"
    res = red.redact(text)
    assert FAKE_AWS_ID in res.text and FAKE_GH in res.text
    assert res.counts == {"password": 1}


def test_extra_patterns() -> None:
    red = Redactor(extra_patterns={"acme_key": r"ACME-[0-9A-F]{16}", "ticket": r"ref=(?P<secret>\d{6})"})
    res = red.redact("use ACME-0123456789ABCDEF ref=123456")
    assert res.text == "use [REDACTED:acme_key] ref=[REDACTED:ticket]"
    with pytest.raises(ValueError):
        Redactor(extra_patterns={"bad kind!": "x"})


def test_entropy_toggle() -> None:
    text = "here is my api token Zq8rT2vL9mN4pX7wK1sD3fG6hJ0yB5cE"
    assert Redactor().redact(text).counts == {"high_entropy": 1}
    assert not Redactor(entropy=False).redact(text).changed


# --------------------------------------------------------------- messages


def test_redact_messages_openai_tool_calls_not_mutating(r: Redactor) -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": f"my key is {FAKE_OPENAI}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc123",
                    "type": "function",
                    "function": {"name": "run", "arguments": '{"cmd": "export GITHUB_TOKEN=' + FAKE_GH + '"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc123", "content": "password=Tr0ub4dor-3 ok"},
    ]
    snapshot = copy.deepcopy(messages)
    out, counts = r.redact_messages(messages)
    assert messages == snapshot
    assert counts == {"openai_api_key": 1, "github_token": 1, "password": 1}
    assert out[2]["tool_calls"][0]["id"] == "call_abc123" and out[3]["tool_call_id"] == "call_abc123"
    assert out[2]["content"] is None
    flat = repr(out)
    assert FAKE_OPENAI not in flat and FAKE_GH not in flat and "Tr0ub4dor" not in flat


def test_redact_messages_anthropic_blocks(r: Redactor) -> None:
    img = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"AWS id {FAKE_AWS_ID}"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": img}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "bash",
                 "input": {"command": "psql postgres://app:Tr0ub4dor-3@db/app", "env": [["K", FAKE_GH]]}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                         "content": [{"type": "text", "text": "secret_key: 9a8b7c6d5e4f3a2b1c0d"}]}],
        },
    ]
    snapshot = copy.deepcopy(messages)
    out, counts = r.redact_messages(messages)
    assert messages == snapshot
    assert counts == {"aws_access_key_id": 1, "url_password": 1, "github_token": 1, "secret": 1}
    assert out[0]["content"][1]["source"]["data"] == img
    assert out[1]["content"][0]["input"]["command"] == "psql postgres://app:[REDACTED:url_password]@db/app"
    assert out[2]["content"][0]["tool_use_id"] == "toolu_01"


def test_a_data_url_is_left_alone_but_text_that_starts_with_data_is_redacted(r: Redactor) -> None:
    """An inline image is bytes; a pasted event stream ("data: {...}") is text and may hold a key."""
    url = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    out, counts = r.redact_messages([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                                  {"type": "text", "text": f"data: {FAKE_AWS_ID}"}]},
                                     {"role": "user", "content": f'data: {{"aws_key": "{FAKE_AWS_ID}"}}'}])
    assert out[0]["content"][0]["image_url"]["url"] == url
    assert FAKE_AWS_ID not in json.dumps(out) and counts == {"aws_access_key_id": 2}


# ----------------------------------------------------------------- contract


@pytest.mark.parametrize("bad", [None, b"bytes", 42, ["list"]])
def test_non_str_raises_type_error(bad: object, r: Redactor) -> None:
    with pytest.raises(TypeError, match="expects str"):
        r.redact(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "a", "İİİ password=Tr0ub4dor-3 ẞ", "\x00\ud800 token", "🔑" * 1000])
def test_never_raises_on_odd_str(text: str, rp: Redactor) -> None:
    res = rp.redact(text)
    assert isinstance(res, RedactionResult) and isinstance(res.text, str)


def test_unicode_offsets_preserved(r: Redactor) -> None:
    res = r.redact("İstanbul İ password=Tr0ub4dor-3 done")
    assert res.text == "İstanbul İ password=[REDACTED:password] done"


def test_large_input_is_linear_enough(r: Redactor) -> None:
    chunk = "lorem ipsum token: see docs; key=value; https://x.io/a?b=c " * 20
    big = (chunk + f"export GITHUB_TOKEN={FAKE_GH}\n") * 100  # ~125 KB
    res = r.redact(big)
    assert res.counts["github_token"] == 100


@pytest.mark.parametrize(
    "blob",
    ["-----BEGIN PRIVATE KEY----- abc! " * 3000, "eyJabc.eyJdef." * 8000, "https://u:p@h/ " * 6000, "x" * 200_000],
    ids=["pem-no-end", "jwt-like", "url-creds", "one-token"],
)
def test_pathological_inputs_stay_fast(blob: str, rp: Redactor) -> None:
    import time

    t0 = time.perf_counter()
    rp.redact(blob)
    assert time.perf_counter() - t0 < 1.5


def test_thread_safe_shared_instance(r: Redactor) -> None:
    text = f"GITHUB_TOKEN={FAKE_GH} password=Tr0ub4dor-3"
    expected = r.redact(text).text
    results: list[str] = []

    def work() -> None:
        for _ in range(50):
            results.append(r.redact(text).text)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(results) == {expected}


def test_module_level_redact_uses_cached_default() -> None:
    assert redact(f"x {FAKE_GH}").counts == {"github_token": 1}
    from remem.core.redact import redactor as mod

    assert mod._default(False) is mod._default(False)


@pytest.mark.parametrize("text", ["call +1 415 555 0132.", "ring me at (415) 555-0132.", "tel: +44 20 7946 0958."])
def test_phone_at_the_end_of_a_sentence_is_redacted_whole(text: str) -> None:
    res = Redactor(pii=True).redact(text)
    assert res.counts == {"phone": 1} and res.text.endswith("[REDACTED:phone].")


def test_allow_list_and_patterns_come_from_the_config_file(tmp_path, monkeypatch) -> None:
    from remem.core.redact.redactor import configured

    cfg = tmp_path / "redact.json"
    monkeypatch.setenv("REMEM_REDACT_CONFIG", str(cfg))
    internal = "ACME-" + "7" * 12
    fake_key = "ghp_" + "A1b2" * 9
    assert configured().redact(f"ticket {internal}").text == f"ticket {internal}"
    cfg.write_text(json.dumps({"allow": [fake_key], "patterns": {"acme_ticket": r"ACME-\d{12}"}}))
    res = configured().redact(f"ticket {internal} and token {fake_key}")
    assert res.text == f"ticket [REDACTED:acme_ticket] and token {fake_key}"
    cfg.write_text("{not json")
    with pytest.raises(ValueError, match="redact.json"):
        configured()


@pytest.mark.parametrize(
    "blob",
    ["curl x " * 4600, "key=" * 8000, "-----BEGIN PRIVATE KEY-----" + "A" * 30000, "a senha é " * 3200],
    ids=["many-curls-one-line", "many-keys", "pem-body-no-end", "many-senha"],
)
def test_pathological_inputs_at_the_text_size_limit_stay_fast(blob: str, rp: Redactor) -> None:
    """32 K characters (the store's text limit) of what makes backtracking regexes quadratic."""
    import time

    t0 = time.perf_counter()
    rp.redact(blob)
    assert time.perf_counter() - t0 < 3.0


@pytest.mark.parametrize("text", [
    '{"stdout": "cat key.txt\\nsk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5"}',
    "body=%7B%22key%22%3A%22sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5%22%7D",
    '{"out": "cookie:\\teyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"}',
])
def test_a_token_right_after_a_json_or_url_escape_is_redacted_whole(text: str, r: Redactor) -> None:
    """Review: the escape's letter or digit ("\\n", "%22") read as part of the token, so no rule started there."""
    out = r.redact(text).text
    assert "[REDACTED:" in out and "Ab3dEf6hIj9kLm2n" not in out and "SflKxwRJSMeKKF2QT4fwpMeJf36" not in out, out


@pytest.mark.parametrize("text, secret", [
    ("password: mypassword2024!", "mypassword2024!"),  # starts like the placeholder "my-password"
    ("DB_PASSWORD=MyKey#2024", "MyKey#2024"),
    ("export API_TOKEN=mytoken_8f3k2L9q", "mytoken_8f3k2L9q"),
    ("docker login -u deploy-bot -p 6nLwaMl8B5k8wRPsxPUl registry.example.com", "6nLwaMl8B5k8wRPsxPUl"),
    ("podman login -p 'S3cr3t!pass' quay.io", "S3cr3t!pass"),
    ("Cookie: theme=dark; sessionid=sN602VN9gO5ntMc5Ek8dmTzKMwkNSysx; lang=en", "sN602VN9gO5ntMc5Ek8dmTzKMwkNSysx"),
    ("Set-Cookie: PHPSESSID=a8f7d6s5f4g3h2j1k0l9; Path=/; HttpOnly", "a8f7d6s5f4g3h2j1k0l9"),
])
def test_a_credential_found_by_probing_credential_formats_is_redacted(
        text: str, secret: str, r: Redactor) -> None:
    assert secret not in r.redact(text).text


@pytest.mark.parametrize("text", ["api_key = 'your-api-key-here'", "password: my_secret_password",
                                  "TOKEN=add-your-token-here", "docker login -u bot -p $REGISTRY_TOKEN reg",
                                  "Set-Cookie: session_timeout=30minutes; Path=/"])
def test_a_placeholder_stays(text: str, r: Redactor) -> None:
    assert r.redact(text).text == text
