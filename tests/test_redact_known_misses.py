"""The redaction misses the last security round recorded, closed: one dictionary word said as a password after a
clear cue, a bare AWS secret access key on its own line, and ``pwd`` / ``passwd`` / ``pass`` fields; and the
prose about passwords (and ``pwd`` the command) that must stay as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem import Memory
from remem.core.redact.redactor import Redactor

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS documentation example


@pytest.fixture(scope="module")
def r() -> Redactor:
    return Redactor()


@pytest.mark.parametrize("text,secret", [
    ("the password is swordfish", "swordfish"),
    ("The password is Swordfish.", "Swordfish"),
    ("pw: dragon", "dragon"),
    ("passphrase was tulip", "tulip"),
    ("my password is dragon, don't tell", "dragon"),
    ("the password for the shed is kitten", "kitten"),
    ("the wifi password: bread", "bread"),
    ("I changed the router password to tulip", "tulip"),
    ("the password?? it's dumpling", "dumpling"),
    ("ok the password is now falcon and the user is bob", "falcon"),
])
def test_one_dictionary_word_after_a_clear_cue_is_redacted(r: Redactor, text: str, secret: str) -> None:
    out = r.redact(text)
    assert secret not in out.text and out.counts == {"password": 1}


@pytest.mark.parametrize("text", [
    "I forgot my password", "the password is in 1Password", "the password is required",
    "pwd is the current directory command", "The password is mine, not yours.", "the password is expired",
    "the password is missing", "the password was compromised", "the password is broken", "My password is secret.",
    "The password is plaintext in that file!", "The password is case-sensitive.", "the password is unique per site",
    "my password manager is Bitwarden", "the password policy is strict", "Reset the password to something longer.",
    "set the password to expire in a week", "the password is whatever you like", "The password is different.",
])
def test_prose_about_passwords_stays(r: Redactor, text: str) -> None:
    assert r.redact(text).text == text


@pytest.mark.parametrize("text", [
    AWS_SECRET, f"- {AWS_SECRET}", f"* {AWS_SECRET}", f"1. {AWS_SECRET}", f"new keys:\n- AKIAIOSFODNN7EXAMPLE\n- {AWS_SECRET}",
    f"here they are\n  {AWS_SECRET}\nkeep them safe", f'["{AWS_SECRET}",', f"  - '{AWS_SECRET}'",
])
def test_bare_aws_secret_access_key_on_its_own_line_is_redacted(r: Redactor, text: str) -> None:
    out = r.redact(text)
    assert AWS_SECRET not in out.text and "[REDACTED:aws_secret_access_key]" in out.text


@pytest.mark.parametrize("text", [
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f", "- 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
    "- please-remember-to-rotate-the-keys-today", "ThisIsAVeryLongIdentifierNameForTestsXY",
    # the last line of a base64 block (a certificate) is no key of its own
    "-----BEGIN CERTIFICATE-----\nMIIBAMaq8Qm+Y0SyU4eGwcK6sgWOIECCEIOWgs6KcwGe4UyS0Y+mQ8qaMA2uokii\n"
    f"{AWS_SECRET}\n-----END CERTIFICATE-----",
])
def test_forty_character_lines_that_are_no_key_stay(r: Redactor, text: str) -> None:
    assert r.redact(text).text == text


@pytest.mark.parametrize("text,secret", [
    ("pwd=hunter", "hunter"), ("PWD=Tr0ub4dor", "Tr0ub4dor"), ('{"user": "bob", "pwd": "swordfish"}', "swordfish"),
    ("db:\n  user: bob\n  pwd: swordfish\n", "swordfish"), ("db_pwd = 'granite'", "granite"),
    ("passwd=swordfish", "swordfish"), ('"passwd": "swordfish"', "swordfish"), ("user=bob&pass=swordfish", "swordfish"),
    ("db:\n  user: admin\n  pass: swordfish\n", "swordfish"), ("pass=Tr0ub4dor3", "Tr0ub4dor3"),
    ("mysql --user=root --pass=granite", "granite"),
])
def test_pwd_passwd_and_pass_fields_are_redacted(r: Redactor, text: str, secret: str) -> None:
    out = r.redact(text)
    assert secret not in out.text and out.counts.get("password") == 1


@pytest.mark.parametrize("text", [
    "PWD=/home/bob/project", "OLDPWD=/srv/app", "pwd: /home/bob", "pwd: prints the working directory",
    "cd $(pwd)/build && make", "import pwd; pwd.getpwnam('bob')", "pwd = os.getcwd()", "pass: true",
    "PASS: t/basic.sh", "pass=3 fail=0 skip=1", "pass: failed", "else: pass",
])
def test_pwd_the_directory_and_pass_the_verdict_stay(r: Redactor, text: str) -> None:
    assert r.redact(text).text == text


@pytest.mark.parametrize("text", [
    "username, password = credentials", "def login(user: str, password: Text, retries=3):",
    '    "MountSandboxapiContextHubRepoMountSpecS3",', "$pass = !$pass;", "'pass': 'The \"pass\" statement\\n',",
])
def test_code_that_names_a_password_stays(r: Redactor, text: str) -> None:
    assert r.redact(text).text == text


def test_pwd_in_metadata_is_a_password_unless_it_is_a_path(r: Redactor) -> None:
    out, counts = r.redact_data({"pwd": "swordfish", "job": {"pwd": "/home/ci/build"}})
    assert out == {"pwd": "[REDACTED:password]", "job": {"pwd": "/home/ci/build"}} and counts == {"password": 1}


def test_nothing_of_them_reaches_the_store(tmp_path: Path) -> None:
    """The write path: what remember() stores (and a search returns) has none of these secrets."""
    with Memory(path=tmp_path / "store", embedder="none") as mem:
        mem.add(f"wifi: the password is swordfish; keys:\n- {AWS_SECRET}\nconfig pwd=granite", scope={"user": "u"})
        stored = [h.text for h in mem.search("password keys config", scope={"user": "u"}, limit=5)]
    assert stored and not any(s in t for t in stored for s in ("swordfish", AWS_SECRET, "granite"))
    raw = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file())
    assert b"swordfish" not in raw and AWS_SECRET.encode() not in raw and b"granite" not in raw
