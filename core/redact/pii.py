"""PII rules (opt-in: an email or a phone number is often the very thing a memory is about).

Each identifier with a check digit is validated with python-stdnum, so a random number of the right shape
is not redacted: cards (Luhn + IIN), IBAN, US SSN, UK NINO, ES DNI, IT codice fiscale, IN Aadhaar, BR CPF and
CNPJ. Phones cover international (+CC), NANP, UK/EU trunk and Brazilian formats.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

from .rule import Rule

# python-stdnum is imported on first use (validators run only on a candidate match): importing it costs more
# than a hook that logs one line should pay.

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
    from stdnum import luhn

    return luhn.is_valid(digits)


def _iban_ok(m: re.Match[str]) -> bool:
    from stdnum import iban

    return iban.is_valid(m.group(0))


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
    from stdnum.es import dni

    return dni.is_valid(m.group(0))


def _cf_ok(m: re.Match[str]) -> bool:
    from stdnum.it import codicefiscale

    return codicefiscale.is_valid(m.group(0))


def _aadhaar_ok(m: re.Match[str]) -> bool:
    from stdnum.in_ import aadhaar

    return aadhaar.is_valid(m.group(0))


def _ssn_ok(m: re.Match[str]) -> bool:
    area, grp, serial = re.split(r"[- ]", m.group(0))
    return area not in ("000", "666") and area[0] != "9" and grp != "00" and serial != "0000"


def _named_nearby(m: re.Match[str], word: str, span: int = 24) -> bool:
    """``word`` (lowercase) in the ``span`` characters before the match: a bare number needs a label."""
    return word in m.string[max(0, m.start() - span) : m.start()].lower()


def _br_id_ok(label: str) -> Callable[[re.Match[str]], bool]:
    """CPF/CNPJ: valid check digits; an unformatted one (bare digits) only next to its label."""
    def ok(m: re.Match[str]) -> bool:
        from importlib import import_module

        raw = m.group(0)
        if not import_module(f"stdnum.br.{label}").is_valid(raw):
            return False
        return any(c in raw for c in "./-") or _named_nearby(m, label)
    return ok


# Brazilian area codes (DDD) in use: a random two-digit prefix is not one in ~30% of cases.
_BR_DDD = frozenset(
    "11 12 13 14 15 16 17 18 19 21 22 24 27 28 31 32 33 34 35 37 38 41 42 43 44 45 46 47 48 49 51 53 54 55 "
    "61 62 63 64 65 66 67 68 69 71 73 74 75 77 79 81 82 83 84 85 86 87 88 89 91 92 93 94 95 96 97 98 99".split()
)


def _br_phone_ok(m: re.Match[str]) -> bool:
    if (m.group("pddd") or m.group("ddd0")) not in _BR_DDD:
        return False
    # without +55 or (DDD) the number must look like one: hyphenated, as Brazilians write it
    return bool(m.group("cc") or m.group(0).lstrip("+ 0").startswith("(") or "-" in m.group("num"))



_PII: tuple[Rule, ...] = (
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
        "br_cpf",
        r"(?<![\w./\-])\d{3}\.?\d{3}\.?\d{3}-?\d{2}(?![\w./\-]|\.\w)",
        validator=_br_id_ok("cpf"),
        positive="CPF do titular: 529.982.247-25, conforme cadastro.",
        negative="pedido 529.982.247-26 e nota 52998224725",
        pii=True,
    ),
    Rule(
        "br_cnpj",
        r"(?<![\w./\-])[0-9A-Z]{2}\.?[0-9A-Z]{3}\.?[0-9A-Z]{3}/?[0-9A-Z]{4}-?\d{2}(?![\w./\-]|\.\w)",
        validator=_br_id_ok("cnpj"),
        positive="Fornecedor CNPJ 11.222.333/0001-81 (matriz)",
        negative="protocolo 11.222.333/0001-82; build 11222333000181",
        pii=True,
    ),
    Rule(
        "phone",
        r"(?<![\w+.\-/:])(?P<cc>\+55[ .\-]?)?(?:\(0?(?P<pddd>[1-9]\d)\)|0?(?P<ddd0>[1-9]\d))[ .\-]?"
        r"(?P<num>9[ .]?\d{4}[ .\-]?\d{4}|[2-5]\d{3}[ .\-]?\d{4})(?![\w\-/:]|\.\w)",
        validator=lambda m: _br_phone_ok(m),
        positive="me liga no (11) 91234-5678 depois das 18h",
        negative="versão 11 91234 5678 do arquivo",
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

PII_RULES: tuple[Rule, ...] = tuple(replace(r, source="pii") for r in _PII)
