"""Secrets the way people paste them in chat (several languages), key id + secret on one line, Brazilian PII."""

from __future__ import annotations

import base64

import pytest

from remem.core.redact.redactor import Redactor
from remem.core.redact.rules import _B62, _fake

R = Redactor()
RP = Redactor(pii=True)
PW = "Tr0ub4dor-" + _fake(_B62, 6)
TOKEN = _fake(_B62, 32, 5)
AWS_ID = "AKIA" + _fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, 3)
AWS_SECRET = _fake(_B62 + "+/", 40, 11)


@pytest.mark.parametrize("text, secret, kind", [
    (f"the password is {PW}", PW, "password"),
    (f"my password is {PW}, don't share it", PW, "password"),
    (f"The password for the staging db is {PW}.", PW, "password"),
    ("my password is 84613927", "84613927", "password"),
    (f"here's the api key: {TOKEN}", TOKEN, "secret"),
    (f"a senha é {PW}", PW, "password"),
    (f"minha senha: {PW}", PW, "password"),
    (f"A senha do banco de dados é {PW}, não compartilhe.", PW, "password"),
    (f"o token de acesso é {TOKEN}", TOKEN, "secret"),
    (f"token de acesso: {TOKEN}", TOKEN, "secret"),
    (f"segue a chave de API: {TOKEN}", TOKEN, "secret"),
    (f"la contraseña es {PW}", PW, "password"),
    (f"le mot de passe du wifi est {PW}", PW, "password"),
    (f"das Passwort lautet {PW}", PW, "password"),
    (f"la password è {PW}", PW, "password"),
])
def test_chat_phrasings_are_redacted(text: str, secret: str, kind: str) -> None:
    res = R.redact(text)
    assert secret not in res.text and kind in res.counts, res.text
    assert res.text.split("[REDACTED:")[0] == text.split(secret)[0]  # the sentence around it stays


@pytest.mark.parametrize("text", [
    "the password is incorrect, please try again",
    "My password is too short, what is the minimum?",
    "the token is expired and the secret is rotated weekly",
    "a senha é forte e o token de acesso expira em uma hora",
    "A senha deve ter pelo menos 12 caracteres.",
    "minha senha: esqueci, como faço para redefinir?",
    "la contraseña es obligatoria",
    "le mot de passe est incorrect",
    "das Passwort ist abgelaufen",
])
def test_talk_about_passwords_is_left_alone(text: str) -> None:
    assert R.redact(text).text == text


@pytest.mark.parametrize("header, kind", [
    ("Authorization: Basic " + base64.b64encode(f"admin:{PW}".encode()).decode(), "basic_auth"),
    (f"Authorization: Bearer {TOKEN}", "bearer_token"),
    (f"curl -H 'Authorization: Bearer {TOKEN}' https://api.acme.io", "bearer_token"),
])
def test_authorization_headers_pasted_in_chat(header: str, kind: str) -> None:
    res = R.redact(f"it fails with this header: {header}")
    assert res.counts == {kind: 1} and "Authorization:" in res.text


@pytest.mark.parametrize("template", [
    "{i} / {s}", "key {i} secret {s}", "{i}:{s}", "{i},{s}", "aws creds are {i} and {s}",
    "Access key ID,Secret access key\n{i},{s}", "key {i} secret={s}",
])
def test_aws_key_id_and_secret_on_one_line(template: str) -> None:
    res = R.redact(template.format(i=AWS_ID, s=AWS_SECRET))
    assert AWS_ID not in res.text and AWS_SECRET not in res.text
    assert res.counts == {"aws_access_key_id": 1, "aws_secret_access_key": 1}


def test_a_commit_hash_next_to_a_key_id_is_not_its_secret() -> None:
    res = R.redact(f"rotated {AWS_ID} in commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f")
    assert res.counts == {"aws_access_key_id": 1} and "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f" in res.text


@pytest.mark.parametrize("text, kind", [
    ("CPF: 529.982.247-25", "br_cpf"),
    ("o cpf do cliente é 52998224725", "br_cpf"),
    ("CNPJ 11.222.333/0001-81", "br_cnpj"),
    ("cnpj 11222333000181", "br_cnpj"),
    ("CNPJ 12.ABC.345/01DE-35", "br_cnpj"),  # the alphanumeric CNPJ (from July 2026)
    ("me liga no (11) 91234-5678", "phone"),
    ("WhatsApp: +55 11 91234-5678", "phone"),
    ("Tel.: +55 (21) 3456-7890", "phone"),
    ("fone 21 98765-4321", "phone"),
    ("+5511912345678", "phone"),
])
def test_brazilian_pii(text: str, kind: str) -> None:
    res = RP.redact(text)
    assert res.counts == {kind: 1}, res.text
    assert not R.redact(text).changed or kind not in R.redact(text).counts  # PII only when asked


@pytest.mark.parametrize("text", [
    "pedido 529.982.247-26 enviado",          # CPF with a wrong check digit
    "nota fiscal 52998224725 emitida",         # a valid CPF's digits, but not labelled as one
    "protocolo 11.222.333/0001-82",            # CNPJ with a wrong check digit
    "versão 11 91234 5678 do arquivo",         # spaced digits without +55, (DDD) or a hyphen
    "ligar para (20) 91234-5678",              # 20 is not a Brazilian area code
])
def test_brazilian_lookalikes_are_left_alone(text: str) -> None:
    assert RP.redact(text).text == text
