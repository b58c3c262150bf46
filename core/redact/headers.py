"""Credentials in an HTTP ``Authorization`` (or ``Proxy-Authorization``) header, whatever its scheme.

A header value is ``<scheme> <token68>`` (Bearer, Basic, token, ApiKey, SSWS, Splunk, Negotiate, Bot, ...) or
``<scheme> k=v, k="v", ...`` (Digest, OAuth 1.0, AWS4-HMAC-SHA256, ``Token token="..."``). Either way,
everything after the scheme is the credential (a Digest ``response`` or an OAuth signature is as good as the
password to whoever replays it), so all of it goes and the scheme stays: ``Authorization: Digest
[REDACTED:authorization]``. The header is found where people write it: raw requests, ``curl -H``, client code
(``{'Authorization': ...}``, ``Header.Set("Authorization", ...)``), proxies, YAML, logs. A value that is a
placeholder or code (``<token>``, ``${TOKEN}``, ``"Bearer " + token``) is left alone.
"""

from __future__ import annotations

import re

from .assignments import is_placeholder
from .rule import Rule

# the header's name, then what separates it from its value in each notation: `: `, `=`, `': '`, `", "`
# (a quote may come escaped, as in a JSON string inside a log line: {\"Authorization\":\"Splunk ...\"})
_NAME = (r"(?i)(?<![\w\-])(?:proxy-)?authorization(?:\\?[\"'`])?"
         r"(?:[ \t]*[:=][ \t]*|[ \t]*,[ \t]*|[ \t]+(?=\\?[\"'`]))(?:\\?[\"'`])?")
_SCHEME = r"(?P<scheme>[A-Za-z][A-Za-z0-9_\-]{1,40})"
_PARAM = r"[A-Za-z][\w\-]{0,40}[ \t]*=[ \t]*(?:\"[^\"\n]{0,500}\"|[^\s,\"'`]{1,500})"
PARAMS = _NAME + _SCHEME + rf"[ \t]+(?P<v>{_PARAM}(?:[ \t]*,[ \t]*{_PARAM}){{0,30}})"
TOKEN = _NAME + _SCHEME + r"[ \t]+(?P<v>[A-Za-z0-9\-._~+/]{8,4000}=*)(?![A-Za-z0-9\-._~+/=$({\[<])"


def _token_ok(m: re.Match[str]) -> bool:
    v = m.group("v")
    if is_placeholder(v) or is_placeholder(m.group("scheme")):
        return False
    digits = any(c.isdigit() for c in v)
    mixed = any(c.islower() for c in v) and any(c.isupper() for c in v)
    return digits or (mixed and len(v) >= 16)


def _params_ok(m: re.Match[str]) -> bool:
    values = re.findall(r"=[ \t]*\"?([^\",]*)", m.group("v"))
    return any(len(v) >= 6 and not is_placeholder(v) for v in values)


HEADER_RULES: tuple[Rule, ...] = (
    Rule(
        "authorization",
        PARAMS,
        "v",
        validator=_params_ok,
        positive='Authorization: Digest username="alice", realm="api", nonce="4f1c0a9e", response="6629fae49393a05397450978507c4ef1"',
        negative="Authorization: Digest is older than OAuth",
        hints=("authorization",),
        generic=True,
        rule_id="authorization_params",
    ),
    Rule(
        "authorization",
        TOKEN,
        "v",
        validator=_token_ok,
        positive="curl -H 'Authorization: SSWS 00b7Qx3KfPzR9mL2aVt8Nw4Yc6Ud1Ee5Gh0Jk' https://acme.okta.com/api/v1/users",
        negative='Authorization: Bearer <token>; headers["Authorization"] = "Bearer " + token',
        hints=("authorization",),
        generic=True,
        rule_id="authorization_any_scheme",
    ),
)

__all__ = ["HEADER_RULES"]
