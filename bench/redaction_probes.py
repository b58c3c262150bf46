"""Redaction probes written apart from the rules: recall and false positives, before and after, in one run.

Run: ``python -m remem.bench.redaction_probes [-v] [--before REV]``.

The cases here were written from how people and tools write credentials, not from any rule's examples or
regexes: passwords and passphrases said in plain words, every HTTP ``Authorization`` scheme in the places a
header is written (curl, raw requests, client code, proxies, logs), New Relic keys, and provider token formats
pasted without a helpful variable name, followed by prose punctuation. Secrets are fake, generated from a
seeded RNG in the provider's shape. Negatives are ordinary prose that talks *about* passwords, headers and
keys, plus every turn of the LoCoMo development conversations (people chatting: nothing there is a secret).

``before`` is ``core/redact`` at ``--before`` (default :data:`BEFORE_REV`), loaded from git into a
temporary package in this process; ``after`` is the working tree. A positive is a hit when every labelled
secret is gone; a negative that changes at all is a false positive.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import importlib
import json
import random
import re
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = Path("/work/shared/data/locomo10.json")
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
# nouns and adjectives a person strings together for a memorable password (diceware style)
WORDS = ("anchor apple banjo basket beacon bicycle blanket bottle bracket breeze bucket button cactus camera "
         "candle canyon carpet castle cedar cherry cobalt comet copper cotton crayon cricket crystal dolphin "
         "donkey dragon eagle ember falcon feather fiddle forest fossil garden garlic ginger glacier goblet "
         "granite gravel harbor hazel helmet hollow hornet igloo island jacket jasmine jungle kettle kitten "
         "ladder lantern lemon lizard magnet mango marble meadow mirror mitten monsoon mustard needle nutmeg "
         "oyster paddle parrot pebble pepper pickle pillow pirate planet pocket pretzel puzzle quartz rabbit "
         "radish ribbon rocket saddle salmon shadow silver sketch sparrow spinach spoon staple teapot thistle "
         "thunder timber tomato tulip turnip velvet violet walnut willow window wizard yogurt zebra").split()


@dataclass(frozen=True)
class Probe:
    text: str
    group: str
    secrets: tuple[str, ...] = ()

    @property
    def positive(self) -> bool:
        return bool(self.secrets)


def rs(rng: random.Random, alphabet: str, n: int) -> str:
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        classes = [c for c in (string.digits, string.ascii_lowercase, string.ascii_uppercase) if set(c) & set(alphabet)]
        if all(set(s) & set(c) for c in classes):
            return s


# ------------------------------------------------------------------------------------------ positives
def plain_passwords(rng: random.Random) -> Iterator[Probe]:
    """Passwords and passphrases stated in words: joined words, spaced words, quoted words, a word and digits."""
    def joined(n: int) -> str:
        return "".join(rng.sample(WORDS, n))

    def spaced(n: int, sep: str = " ") -> str:
        return sep.join(rng.sample(WORDS, n))

    frames = [
        "the password is {s}", "The password is {s}", "ok so the password is {s}",
        "the wifi password is {s}, the network is called Hollow", "fyi the admin password is now {s}",
        "Password: {s}", "password - {s}", "the password for the NAS is {s}", "my password was {s} before the reset",
        "the password to the shared drive is {s}", "his laptop password is {s} (he told me to note it)",
        "remember: password {s}", "pw is {s}", "the passcode is {s}", "new password: {s}",
        "the password we agreed on is {s}", "the router's password is {s}.", "The vault password is {s}!",
    ]
    for frame in frames:
        s = joined(rng.choice((3, 4)))
        yield Probe(frame.format(s=s), "plain: joined words", (s,))
    phrase_frames = [
        "the passphrase is {s}", "passphrase: {s}", "my passphrase is {s}", "The GPG passphrase is {s}.",
        "ssh key passphrase: {s}", "the recovery passphrase is {s}", "passphrase for the backup disk is {s}",
        "the password is {s}", "Wallet seed phrase: {s}", "our shared passphrase is now {s}",
    ]
    for frame in phrase_frames:
        s = spaced(rng.choice((4, 5, 6)))
        yield Probe(frame.format(s=s), "plain: spaced words", tuple(s.split()))
    for frame in ("my passphrase is {s}", "passphrase: {s}", "the password is {s}", "use the passphrase {s}"):
        s = spaced(4, "-")
        yield Probe(frame.format(s=s), "plain: hyphenated words", (s,))
    quoted = [
        'the password is "{s}"', "the password is '{s}'", "Use the password “{s}” to log in",
        "set the password to '{s}'", 'the passphrase is "{s}"', "password is `{s}`",
        "I changed the wifi password to '{s}'", 'they said the password was "{s}"',
    ]
    for frame in quoted:
        s = rng.choice((rng.choice(WORDS), spaced(3)))
        yield Probe(frame.format(s=s), "plain: quoted", (s,))
    for frame in ("the password is {s}", "password: {s}", "the wifi password is {s}"):
        s = rng.choice(WORDS) + str(rng.randint(10, 9999))
        yield Probe(frame.format(s=s), "plain: word and digits", (s,))


def _basic(rng: random.Random) -> str:
    user = rng.choice(("admin", "deploy", "ci-bot", "alice", "svc_reports"))
    return base64.b64encode(f"{user}:{rs(rng, B62, rng.randint(8, 16))}".encode()).decode()


def auth_headers(rng: random.Random) -> Iterator[Probe]:
    """Every Authorization scheme, in every place a header is written."""
    schemes: list[tuple[str, Callable[[], tuple[str, tuple[str, ...]]]]] = [
        ("Basic", lambda: (lambda v: (f"Basic {v}", (v,)))(_basic(rng))),
        ("Bearer", lambda: (lambda v: (f"Bearer {v}", (v,)))(rs(rng, B62 + "-_.", rng.randint(24, 60)))),
        ("Bearer short", lambda: (lambda v: (f"Bearer {v}", (v,)))(rs(rng, B62, 16))),
        ("token", lambda: (lambda v: (f"token {v}", (v,)))(rs(rng, B62, 40))),
        ("Token token=", lambda: (lambda v: (f'Token token="{v}"', (v,)))(rs(rng, HEX, 32))),
        ("Digest", lambda: (lambda r, c: (
            f'Digest username="alice", realm="api@acme.io", nonce="{rs(rng, HEX, 32)}", uri="/v1/items", '
            f'qop=auth, nc=00000001, cnonce="{c}", response="{r}", opaque="{rs(rng, HEX, 32)}"', (r, c)))(
            rs(rng, HEX, 32), rs(rng, HEX, 16))),
        ("ApiKey", lambda: (lambda v: (f"ApiKey {v}", (v,)))(rs(rng, B62, 32))),
        ("SSWS", lambda: (lambda v: (f"SSWS 00{v}", (v,)))(rs(rng, B62 + "-_", 40))),
        ("Splunk", lambda: (lambda v: (f"Splunk {v}", (v,)))(
            f"{rs(rng, HEX, 8)}-{rs(rng, HEX, 4)}-{rs(rng, HEX, 4)}-{rs(rng, HEX, 4)}-{rs(rng, HEX, 12)}")),
        ("OAuth", lambda: (lambda t, s: (
            f'OAuth oauth_consumer_key="acme-app", oauth_token="{t}", oauth_signature_method="HMAC-SHA1", '
            f'oauth_timestamp="1717171717", oauth_nonce="{rs(rng, B62, 11)}", oauth_signature="{s}"', (t, s)))(
            rs(rng, B62, 40), rs(rng, B62, 27) + "%3D")),
        ("AWS4", lambda: (lambda s: (
            f"AWS4-HMAC-SHA256 Credential=AKIA{rs(rng, UPPER_DIGITS, 16)}/20240501/us-east-1/s3/aws4_request, "
            f"SignedHeaders=host;x-amz-date, Signature={s}", (s,)))(rs(rng, HEX, 64))),
        ("Negotiate", lambda: (lambda v: (f"Negotiate {v}", (v,)))("YII" + rs(rng, B62 + "+/", 60) + "==")),
        ("Bot", lambda: (lambda v: (f"Bot {v}", (v,)))(rs(rng, B62, 24) + "." + rs(rng, B62, 6) + "."
                                                      + rs(rng, B62 + "-_", 27))),
        ("Key", lambda: (lambda v: (f"Key {v}", (v,)))(rs(rng, B62, 32))),
    ]
    places = [
        "curl -H 'Authorization: {h}' https://api.acme.io/v1/items",
        'curl -H "Authorization: {h}" https://api.acme.io/v1/items',
        "GET /v1/items HTTP/1.1\nHost: api.acme.io\nAuthorization: {h}\nAccept: application/json",
        "requests.get(url, headers={{'Authorization': '{h}'}})",
        'fetch(url, {{ headers: {{ "Authorization": "{h}" }} }})',
        "  headers:\n    Authorization: {h}\n    Accept: application/json",
        'proxy_set_header Authorization "{h}";',
        "2024-05-01T12:00:03Z DEBUG outgoing request headers={{'Authorization': '{h}', 'User-Agent': 'x'}}",
        'req.Header.Set("Authorization", "{h}")',
        "http GET api.acme.io/v1/items 'Authorization:{h}'",
        "Proxy-Authorization: {h}",
        "the request had authorization: {h} and still got 401",
    ]
    for name, make in schemes:
        for place in rng.sample(places, 4):
            header, secrets = make()
            yield Probe(place.format(h=header), f"header: {name}", secrets)


def new_relic(rng: random.Random) -> Iterator[Probe]:
    keys = [lambda: "NRAK-" + rs(rng, UPPER_DIGITS, 27), lambda: "NRII-" + rs(rng, B62 + "-_", 32),
            lambda: "NRJS-" + rs(rng, HEX, 19)]
    frames = ["{k}", "use {k} for the NerdGraph calls", "NEW_RELIC_API_KEY={k}",
              "curl https://api.newrelic.com/graphql -H 'API-Key: {k}' -d @query.json",
              "newrelic.yml: license/api key {k}.", "the user key is {k}", "{{\"apiKey\": \"{k}\"}}",
              "here you go: {k} (rotate after the demo)"]
    for frame in frames:
        for make in keys:
            k = make()
            yield Probe(frame.format(k=k), "new relic", (k,))


def provider_formats(rng: random.Random) -> Iterator[Probe]:
    """Tokens with a provider's own prefix, pasted with no variable name, ending a sentence or a clause."""
    formats: dict[str, Callable[[], str]] = {
        "slack bot": lambda: f"xoxb-{rng.randint(10**10, 10**11)}-{rng.randint(10**10, 10**11)}-{rs(rng, B62, 24)}",
        "slack user": lambda: "xoxp-" + "-".join(str(rng.randint(10**10, 10**11)) for _ in range(3)) + "-"
                              + rs(rng, HEX, 32),
        "gitlab pat": lambda: "glpat-" + rs(rng, B62 + "-_", 20),
        "npm": lambda: "npm_" + rs(rng, B62, 36),
        "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + rs(rng, B62 + "-_", 60),
        "shopify": lambda: "shpat_" + rs(rng, HEX, 32),
        "stripe live": lambda: "sk_live_" + rs(rng, B62, 24),
        "stripe restricted": lambda: "rk_live_" + rs(rng, B62, 24),
        "sendgrid": lambda: "SG." + rs(rng, B62 + "-_", 22) + "." + rs(rng, B62 + "-_", 43),
        "postman": lambda: f"PMAK-{rs(rng, HEX, 24)}-{rs(rng, HEX, 34)}",
        "linear": lambda: "lin_api_" + rs(rng, B62, 40),
        "databricks": lambda: "dapi" + rs(rng, HEX, 32),
        "digitalocean": lambda: "dop_v1_" + rs(rng, HEX, 64),
        "grafana cloud": lambda: "glc_" + rs(rng, B62, 40),
        "grafana sa": lambda: f"glsa_{rs(rng, B62, 32)}_{rs(rng, HEX, 8)}",
        "vault": lambda: "hvs." + rs(rng, B62 + "_-", 95),
        "age": lambda: "AGE-SECRET-KEY-1" + "".join(rng.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58)),
        "anthropic": lambda: "sk-ant-api03-" + rs(rng, B62 + "-_", 93) + "AA",
        "pulumi": lambda: "pul-" + rs(rng, HEX, 40),
        "planetscale": lambda: "pscale_tkn_" + rs(rng, B62, 43),
        "prefect": lambda: "pnu_" + rs(rng, B62, 36),
        "doppler": lambda: "dp.st." + rs(rng, B62, 43),
        "typeform": lambda: "tfp_" + rs(rng, B62, 59),
        "readme": lambda: "rdme_" + rs(rng, "abcdefghijklmnopqrstuvwxyz0123456789", 70),
        "rubygems": lambda: "rubygems_" + rs(rng, HEX, 48),
        "perplexity": lambda: "pplx-" + rs(rng, B62, 48),
        "openrouter": lambda: "sk-or-v1-" + rs(rng, HEX, 64),
        "heroku v2": lambda: "HRKU-AA" + rs(rng, B62 + "_-", 58),
        "sourcegraph": lambda: "sgp_" + rs(rng, HEX, 16) + "_" + rs(rng, HEX, 40),
        "tailscale": lambda: "tskey-api-" + rs(rng, B62, 12) + "-" + rs(rng, B62, 32),
        "infracost": lambda: "ico-" + rs(rng, B62, 32),
        "octopus": lambda: "API-" + rs(rng, UPPER_DIGITS, 26),
        "flyio": lambda: "fo1_" + rs(rng, B62 + "_-", 43),
        "openshift": lambda: "sha256~" + rs(rng, B62 + "_-", 43),
        "easypost": lambda: "EZAK" + rs(rng, B62, 54),
        "dynatrace": lambda: f"dt0c01.{rs(rng, UPPER_DIGITS, 24)}.{rs(rng, UPPER_DIGITS, 64)}",
        "1password sa": lambda: "ops_eyJ" + rs(rng, B62, 260),
        "artifactory": lambda: "AKCp" + rs(rng, B62, 69),
        "clojars": lambda: "CLOJARS_" + rs(rng, "abcdefghijklmnopqrstuvwxyz0123456789", 60),
        "square": lambda: "sq0atp-" + rs(rng, B62 + "-_", 22),
        "harness": lambda: f"pat.{rs(rng, B62, 22)}.{rs(rng, B62, 24)}.{rs(rng, B62, 20)}",
        "frameio": lambda: "fio-u-" + rs(rng, B62, 64),
        "duffel": lambda: "duffel_live_" + rs(rng, B62, 43),
    }
    frames = ["I pasted {k}, can you check why it fails?", "it worked with {k}.", "(the old one was {k})",
              "{k}"]
    for name, make in formats.items():
        for frame in frames:
            k = make()
            yield Probe(frame.format(k=k), f"provider: {name}", (k,))


def second_set(rng: random.Random) -> Iterator[Probe]:
    """Written after the new rules were done and never tuned on: other people's phrasings, other schemes."""
    words = lambda n, sep="": sep.join(rng.sample(WORDS, n))  # noqa: E731
    said = [
        "btw the login for the kiosk: user admin, password {j}", "Jenna's email password is {j}",
        "I set my streaming password to {j}", "password for grandma's ipad: {j}", "Passcode is {j}",
        "new wifi pw: {j}", "Password → {j}", "passwd: {j}", "our VPN password became {j} last week",
        "the password?? it's {j}", "The master passphrase is: {s}.", "my bitlocker passphrase = {s}",
        'Her passphrase was "{s}"', "seed phrase is {s12}", "the db password is still {j} on staging",
        "PASSWORD IS {J}", "password: {s} (all lowercase, spaces included)", "Password for the shared mailbox — {j}",
    ]
    for frame in said:
        j, s, s12 = words(3), words(4, " "), words(12, " ")
        text = frame.format(j=j, J=j.upper(), s=s, s12=s12)
        secret = j.upper() if "{J}" in frame else s12 if "{s12}" in frame else s if "{s}" in frame else j
        yield Probe(text, "B plain", tuple(secret.split()))
    tok = lambda n: rs(rng, B62, n)  # noqa: E731
    hexs = lambda n: rs(rng, HEX, n)  # noqa: E731
    headers = [
        ('curl -H "authorization: bearer {v}" https://x.acme.io', lambda: tok(32)),
        ("Authorization=Bearer {v}", lambda: tok(28)),
        ('client.headers["Authorization"] = "Token {v}"', lambda: hexs(40)),
        ("axios.defaults.headers.common['Authorization'] = 'Bearer {v}'", lambda: tok(40)),
        ('{{"authorization": "Zoho-oauthtoken 1000.{v}"}}', lambda: hexs(32) + "." + hexs(32)),
        ('Authorization: MAC id="h480djs93hd8", ts="1336363200", nonce="dj83hs9s", mac="{v}"',
         lambda: tok(27) + "="),
        ('Authorization: Hawk id="dh37fgj492je", ts="1353832234", nonce="j4h3g2", mac="{v}"',
         lambda: tok(43) + "="),
        ("Authorization: GoogleLogin auth={v}", lambda: "DQAAA" + tok(60)),
        ("x-ms-date: Mon, 01 Jul 2024 10:00:00 GMT\nAuthorization: SharedKey myaccount:{v}", lambda: tok(43) + "="),
        ("authorization: Basic {v}", lambda: _basic(rng)),
        (":method: GET\n:path: /v2/items\nauthorization: Bearer {v}", lambda: "eyJ" + tok(30) + "." + tok(40)),
        ("DEBUG http.client send: b'GET / HTTP/1.1\\r\\nAuthorization: Bearer {v}\\r\\n'", lambda: tok(36)),
        ("Authorization: Digest username=\"bob\", realm=\"r\", nonce=\"{n}\", uri=\"/\", response=\"{v}\"",
         lambda: hexs(32)),
        ("wget --header='Authorization: token {v}' https://x.acme.io/a.tgz", lambda: tok(40)),
        ("Authorization: Bot {v}", lambda: tok(24) + "." + tok(6) + "." + tok(38)),
    ]
    for frame, make in headers:
        for _ in range(2):
            v = make()
            yield Probe(frame.format(v=v, n=hexs(16)), "B header", (v,))
    keys = [
        ("NEW_RELIC_LICENSE_KEY={v}", lambda: hexs(36) + "NRAL"), ("X-Insert-Key: {v}", lambda: "NRII-" + tok(32)),
        ('{{"level":"info","nr_key":"{v}"}}', lambda: "NRAK-" + rs(rng, UPPER_DIGITS, 27)),
        ("ran it with {v} and it returned 403", lambda: "NRAK-" + rs(rng, UPPER_DIGITS, 27)),
        ("runner registered with {v}.", lambda: "glrt-" + tok(20)),
        ("deploy token {v}", lambda: "gldt-" + tok(20)),
        ("shopify secret {v}", lambda: "shpss_" + hexs(32)),
        ("slack app-level {v}", lambda: f"xapp-1-A0{rs(rng, UPPER_DIGITS, 9)}-{rng.randint(10**12, 10**13)}-{hexs(64)}"),
        ("git remote set-url origin https://{v}@github.com/acme/app.git", lambda: "ghp_" + tok(36)),
        ("hf login with {v}", lambda: "hf_" + tok(34)),
        ("(replicate) {v}", lambda: "r8_" + tok(37)),
        ("groq: {v}", lambda: "gsk_" + tok(52)),
        ("pscale password {v}", lambda: "pscale_pw_" + tok(43)),
        ("sentry user {v}", lambda: "sntryu_" + hexs(64)),
        ("the alibaba id {v}", lambda: "LTAI" + tok(20)),
        ("adobe secret {v}", lambda: "p8e-" + tok(32)),
        ("flutterwave {v}", lambda: "FLWSECK_TEST-" + hexs(32) + "-X"),
    ]
    for frame, make in keys:
        for _ in range(2):
            v = make()
            yield Probe(frame.format(v=v), "B provider", (v,))
    prose = [
        "Don't share your password with anyone, not even IT.", "The passphrase is more secure than a password.",
        "Passphrase: a sequence of words used as a password.", "The error just says password is 'required'.",
        "Password: ********", "Password: (hidden)", "the passcode is the last four digits of your phone",
        "Her password was her dog's name, which is a bad idea.", "The password became invalid after the merger.",
        "my password is too long for their form, apparently", "passwd is the file, shadow holds the hashes",
        "Authorization: Bearer YOUR_API_KEY", "xhr.setRequestHeader('Authorization', 'Basic ' + btoa(user + ':' + pw))",
        "the Authorization header was stripped by the load balancer", "authorization: pending review by legal",
        "Authorization: Bearer {{token}}", "Hawk and MAC authentication never took off.",
        "We rotated the New Relic license key after the offboarding.", "the seed phrase is written on paper in the safe",
        "our password policy is twelve characters minimum", "Pw: ask the front desk", "password reset link expired",
        "The passcode is changed every Monday by the office manager.", "Authorization: Negotiate (Kerberos) is used internally",
        "The password is long, random and unique.", "I keep forgetting whether the password is capitalized.",
        "passphrase is case sensitive and spaces count", "The password we use for demos is on the wiki page.",
    ]
    for text in prose:
        yield Probe(text, "prose: B about credentials")


def third_set(rng: random.Random) -> Iterator[Probe]:
    """The misses the security round recorded: one dictionary word after a clear cue, a bare AWS secret access
    key on its own line or list item, and ``pwd`` / ``passwd`` / ``pass`` fields; with prose that only talks
    about passwords (and about ``pwd`` the command) as negatives."""
    one = ["the password is {w}", "The password is {w}.", "pw: {w}", "passphrase was {w}", "my password is {w}",
           "the wifi password: {w}", "Password: {w}", "the password for the shed is {w}", "pw is {w}",
           "her passcode was {w}, she said", "ok the password is now {w}", "I changed the router password to {w}",
           "The Netflix password is {w}!", "the password?? it's {w}", "set the password to {w} for now",
           "the guest wifi passphrase is {w} and the network is Cedar"]
    for frame in one:
        w = rng.choice(WORDS + ["swordfish", "dragon", "monkey", "sunshine", "princess", "football", "shadow"])
        w = w.capitalize() if rng.random() < 0.3 else w
        yield Probe(frame.format(w=w), "C one word", (w,))
    aws = ["{k}", "- {k}", "* {k}", "1. {k}", "new creds:\n- AKIA{i}\n- {k}", "secret:\n{k}\n",
           "here are the keys\n  {k}\nkeep them safe", '["{k}",', "> {k}", "  - '{k}'"]
    for frame in aws:
        while True:
            k = rs(rng, B62 + "/+", 40)
            if "/" in k or "+" in k:
                break
        yield Probe(frame.format(k=k, i=rs(rng, UPPER_DIGITS, 16)), "C aws alone", (k,))
    fields = ["pwd={v}", "PWD={v}", "db_pwd = '{v}'", '{{"user": "bob", "pwd": "{v}"}}', "  user: bob\n  pwd: {v}",
              "pwd: {v}", "passwd={v}", '"passwd": "{v}"', "passwd: {v}", "user=bob&pass={v}",
              "db:\n  user: admin\n  pass: {v}", '{{"login": "bob", "pass": "{v}"}}', "pass={v}",
              "mysql --user=root --pass={v}"]
    for frame in fields:
        v = rng.choice((rng.choice(WORDS), rng.choice(WORDS) + str(rng.randint(1, 99)), rs(rng, B62, 12)))
        v = v if frame != "pass={v}" else rs(rng, B62, 12)  # a bare `pass=` with a plain word stays (a verdict)
        yield Probe(frame.format(v=v), "C pwd field", (v,))
    prose = [
        "I forgot my password", "the password is in 1Password", "the password is required",
        "pwd is the current directory command", "The password is mine, not yours.", "the password is expired",
        "the password is unique per site", "The password is plaintext in that file!", "the password is broken",
        "the password is missing", "My password is secret.", "the password is here somewhere",
        "The password is different on staging.", "the password was compromised", "the password is fine",
        "Reset the password to something longer.", "pwd: prints the working directory", "PWD=/home/bob/project",
        "OLDPWD=/srv/app", "pass: true", "PASS: t/basic.sh", "pass=3 fail=0 skip=1", "tests: pass",
        "the password is what you set at install", "the passphrase is optional", "The password is case-sensitive.",
        "the password is useless now", "the password is irrelevant", "the password is important",
        "my password manager is Bitwarden", "the password policy is strict", "the password field is empty",
        "Password: Required", "the password hint is on the sticky note", "set the password to expire in a week",
        "the password is whatever you like", "the password is ok", "The password was changed yesterday.",
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f", "- 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
        "- please-remember-to-rotate-the-keys-today", "ThisIsAVeryLongIdentifierNameForTestsXY",
        "cd $(pwd)/build && make", "import pwd; pwd.getpwnam('bob')",
        # code, found by --scan over installed packages while the rules were written
        "username, password = credentials", "def login(user: str, password: Text, retries=3):",
        '    "MountSandboxapiContextHubRepoMountSpecS3",', "$pass = !$pass;", "'pass': 'The \"pass\" statement\\n',",
    ]
    for text in prose:
        yield Probe(text, "prose: C about passwords")


# ------------------------------------------------------------------------------------------ negatives
PROSE = [
    "The password is incorrect, try again.", "the password is required for every login",
    "The password is stored in 1Password under Infra.", "the passphrase is needed to unlock the key",
    "My password was reset yesterday, so I had to log in again.", "The password is the same as the staging one.",
    "The password is at least twelve characters long.", "the password is case sensitive",
    "The password is never logged anywhere.", "the password is wrong", "Passwords are rotated every ninety days.",
    "The passphrase is long enough, the audit said so.", "Forgot my password again, reset it through the portal.",
    "passphrase: ask Dana, she keeps it in the team vault", "Password: see the onboarding doc",
    "the password is what you set when you created the account", "The wifi password is on the fridge.",
    "Send the Authorization header with every request.", "The Authorization header must start with Bearer.",
    "Authorization: Bearer <token>", "Authorization: Basic <base64 of user:password>",
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.acme.io", "headers = {'Authorization': f'Bearer {token}'}",
    'req.Header.Set("Authorization", "Bearer "+token)', "Authorization: Bearer ${GITHUB_TOKEN}",
    "The server answered 401 because the authorization header was missing.",
    "Basic auth is fine for the internal dashboard, bearer tokens for the API.",
    "Digest authentication is older than OAuth.", "New Relic user keys start with NRAK- and are 32 characters.",
    "We moved our dashboards from New Relic to Grafana last spring.", "The API key is in the vault, not in git.",
    "Set API-Key in the header when you call NerdGraph.", "the token is expired, ask for a new one",
    "The passcode is six digits and changes every thirty seconds.", "Pick a passphrase of four random words.",
    "I use a password manager for everything now.", "the password is too short, it needs a symbol",
    "Her password hint was the name of her first dog.", "Correct horse battery staple is a famous comic.",
    "The password for the router is printed on the sticker underneath.", "the password was changed on Monday",
    "The password is something only the on-call engineer knows.", "my password is safe, I checked haveibeenpwned",
    "Authorization: none", "Authorization failed for user alice", "Proxy-Authorization is sent to the proxy.",
    "The passphrase is set during the GPG key generation.", "password is optional for the guest network",
    "The password is the first thing attackers try to guess.", "the key is under the doormat (the real one)",
]


def ordinary_prose() -> Iterator[Probe]:
    for text in PROSE:
        yield Probe(text, "prose: about credentials")
    if LOCOMO.exists():
        for conv in json.loads(LOCOMO.read_text()):
            c = conv["conversation"]
            for key in sorted(k for k in c if k.startswith("session_") and isinstance(c[k], list)):
                for turn in c[key]:
                    if turn.get("text"):
                        yield Probe(turn["text"], "prose: LoCoMo turns")


def build(seed: int = 4401) -> list[Probe]:
    rng = random.Random(seed)
    return [*plain_passwords(rng), *auth_headers(rng), *new_relic(rng), *provider_formats(rng), *ordinary_prose(),
            *second_set(random.Random(seed + 1)), *third_set(random.Random(seed + 2))]


# ------------------------------------------------------------------------------------------ before / after
BEFORE_REV = "2df540c"  # core/redact before plain-word passwords, any-scheme headers and the New Relic rules


def load_before(rev: str) -> Any:
    """``core/redact`` (and the ``core/config`` it imports) as they were at ``rev``, as a temporary package."""
    root = Path(tempfile.mkdtemp(prefix="remem-redact-before-"))
    atexit.register(shutil.rmtree, root, True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "core/redact", "core/config.py"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    pkg = root / "_before_core"
    (root / "core").rename(pkg)
    (pkg / "__init__.py").write_text("")
    (pkg / "redact" / "rescan.py").unlink(missing_ok=True)
    sys.path.insert(0, str(root))
    return importlib.import_module("_before_core.redact.redactor")


def score(probes: list[Probe], redactors: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for p in probes:
        section = p.group.split(":")[0] if p.positive else p.group
        for name, r in redactors.items():
            out = r.redact(p.text).text
            cell = table[section][name]
            cell[1] += 1
            cell[0] += all(s not in out for s in p.secrets) if p.positive else out != p.text
    return table


_SCAN_LINE = re.compile(r"(?i)pass|pwd|pw\b|^\s*[-*\[(\"']*\S{40}[\"',]*\s*$")


def scan(folders: list[str], redactors: dict[str, Any]) -> None:
    """Lines of ``folders`` (``.py .md .rst .txt .yaml .yml .toml .cfg .ini``) that before and after redact
    differently, grouped by the rules that fire after (``(removed)``: before redacted something after keeps)."""
    before, after = redactors.values()
    lines = differ = 0
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".rst", ".txt", ".yaml", ".yml", ".toml", ".cfg", ".ini"):
                continue
            try:
                text = path.read_text("utf-8", errors="ignore")[:2_000_000]
            except OSError:
                continue
            for line in text.splitlines():
                if not _SCAN_LINE.search(line):
                    continue
                lines += 1
                if before.redact(line).text != after.redact(line).text:
                    differ += 1
                    rules = tuple(sorted({f.rule for f in after.findings(line)})) or ("(removed)",)
                    groups[rules].append(line.strip()[:110])
    print(f"\nscan: {lines} lines, {differ} redacted differently before and after")
    for rules, found in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(found):>5}  {', '.join(rules)}")
        for line in found[:5]:
            print(f"         {line!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m remem.bench.redaction_probes", description=__doc__)
    ap.add_argument("-v", "--verbose", action="store_true", help="list what the new rules still miss or change")
    ap.add_argument("--before", default=BEFORE_REV, help="git revision of the rules to compare with")
    ap.add_argument("--scan", nargs="*", metavar="DIR", help="also list the lines of these folders' text files "
                    "that mention pass/pwd/pw (or are one 40-character token) which before and after redact "
                    "differently: unlabelled text (code, docs) to look for new false positives in")
    args = ap.parse_args(argv)
    from remem.core.redact.redactor import Redactor

    rev = args.before
    redactors = {f"before ({rev[:7]})": load_before(rev).Redactor(), "after": Redactor()}
    probes = build()
    table = score(probes, redactors)
    names = list(redactors)
    print(f"{'section':<28}{'n':>6}" + "".join(f"{n:>20}" for n in names))
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for section in sorted(table, key=lambda s: (s.startswith("prose"), s)):
        cells = table[section]
        n = next(iter(cells.values()))[1]
        what = "false positives" if section.startswith("prose") else "recall"
        print(f"{section:<28}{n:>6}" + "".join(f"{cells[k][0]:>14} ({100 * cells[k][0] / n:5.1f}%)"[-20:]
                                             for k in names) + f"  {what}")
        if not section.startswith("prose"):
            for k in names:
                totals[k][0] += cells[k][0]
                totals[k][1] += cells[k][1]
    n = next(iter(totals.values()))[1]
    print(f"{'secrets recall (all)':<28}{n:>6}" + "".join(f"{totals[k][0]:>14} ({100 * totals[k][0] / n:5.1f}%)"[-20:]
                                                          for k in names))
    texts = [p.text for p in probes]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    speeds = []
    for k in names:
        runs = []
        for _ in range(5):
            t0 = time.process_time()
            for t in texts:
                redactors[k].redact(t)
            runs.append(time.process_time() - t0)
        speeds.append(f"{mb / statistics.median(runs):>14.2f} MB/s")
    print(f"{'speed (CPU, median of 5)':<28}{len(texts):>6}" + "".join(f"{x:>20}" for x in speeds))
    if args.scan:
        scan(args.scan, redactors)
    if args.verbose:
        after = redactors["after"]
        for p in probes:
            out = after.redact(p.text).text
            if (p.positive and any(s in out for s in p.secrets)) or (not p.positive and out != p.text):
                print(f"  {'MISS' if p.positive else 'FP  '} {p.group}: {p.text[:110]!r} -> {out[:110]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
