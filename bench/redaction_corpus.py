"""Deterministic labelled corpus for the redaction benchmark.

Positives embed realistic *fake* secrets (right shape, random content from a
seeded RNG) in the places they actually leak: shell history, .env files, YAML,
JSON, Python/JS source, logs and chat prose. Negatives are the look-alikes a
redactor must leave alone: commit hashes, UUIDs, digests, base64 images,
versions, paths, prose about passwords, code that *reads* secrets, lorem.

Each :class:`Sample` lists the ``secrets`` that must disappear and ``keep``
substrings (variable names, hosts, users) that must survive redaction.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

B62 = string.ascii_letters + string.digits
B64URL = B62 + "-_"
B64 = B62 + "+/"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Sample:
    """One labelled text; a negative has no ``secrets``."""

    text: str
    group: str
    label: str
    secrets: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    pii: bool = False
    unlabelled: bool = False  # a positive whose secret is not marked: any redaction counts as the hit

    @property
    def positive(self) -> bool:
        return bool(self.secrets) or self.unlabelled


# --------------------------------------------------------------------------- #
# Fake secret generators
# --------------------------------------------------------------------------- #


def rs(rng: random.Random, alphabet: str, n: int) -> str:
    """Random string that contains at least one digit, lower and upper when possible."""
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        need = [c for c in (string.digits, string.ascii_lowercase, string.ascii_uppercase) if set(c) & set(alphabet)]
        if all(set(s) & set(c) for c in need):
            return s


def human_password(rng: random.Random) -> str:
    words = ["Summer", "tiger", "Blue", "horse", "Falcon", "maple", "Rocket", "winter", "Coffee", "dragon"]
    style = rng.randrange(4)
    if style == 0:
        return rng.choice(words) + str(rng.randrange(1970, 2030)) + rng.choice("!@#$%&*")
    if style == 1:
        return rs(rng, B62 + "!#%*+-_", rng.randrange(14, 28))
    if style == 2:
        return rng.choice(words).lower() + "-" + rng.choice(words).lower() + "-" + str(rng.randrange(10, 99))
    return rs(rng, B62, rng.randrange(10, 18))


def _provider_keys(rng: random.Random) -> dict[str, Callable[[], str]]:
    """Kind -> generator of a fake token with the provider's real shape."""
    return {
        "openai_proj": lambda: "sk-proj-" + rs(rng, B64URL, 156),
        "openai_legacy": lambda: "sk-" + rs(rng, B62, 20) + "T3BlbkFJ" + rs(rng, B62, 20),
        "anthropic": lambda: "sk-ant-api03-" + rs(rng, B64URL, 93) + "AA",
        "aws_key_id": lambda: rng.choice(["AKIA", "ASIA"]) + rs(rng, UPPER_DIGITS, 16),
        "gcp_api_key": lambda: "AIza" + rs(rng, B64URL, 35),
        "github_classic": lambda: rng.choice(["ghp_", "gho_", "ghs_", "ghu_"]) + rs(rng, B62, 36),
        "github_fine": lambda: "github_pat_" + rs(rng, B62, 22) + "_" + rs(rng, B62, 59),
        "gitlab": lambda: "glpat-" + rs(rng, B64URL, 20),
        "slack_bot": lambda: "xoxb-" + "".join(rng.choice(string.digits) for _ in range(12)) + "-"
        + "".join(rng.choice(string.digits) for _ in range(13)) + "-" + rs(rng, B62, 24),
        "slack_app": lambda: "xapp-1-A0" + rs(rng, UPPER_DIGITS, 9) + "-" + "".join(rng.choice(string.digits) for _ in range(13))
        + "-" + rs(rng, HEX, 64),
        "stripe_live": lambda: rng.choice(["sk_live_", "rk_live_", "sk_test_"]) + rs(rng, B62, rng.choice([24, 99])),
        "twilio_key": lambda: "SK" + rs(rng, HEX, 32),
        "sendgrid": lambda: "SG." + rs(rng, B64URL, 22) + "." + rs(rng, B64URL, 43),
        "npm": lambda: "npm_" + rs(rng, B62, 36),
        "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + rs(rng, B64URL, 150),
        "huggingface": lambda: "hf_" + rs(rng, B62, 34),
        "google_oauth": lambda: "ya29.a0" + rs(rng, B64URL, 150),
        "discord_bot": lambda: rng.choice("MNO") + rs(rng, B62, 25) + "." + rs(rng, B64URL, 6) + "." + rs(rng, B64URL, 38),
        "mailgun": lambda: "key-" + rs(rng, HEX, 32),
        "digitalocean": lambda: "dop_v1_" + rs(rng, HEX, 64),
        "shopify": lambda: "shpat_" + rs(rng, HEX, 32),
        "databricks": lambda: "dapi" + rs(rng, HEX, 32),
        "vault": lambda: "hvs." + rs(rng, B64URL, 90),
        "groq": lambda: "gsk_" + rs(rng, B62, 52),
    }


_ENV_NAMES = {
    "openai_proj": "OPENAI_API_KEY", "openai_legacy": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
    "aws_key_id": "AWS_ACCESS_KEY_ID", "gcp_api_key": "GOOGLE_API_KEY", "github_classic": "GITHUB_TOKEN",
    "github_fine": "GH_TOKEN", "gitlab": "GITLAB_TOKEN", "slack_bot": "SLACK_BOT_TOKEN", "slack_app": "SLACK_APP_TOKEN",
    "stripe_live": "STRIPE_SECRET_KEY", "twilio_key": "TWILIO_API_KEY", "sendgrid": "SENDGRID_API_KEY",
    "npm": "NPM_TOKEN", "pypi": "TWINE_PASSWORD", "huggingface": "HF_TOKEN", "google_oauth": "GOOGLE_ACCESS_TOKEN",
    "discord_bot": "DISCORD_BOT_TOKEN", "mailgun": "MAILGUN_API_KEY", "digitalocean": "DIGITALOCEAN_TOKEN",
    "shopify": "SHOPIFY_ACCESS_TOKEN", "databricks": "DATABRICKS_TOKEN", "vault": "VAULT_TOKEN", "groq": "GROQ_API_KEY",
}

# Where a bare provider token shows up, with and without a telling variable name.
_PROVIDER_CONTEXTS: tuple[str, ...] = (
    "export {name}={v}",
    "{name}={v}",
    '{name}="{v}"',
    "  {lname}: {v}",
    '{{"{lname}": "{v}"}}',
    "os.environ[\"{name}\"] = \"{v}\"",
    "const client = new Client({{ apiKey: '{v}' }});",
    "I accidentally pasted my key {v} into the chat, can you rotate it?",
    "2024-03-11T09:14:07Z DEBUG auth ok using credential {v} for tenant acme",
    "here you go: {v}",
    "$ curl https://api.example.com/v1/things -H 'X-Api-Key: {v}'",
    "[default]\n{lname} = {v}",
)


def provider_samples(rng: random.Random) -> Iterator[Sample]:
    gens = _provider_keys(rng)
    for kind, gen in gens.items():
        for ctx in rng.sample(_PROVIDER_CONTEXTS, 7):
            v = gen()
            name = _ENV_NAMES[kind]
            keep = (name,) if "{name}" in ctx else ((name.lower(),) if "{lname}" in ctx else ())
            text = ctx.format(name=name, lname=name.lower(), v=v)
            yield Sample(text, "provider_keys", kind, (v,), keep)
    # AWS secret access key: only meaningful in context
    for ctx in (
        "aws_secret_access_key = {v}",
        "export AWS_SECRET_ACCESS_KEY={v}",
        '"SecretAccessKey": "{v}",',
        "AWS_SECRET_ACCESS_KEY: {v}",
        "aws configure set aws_secret_access_key {v}",
    ):
        v = rs(rng, B64, 40)
        yield Sample(ctx.format(v=v), "provider_keys", "aws_secret", (v,))
    for _ in range(5):
        v = rs(rng, B64, 86) + "=="
        text = f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acme{rng.randrange(99)};AccountKey={v};EndpointSuffix=core.windows.net"
        yield Sample(text, "provider_keys", "azure_storage", (v,), ("AccountName=acme",))
    for _ in range(4):
        v = "/".join(["T0" + rs(rng, UPPER_DIGITS, 8), "B0" + rs(rng, UPPER_DIGITS, 8), rs(rng, B62, 24)])
        yield Sample(f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{v}", "provider_keys", "slack_webhook", (v,))


# --------------------------------------------------------------------------- #
# Key material
# --------------------------------------------------------------------------- #


def _pem(rng: random.Random, label: str) -> str:
    body = "\n".join(rs(rng, B64, 64) for _ in range(rng.randrange(4, 12)))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def _jwt(rng: random.Random) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    claims = json.dumps({"sub": str(rng.randrange(10**9)), "name": rng.choice(["Ada", "Lin", "Sam"]), "iat": 1716239022})
    payload = base64.urlsafe_b64encode(claims.encode()).rstrip(b"=").decode()
    return f"{header}.{payload}.{rs(rng, B64URL, 43)}"


def key_material_samples(rng: random.Random) -> Iterator[Sample]:
    for label in ("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY"):
        for ctx in ("$ cat ~/.ssh/id_deploy\n{v}\n$ ", "tls:\n  key: |\n{iv}\n", "Here is the key file:\n```\n{v}\n```"):
            pem = _pem(rng, label)
            indented = "\n".join("    " + line for line in pem.splitlines())
            body_line = pem.splitlines()[2]
            yield Sample(ctx.format(v=pem, iv=indented), "key_material", "pem", (body_line,))
    for _ in range(6):
        pem = _pem(rng, "PRIVATE KEY")
        sa = {
            "type": "service_account", "project_id": f"acme-prod-{rng.randrange(1000)}",
            "private_key_id": rs(rng, HEX, 40), "private_key": pem + "\n",
            "client_email": f"svc@acme-prod-{rng.randrange(1000)}.iam.gserviceaccount.com",
        }
        text = json.dumps(sa, indent=2)
        yield Sample(text, "key_material", "gcp_sa", (pem.splitlines()[1][:40], sa["private_key_id"]), ('"project_id"',))
    for ctx in (
        "Authorization: Bearer {v}",
        "id_token={v}",
        'localStorage.setItem("session", "{v}")',
        "decoded this JWT: {v} -- why is exp missing?",
        "2024-05-02 10:01:22 WARN rejected token {v} (expired)",
        "Set-Cookie: access_token={v}; HttpOnly; Secure",
    ):
        for _ in range(3):
            v = _jwt(rng)
            yield Sample(ctx.format(v=v), "key_material", "jwt", (v.split(".")[2],))


# --------------------------------------------------------------------------- #
# Credentials in URLs and headers
# --------------------------------------------------------------------------- #


def url_samples(rng: random.Random) -> Iterator[Sample]:
    templates = (
        "DATABASE_URL=postgres://{u}:{p}@db.internal:5432/app",
        "SQLALCHEMY_DATABASE_URI = 'postgresql+psycopg://{u}:{p}@10.0.3.7/analytics'",
        "mongodb+srv://{u}:{p}@cluster0.ab1cd.mongodb.net/?retryWrites=true",
        "REDIS_URL=redis://{u}:{p}@cache.acme.io:6379/0",
        "amqp://{u}:{p}@rabbit:5672/%2f",
        "git remote add origin https://{u}:{p}@git.acme.io/platform/api.git",
        "pip install --index-url https://{u}:{p}@pypi.acme.io/simple/ acme-sdk",
        "Connection failed for mysql://{u}:{p}@mysql-primary:3306/orders (timeout)",
        "  url: jdbc:postgresql://{u}:{p}@pg:5432/db",
        "ftp://{u}:{p}@files.acme.io/exports/",
    )
    users = ("app", "admin", "deploy", "svc_reporting", "alice", "root")
    for t in templates:
        for _ in range(4):
            u, p = rng.choice(users), human_password(rng).replace("@", "#").replace("/", "_").replace("%", "x")
            yield Sample(t.format(u=u, p=p), "url_credentials", "url_password", (p,), (u + ":",))


def header_samples(rng: random.Random) -> Iterator[Sample]:
    for _ in range(8):
        v = rs(rng, B62, rng.choice([32, 40, 64]))
        ctx = rng.choice((
            "curl -H 'Authorization: Bearer {v}' https://api.acme.io/v2/users",
            "Authorization: Bearer {v}",
            'headers = {{"Authorization": "Bearer {v}"}}',
            "> GET /v1/me HTTP/1.1\n> Host: api.acme.io\n> Authorization: Bearer {v}",
        ))
        yield Sample(ctx.format(v=v), "auth_headers", "bearer", (v,), ("Authorization",))
    for _ in range(8):
        creds = f"{rng.choice(['admin', 'ci', 'grafana'])}:{human_password(rng)}"
        v = base64.b64encode(creds.encode()).decode()
        ctx = rng.choice(("Authorization: Basic {v}", "curl -H \"Authorization: Basic {v}\" https://ci.acme.io", "auth_header = 'Basic {v}'"))
        yield Sample(ctx.format(v=v), "auth_headers", "basic", (v,))
    for _ in range(6):
        v = rs(rng, B62, 40)
        ctx = rng.choice(("Authorization: token {v}", "X-Auth-Token: {v}", "PRIVATE-TOKEN: {v}"))
        yield Sample(ctx.format(v=v), "auth_headers", "authorization", (v,))


# --------------------------------------------------------------------------- #
# Assignments in code / config / shell
# --------------------------------------------------------------------------- #

_ASSIGN_NAMES = (
    "DB_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "REDIS_PASSWORD", "SMTP_PASS", "ADMIN_PWD",
    "SECRET_KEY", "JWT_SECRET", "CLIENT_SECRET", "API_KEY", "API_TOKEN", "AUTH_TOKEN", "WEBHOOK_SECRET",
    "ENCRYPTION_KEY", "SESSION_SECRET", "ACCESS_TOKEN", "PRIVATE_KEY_PASSPHRASE", "SIGNING_KEY",
)

_ASSIGN_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("env", "{N}={v}"),
    ("env", "export {N}={v}"),
    ("env", "export {N}=\"{v}\""),
    ("python", "{n} = \"{v}\""),
    ("python", "settings = Settings({n}='{v}')"),
    ("js", "const {c} = '{v}';"),
    ("yaml", "database:\n  host: db.internal\n  {n}: {v}\n"),
    ("yaml", "env:\n  - name: {N}\n    value: \"{v}\"\n"),
    ("json", '{{"host": "db.internal", "{n}": "{v}", "port": 5432}}'),
    ("toml", "[service]\n{n} = \"{v}\"\n"),
    ("ini", "[client]\nuser = app\n{n} = {v}\n"),
    ("docker", "docker run -e {N}={v} -p 8080:8080 acme/api:1.4.2"),
    ("compose", "    environment:\n      {N}: {v}\n"),
    ("k8s", "stringData:\n  {n}: \"{v}\"\n"),
    ("chat", "fyi the staging {n} is {v} for now"),
    ("log", "2024-06-01 08:00:00,123 DEBUG config loaded: {n}={v} host=db.internal"),
)


def _camel(name: str) -> str:
    head, *rest = name.lower().split("_")
    return head + "".join(p.title() for p in rest)


def assignment_samples(rng: random.Random) -> Iterator[Sample]:
    for kind, tpl in _ASSIGN_TEMPLATES:
        for _ in range(8):
            N = rng.choice(_ASSIGN_NAMES)
            v = human_password(rng) if "PASS" in N or "PWD" in N else rs(rng, rng.choice([B62, HEX, B64URL]), rng.choice([24, 32, 40]))
            if kind == "chat" and v.isalpha():
                v += "7"
            names = {"N": N, "n": N.lower(), "c": _camel(N)}
            text = tpl.format(v=v, **names)
            used = next(x for k, x in names.items() if "{" + k + "}" in tpl)
            yield Sample(text, "assignments", f"assign_{kind}", (v,), (used,))
    for tpl in (
        "mysql -h db -u root --password='{p}' app",
        "psql \"host=db user=app password={p} dbname=app\"",
        "mysqldump -u root -p{p} shop > shop.sql",
        "curl -u deploy:{p} https://nexus.acme.io/repository/",
        "sshpass -p '{p}' ssh deploy@10.0.0.5",
        "Server=tcp:acme.database.windows.net,1433;Database=app;User ID=app;Password={p};Encrypt=true;",
        "huggingface-cli login --token {t}",
        "machine api.acme.io login deploy password {p}",
        "<settings><servers><server><id>nexus</id><username>ci</username><password>{p}</password></server></servers></settings>",
        "//registry.npmjs.org/:_authToken={t}",
    ):
        for _ in range(3):
            p, t = human_password(rng).replace("'", ""), rs(rng, B62, 36)
            secret = t if "{t}" in tpl else p
            yield Sample(tpl.format(p=p, t=t), "assignments", "cli_or_connstring", (secret,))


def entropy_samples(rng: random.Random) -> Iterator[Sample]:
    templates = (
        "my api key is {v}",
        "The new webhook secret: {v} (rotated today)",
        "use this token {v} for the staging cluster",
        "Password for the shared drive -> {v}",
        "here's the client secret {v}, please keep it safe",
        "x-api-key {v}",
    )
    for tpl in templates:
        for _ in range(4):
            v = rs(rng, rng.choice([B62, B64URL]), rng.choice([24, 32, 48]))
            yield Sample(tpl.format(v=v), "entropy", "prose_secret", (v,))


# --------------------------------------------------------------------------- #
# PII (only redacted with pii=True)
# --------------------------------------------------------------------------- #


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    digits = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d)
        if i % 2 == 0:
            n = n * 2 - 9 if n * 2 > 9 else n * 2
        total += n
    return digits + str((10 - total % 10) % 10)


def _iban(rng: random.Random) -> str:
    country, bban = rng.choice((
        ("DE", "".join(rng.choice(string.digits) for _ in range(18))),
        ("FR", "".join(rng.choice(string.digits) for _ in range(23))),
        ("NL", "ABNA" + "".join(rng.choice(string.digits) for _ in range(10))),
        ("GB", "WEST" + "".join(rng.choice(string.digits) for _ in range(14))),
    ))
    rearranged = bban + country + "00"
    num = int("".join(str(int(c, 36)) for c in rearranged))
    check = 98 - num % 97
    raw = f"{country}{check:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def pii_samples(rng: random.Random) -> Iterator[Sample]:
    firsts, lasts = ("jane", "omar", "li", "sven", "maria", "kofi"), ("doe", "haddad", "wang", "berg", "rossi", "mensah")
    for _ in range(16):
        e = f"{rng.choice(firsts)}.{rng.choice(lasts)}{rng.choice(['', '+work', str(rng.randrange(99))])}@{rng.choice(['gmail.com', 'acme.io', 'uni-koeln.de', 'mail.co.uk'])}"
        ctx = rng.choice(("Please email {v} about the invoice.", "From: {v}\nSubject: hi", "user {v} signed up", '"email": "{v}"'))
        yield Sample(ctx.format(v=e), "pii", "email", (e,), pii=True)
    phones = lambda: rng.choice((  # noqa: E731
        f"+1 ({rng.randrange(200, 999)}) {rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}",
        f"{rng.randrange(200, 999)}-{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}",
        f"+44 20 {rng.randrange(7000, 8999)} {rng.randrange(1000, 9999)}",
        f"07{rng.randrange(100, 999)} {rng.randrange(100000, 999999)}",
        f"+49 30 {rng.randrange(1000000, 99999999)}",
        f"06 {rng.randrange(10, 99)} {rng.randrange(10, 99)} {rng.randrange(10, 99)} {rng.randrange(10, 99)}",
        f"+33 6 {rng.randrange(10, 99)} {rng.randrange(10, 99)} {rng.randrange(10, 99)} {rng.randrange(10, 99)}",
        f"+91 98{rng.randrange(10000000, 99999999)}",
    ))
    for _ in range(24):
        p = phones()
        ctx = rng.choice(("Call me at {v} after 5pm.", "phone: {v}", "Tel. {v}", "reach the on-call at {v}"))
        yield Sample(ctx.format(v=p), "pii", "phone", (p,), pii=True)
    for _ in range(12):
        prefix, length = rng.choice((("4", 16), ("51", 16), ("2221", 16), ("37", 15), ("6011", 16)))
        n = _luhn_complete(prefix, length, rng)
        sep = rng.choice(["", " ", "-"])
        shown = sep.join(n[i : i + 4] for i in range(0, len(n), 4)) if sep else n
        yield Sample(f"charge card {shown} exp 09/27", "pii", "credit_card", (shown,), pii=True)
    for _ in range(8):
        v = _iban(rng)
        yield Sample(f"Please wire the refund to IBAN {v}, ref 2291.", "pii", "iban", (v,), pii=True)
    for _ in range(8):
        v = f"{rng.randrange(100, 665)}-{rng.randrange(10, 99)}-{rng.randrange(1000, 9999)}"
        yield Sample(f"SSN: {v}", "pii", "us_ssn", (v,), pii=True)


# --------------------------------------------------------------------------- #
# Negatives
# --------------------------------------------------------------------------- #

_LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore "
    "magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo."
)

_STATIC_NEGATIVES: tuple[tuple[str, str], ...] = (
    ("code_reads_secret", "password = getpass.getpass('Password: ')"),
    ("code_reads_secret", 'token = request.headers.get("X-Token")'),
    ("code_reads_secret", "if secret is None:\n    raise ValueError('missing secret')"),
    ("code_reads_secret", "api_key = os.environ['OPENAI_API_KEY']"),
    ("code_reads_secret", "const token = process.env.GITHUB_TOKEN;"),
    ("code_reads_secret", "SECRET_KEY = env('DJANGO_SECRET_KEY')"),
    ("code_reads_secret", "client = OpenAI(api_key=api_key)"),
    ("code_reads_secret", "def login(username: str, password: str) -> Session:"),
    ("code_reads_secret", "    password: SecretStr = Field(..., min_length=12)"),
    ("code_reads_secret", "token: Optional[str] = None"),
    ("code_reads_secret", "self.password = password"),
    ("code_reads_secret", "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())"),
    ("code_reads_secret", "headers = {'Authorization': f'Bearer {token}'}"),
    ("code_reads_secret", "resp = requests.post(url, auth=(user, password), timeout=10)"),
    ("code_reads_secret", "export GITHUB_TOKEN=$(gh auth token)"),
    ("code_reads_secret", "export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:?missing}"),
    ("code_reads_secret", "DB_PASSWORD=${DB_PASSWORD}"),
    ("code_reads_secret", "password: \"{{ vault_db_password }}\""),
    ("code_reads_secret", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password"),
    ("code_reads_secret", "secret_key = settings.SECRET_KEY"),
    ("code_reads_secret", "token = jwt.encode(payload, signing_key, algorithm='HS256')"),
    ("code_reads_secret", "cursor.execute('UPDATE users SET password_hash = %s WHERE id = %s', (h, uid))"),
    ("code_reads_secret", "max_tokens = 4096\ntokens = tokenizer.encode(text)"),
    ("code_reads_secret", "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')"),
    ("code_reads_secret", "cache_key = f'user:{user_id}:profile'"),
    ("code_reads_secret", "<input type=\"password\" name=\"password\" autocomplete=\"current-password\">"),
    ("code_reads_secret", '{"password": {"type": "string", "minLength": 12}}'),
    ("code_reads_secret", "--password-stdin < ~/.docker/token.txt"),
    ("code_reads_secret", "kubectl create secret generic db --from-file=password=./pw.txt"),
    ("code_reads_secret", "OPENAI_API_KEY=<your-api-key>"),
    ("code_reads_secret", "API_KEY=your_api_key_here"),
    ("code_reads_secret", "ANTHROPIC_API_KEY=sk-ant-..."),
    ("code_reads_secret", "password: '********'"),
    ("code_reads_secret", "auth: required\ntoken_url: https://oauth2.googleapis.com/token"),
    ("code_reads_secret", "Authorization: Bearer <token>"),
    ("code_reads_secret", "DATABASE_URL=postgres://app@db.internal:5432/app"),
    ("code_reads_secret", "postgres://${DB_USER}:${DB_PASS}@${DB_HOST}/app"),
    ("code_reads_secret", "public_key = load_pem_public_key(data)"),
    ("code_reads_secret", "primary_key=True, sort_key='created_at'"),
    ("code_reads_secret", "password_min_length: 12\npassword_policy: strong"),
    ("prose", "Please reset your password using the link we emailed you."),
    ("prose", "The password must be at least 12 characters; password: see the vault entry."),
    ("prose", "We rotate the API secret every 90 days and the access token expires after 3600 seconds."),
    ("prose", "Bearer authentication is described in RFC 6750."),
    ("prose", "Basic authentication sends credentials with every request."),
    ("prose", "Alice prefers green tea and works on the token bucket rate limiter."),
    ("prose", "The secret to good ramen is the tare, not the broth."),
    ("prose", "Never commit your .env file; use a secrets manager instead."),
    ("prose", "My password manager is 1Password and I use a passkey for GitHub."),
    ("prose", "keys are rotated by the key-management service (KMS) automatically"),
    ("lorem", _LOREM),
    ("paths", "/usr/local/lib/python3.11/site-packages/remem/core/redact.py"),
    ("paths", "C:\\Users\\alice\\AppData\\Local\\Programs\\Python\\Python311\\python.exe"),
    ("paths", "see src/components/auth/PasswordResetForm.tsx and src/hooks/useSessionToken.ts"),
    ("versions", "Released v1.6.0 on 2024-05-01; requires python>=3.10,<3.13 and numpy 1.26.4"),
    ("versions", "node v20.11.1, npm 10.2.4, typescript@5.4.5"),
    ("network", "listening on 0.0.0.0:8080, upstream 10.12.4.201:5432, ipv6 [2001:db8::1]:443"),
    ("base64_words", "echo aGVsbG8gd29ybGQ= | base64 -d   # prints hello world"),
    ("base64_words", "The payload field was eyJ1c2VyIjoiYWxpY2UifQ== which decodes to a user object"),
)


def negative_samples(rng: random.Random) -> Iterator[Sample]:
    for label, text in _STATIC_NEGATIVES:
        yield Sample(text, "negatives", label)
    for _ in range(30):
        h = rs(rng, HEX, 40)
        ctx = rng.choice((
            "commit {h}\nAuthor: Alice <alice>\nDate:   Tue May 7 10:00:00 2024",
            "Merge pull request #42 from acme/fix-token-refresh ({s})",
            "git cherry-pick {h}",
            "fixed in {s}: token refresh race",
            "revision: {h}",
        ))
        yield Sample(ctx.format(h=h, s=h[:7]), "negatives", "commit_hash")
    for _ in range(25):
        u = "-".join(rs(rng, HEX, n) for n in (8, 4, 4, 4, 12))
        ctx = rng.choice(("request_id={u} status=200", "session {u} started", '"id": "{u}"', "trace {u} span ok", "user_id: {u}"))
        yield Sample(ctx.format(u=u), "negatives", "uuid")
    for _ in range(25):
        d = rs(rng, HEX, 64)
        ctx = rng.choice((
            "image: ghcr.io/acme/api@sha256:{d}",
            "{d}  dist/remem-0.1.0-py3-none-any.whl",
            '"checksum": "sha256:{d}"',
            "digest: sha256:{d}",
            "--hash=sha256:{d}",
        ))
        yield Sample(ctx.format(d=d), "negatives", "sha256")
    for _ in range(20):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(48, 120)))
        b = base64.b64encode(b"\x89PNG\r\n\x1a\n" + raw).decode()
        ctx = rng.choice(("![icon](data:image/png;base64,{b})", '<img src="data:image/png;base64,{b}">', '"thumbnail": "data:image/png;base64,{b}"'))
        yield Sample(ctx.format(b=b), "negatives", "base64_image")
    for _ in range(20):
        i = rs(rng, B64, 86)
        yield Sample(f'"integrity": "sha512-{i}=="', "negatives", "npm_integrity")
    for _ in range(20):
        v = f"v{rng.randrange(0, 5)}.{rng.randrange(0, 30)}.{rng.randrange(0, 20)}"
        ctx = rng.choice(("bump to {v}", "pip install remem=={n}", "Release {v} (build 2024.{m}.{d})", "docker pull acme/api:{n}-slim"))
        yield Sample(ctx.format(v=v, n=v[1:], m=rng.randrange(1, 12), d=rng.randrange(1, 28)), "negatives", "version")
    for _ in range(20):
        text = rng.choice((
            "2024-0{m}-1{d} 12:3{d}:0{m} INFO worker-{w} processed {n} jobs in {t}ms",
            "ts={e} level=info msg=\"cache hit\" key=user:{n} ttl=300",
            "GET /api/v1/items/{n}?page={m} 200 {t}ms",
            "order #{n} shipped to warehouse {w} on 2024-0{m}-2{d}",
        )).format(m=rng.randrange(1, 9), d=rng.randrange(0, 9), w=rng.randrange(1, 64), n=rng.randrange(10**5, 10**9), t=rng.randrange(1, 999), e=rng.randrange(1_600_000_000, 1_800_000_000))
        yield Sample(text, "negatives", "logs")
    for _ in range(15):
        cls = "".join(rng.choice(("Abstract", "Session", "Token", "Factory", "Manager", "Provider", "Secret", "Auth", "Config", "Loader")) for _ in range(4))
        ctx = rng.choice(("class {c}(BaseModel):", "from acme.auth import {c}", "token_manager = {c}()", "secret_store: {c} = {c}.from_env()"))
        yield Sample(ctx.format(c=cls), "negatives", "identifiers")


def pii_negative_samples(rng: random.Random) -> Iterator[Sample]:
    for _ in range(30):
        text = rng.choice((
            "version 10.{a}.{b} released 2024-0{m}-1{d}",
            "build 2024.{m}.{d}.{b} on host 10.{a}.{b}.{m}",
            "order id {big} total 129.99 EUR",
            "ts {epoch}",
            "Ubuntu 22.04.{m} LTS, kernel 6.{a}.0-{b}-generic",
            "ISBN 978-{a}-{b}-{m}",
            "pi is 3.14159265358979, e is 2.71828182845904",
            "ports 8080, 8443, 9090 and 5432",
            "matrix shape (1024, 768) dtype float32, lr 3e-4",
            "git tag v{a}.{b}.{m} && git push origin v{a}.{b}.{m}",
            "alice@ on slack, see #eng-oncall",
            "install @types/node and @acme/sdk@1.2.3",
        )).format(a=rng.randrange(0, 99), b=rng.randrange(0, 300), m=rng.randrange(1, 9), d=rng.randrange(0, 9),
                  big=rng.randrange(10**11, 10**12), epoch=rng.randrange(1_600_000_000_000, 1_800_000_000_000))
        yield Sample(text, "negatives", "pii_lookalike", pii=True)


# Harder, mixed-language positives: (template, which placeholder is the secret).
_MORE_POSITIVES: tuple[str, ...] = (
    'db_password = "{p}"\ndb_user     = "app"',  # terraform.tfvars
    "spring.datasource.password={p}",
    '"ConnectionStrings": {{"Default": "Server=sql01;Database=shop;User Id=shop;Password={p};"}}',
    "define('DB_PASSWORD', '{p}');",
    'const apiKey = "{t}"',
    "config.secret_key_base = '{t}'",
    "the wifi password is {p} btw",
    "docker login -u ci --password {p} registry.acme.io",
    "db.internal:5432:app:app:{p}",
    "      - POSTGRES_PASSWORD={p}",
    "    with:\n      api-token: {t}",
    "$env:AZURE_CLIENT_SECRET = \"{t}\"",
    "set SECRET_KEY={t}",
    "SECRET_KEY: str = \"{t}\"",
    "ENCRYPTION_KEY = b'{t}'",
    "aws_session_token = {t}",
    "Your new password is {p}. Please change it after first login.",
)

# Harder negatives: real config/code that mentions secrets without containing one.
_MORE_NEGATIVES: tuple[str, ...] = (
    'variable "db_password" {{\n  type      = string\n  sensitive = true\n}}',
    "      - POSTGRES_PASSWORD=${{POSTGRES_PASSWORD}}",
    "        env:\n          NPM_TOKEN: ${{{{ secrets.NPM_TOKEN }}}}",
    "spring.datasource.password=${{DB_PASSWORD}}",
    "password = config.get('db', 'password')",
    "token = await get_access_token(client_id, scopes=['openid'])",
    "if not api_key:\n    raise RuntimeError('OPENAI_API_KEY is not set')",
    "secret = secrets.token_urlsafe(32)",
    "key = hashlib.sha256(data).hexdigest()",
    "self.tokens = [t for t in tokens if t.strip()]",
    "CREATE TABLE users (id SERIAL, email TEXT, password_hash VARCHAR(255) NOT NULL);",
    "## Authentication\n\nSet `OPENAI_API_KEY` in your environment. Never paste your key into issues.",
    "The tokenizer splits 'password123' into ['password', '123'].",
    "Q: How do I rotate my GitHub token? A: Settings -> Developer settings -> Tokens.",
    "auth_method: oauth2\ntoken_endpoint: https://login.acme.io/oauth/token\nscopes: [read, write]",
    "const passwordInput = document.querySelector('#password');",
    "export const TOKEN_TTL_SECONDS = 3600;",
    "  --password-file=/run/secrets/db_password",
    "kubectl get secret db-creds -o jsonpath='{{.data.password}}' | base64 -d",
    "func Login(user, password string) (*Session, error) {{",
    "assert verify_password(stored_hash, 'wrong') is False",
    "color: #3f2a9c; background: url(/img/key-icon.svg);",
    "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 is the md5 of the file",
    "Compiled 312 files in 4.21s (cache key: node-modules-9f86d081884c7d659a2feaa0c55ad015)",
)


def harder_samples(rng: random.Random) -> Iterator[Sample]:
    for tpl in _MORE_POSITIVES:
        for _ in range(3):
            p, t = human_password(rng).replace("'", "").replace('"', ""), rs(rng, B62, 40)
            secret = t if "{t}" in tpl else p
            yield Sample(tpl.format(p=p, t=t), "assignments", "harder_positive", (secret,))
    for tpl in _MORE_NEGATIVES:
        yield Sample(tpl.format(), "negatives", "harder_negative")


# --------------------------------------------------------------------------- #
# Chat phrasings (several languages), key id + secret on one line, Brazilian PII
# --------------------------------------------------------------------------- #

_CHAT_POSITIVES: tuple[tuple[str, str], ...] = (
    ("en", "the password is {p}"),
    ("en", "my password is {p}, don't tell anyone"),
    ("en", "The password for the staging db is {p}."),
    ("en", "fyi the vpn password is now {p}"),
    ("en", "here's the api key: {t}"),
    ("en", "Authorization: Basic {basic}"),
    ("en", "use header Authorization: Bearer {t}"),
    ("pt", "a senha é {p}"),
    ("pt", "minha senha: {p}"),
    ("pt", "A senha do banco de dados é {p}, não compartilhe."),
    ("pt", "o token de acesso é {t}"),
    ("pt", "token de acesso: {t}"),
    ("pt", "segue a chave de API: {t}"),
    ("es", "la contraseña es {p}"),
    ("es", "mi contraseña del correo es {p}"),
    ("fr", "le mot de passe est {p}"),
    ("fr", "mon mot de passe du wifi est {p}"),
    ("de", "das Passwort lautet {p}"),
    ("de", "mein Kennwort ist {p}"),
    ("it", "la password è {p}"),
)
_CHAT_NEGATIVES: tuple[str, ...] = (
    "the password is incorrect, please try again",
    "My password is too short, what is the minimum?",
    "the token is expired and the secret is rotated every week",
    "a senha é forte e o token de acesso expira em uma hora",
    "A senha deve ter pelo menos 12 caracteres.",
    "minha senha: esqueci, como faço para redefinir?",
    "la contraseña es obligatoria",
    "le mot de passe est incorrect",
    "das Passwort ist abgelaufen",
    "o token é gerado pelo servidor: veja a documentação",
)


def chat_samples(rng: random.Random) -> Iterator[Sample]:
    for lang, tpl in _CHAT_POSITIVES:
        for _ in range(3):
            p = human_password(rng).replace("'", "")
            t = rs(rng, B62, rng.choice([24, 32, 40]))
            basic = base64.b64encode(f"{rng.choice(['admin', 'ci', 'svc'])}:{p}".encode()).decode()
            secret = basic if "{basic}" in tpl else t if "{t}" in tpl else p
            yield Sample(tpl.format(p=p, t=t, basic=basic), "chat", f"chat_{lang}", (secret,))
    for _ in range(6):
        key_id = "AKIA" + rs(rng, UPPER_DIGITS, 16)
        secret = rs(rng, B64, 40)
        tpl = rng.choice(("{i} / {s}", "key {i} secret {s}", "{i}:{s}", "Access key ID,Secret access key\n{i},{s}",
                          "aws creds are {i} and {s}", "use {i} with {s} for the deploy user"))
        yield Sample(tpl.format(i=key_id, s=secret), "chat", "aws_pair", (key_id, secret))
    for text in _CHAT_NEGATIVES:
        yield Sample(text, "negatives", "chat_prose")


def _cpf(rng: random.Random) -> str:
    from stdnum.br import cpf

    base = "".join(rng.choice(string.digits) for _ in range(9))
    return cpf.format(next(base + f"{d:02d}" for d in range(100) if cpf.is_valid(base + f"{d:02d}")))


def _cnpj(rng: random.Random, alnum: bool = False) -> str:
    from stdnum.br import cnpj

    alphabet = string.digits + (string.ascii_uppercase if alnum else "")
    base = "".join(rng.choice(alphabet) for _ in range(8)) + "0001"
    return cnpj.format(next(base + f"{d:02d}" for d in range(100) if cnpj.is_valid(base + f"{d:02d}")))


def br_pii_samples(rng: random.Random) -> Iterator[Sample]:
    for _ in range(8):
        v = _cpf(rng)
        shown = rng.choice((v, v.replace(".", "").replace("-", "")))
        ctx = rng.choice(("CPF: {v}", "o CPF do cliente é {v}", "cpf {v} cadastrado", '"cpf": "{v}"'))
        yield Sample(ctx.format(v=shown), "pii", "br_cpf", (shown,), pii=True)
    for i in range(8):
        v = _cnpj(rng, alnum=i % 3 == 2)
        shown = rng.choice((v, v.replace(".", "").replace("/", "").replace("-", "")))
        ctx = rng.choice(("CNPJ {v}", "fornecedor (CNPJ: {v})", "razão social ACME LTDA, CNPJ {v}"))
        yield Sample(ctx.format(v=shown), "pii", "br_cnpj", (shown,), pii=True)
    for _ in range(12):
        ddd = rng.choice(("11", "21", "31", "41", "51", "61", "71", "81", "85", "92"))
        mobile = "9" + "".join(rng.choice(string.digits) for _ in range(4))
        last = "".join(rng.choice(string.digits) for _ in range(4))
        v = rng.choice((f"({ddd}) {mobile}-{last}", f"+55 {ddd} {mobile}-{last}", f"+55 ({ddd}) {mobile}-{last}",
                        f"{ddd} {mobile}-{last}", f"+55{ddd}{mobile}{last}", f"({ddd}) 3{last[:3]}-{last}"))
        ctx = rng.choice(("me liga no {v}", "WhatsApp: {v}", "telefone {v} (comercial)", "Tel.: {v}"))
        yield Sample(ctx.format(v=v), "pii", "br_phone", (v,), pii=True)
    for text in ("pedido 529.982.247-26 enviado", "nota fiscal 52998224725 emitida", "protocolo 11.222.333/0001-82",
                 "versão 11 91234 5678 do arquivo", "build 2024 1234-5678", "lote 12345678901 (sem CPF)"):
        yield Sample(text, "negatives", "br_lookalike", pii=True)


def build_corpus(seed: int = 1337) -> list[Sample]:
    """The full labelled corpus; same seed -> identical corpus."""
    rng = random.Random(seed)
    parts = (
        provider_samples, key_material_samples, url_samples, header_samples, assignment_samples,
        entropy_samples, pii_samples, negative_samples, pii_negative_samples, harder_samples,
        chat_samples, br_pii_samples,
    )
    return [s for part in parts for s in part(rng)]


# --------------------------------------------------------------------------- #
# gitleaks' own test cases (bench/data/gitleaks_cases.json, from python -m remem.bench.gitleaks_cases)
# --------------------------------------------------------------------------- #

GITLEAKS_CASES = Path(__file__).with_name("data") / "gitleaks_cases.json"


def gitleaks_corpus(loaded_ids: set[str] | None = None) -> tuple[list[Sample], dict[str, int]]:
    """gitleaks' true positives (group ``gitleaks``) and false positives (group ``gitleaks_fp``).

    Cases of rules that are not loaded (path-only or path-scoped rules, rules not in the vendored TOML) are left
    out and counted; a false positive that is another rule's true positive is left out too (gitleaks checks
    each rule alone, remem runs them together)."""
    data = json.loads(GITLEAKS_CASES.read_text("utf-8"))
    cases: dict[str, dict] = data["cases"]
    all_tp = {tp["text"] for c in cases.values() for tp in c["tp"]}
    out: list[Sample] = []
    dropped = {"rules_not_loaded": 0, "cases_of_rules_not_loaded": 0, "fp_that_are_other_rules_tp": 0}
    for rule_id, c in sorted(cases.items()):
        if loaded_ids is not None and rule_id not in loaded_ids:
            dropped["rules_not_loaded"] += 1
            dropped["cases_of_rules_not_loaded"] += len(c["tp"]) + len(c["fp"])
            continue
        for tp in c["tp"]:
            secret = tp.get("secret")
            out.append(Sample(tp["text"], "gitleaks", rule_id, (secret,) if secret else (), unlabelled=not secret))
        for fp in c["fp"]:
            if fp in all_tp:
                dropped["fp_that_are_other_rules_tp"] += 1
                continue
            out.append(Sample(fp, "gitleaks_fp", rule_id))
    return out, dropped
