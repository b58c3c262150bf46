"""Secrets pasted the way people write them in chat, in the languages remem's users write in.

"the password for staging is Tr0ub4dor-3", "a senha do banco é Xy7#k2", "minha senha: hunter22",
"token de acesso: 9f8e...", "la contraseña es ...", "le mot de passe est ...", "das Passwort lautet ...".
A noun that names a credential, an optional "of/for <thing>", a verb or ':' / '=', then one token. The token
must look like a secret (letters with digits or symbols, inner capitals, or six digits or more), so "the
password is incorrect" and "a senha é forte" stay as they are.
"""

from __future__ import annotations

import re

from .assignments import CODE_REF, is_placeholder
from .words import hyphenated_words
from .rule import Rule

# language -> (password nouns, other secret nouns, words for "of/for", verbs)
_LANGS: dict[str, tuple[str, str, str, str]] = {
    "en": (r"password|passcode|passphrase|passwd|pwd",
           r"(?:api|access|secret|private)[ _\-]?key|(?:access|auth|api)[ _\-]?token|token|secret",
           r"for|of|to|on", r"is now|is|was|will be|would be"),
    "pt": (r"senha", r"token(?: de acesso| de api| da api)?|chave(?: de api| da api| secreta| de acesso| privada)?|segredo",
           r"d[aoe]s?|para|no|na", r"é|eh|era|será|fica|vai ser"),
    "es": (r"contraseña|contrasena|clave de acceso",
           r"token(?: de acceso)?|clave(?: de api| secreta| privada)?", r"del?|para", r"es|era|será"),
    "fr": (r"mot de passe|mdp", r"jeton(?: d'accès)?|clé(?: d'api| secrète| privée)?|cle secrete",
           r"d[eu]|des|pour", r"est|était|sera|c'est"),
    "de": (r"passwort|kennwort", r"schlüssel|token|zugangsschlüssel", r"für|vom|von|des|der",
           r"ist|war|lautet|heißt"),
    "it": (r"parola d'ordine|password", r"chiave(?: api| segreta| privata)?|token", r"del|della|dello|di|per",
           r"è|e'|era|sarà"),
}
_PASSWORD_NOUNS = re.compile("|".join(v[0] for v in _LANGS.values()), re.IGNORECASE)


def _pattern() -> str:
    nouns = "|".join(f"{v[0]}|{v[1]}" for v in _LANGS.values())
    ofs = "|".join(v[2] for v in _LANGS.values())
    verbs = "|".join(v[3] for v in _LANGS.values())
    thing = r"[\w\-.@]{1,40}"
    return (
        rf"(?i)(?<![\w\-])(?P<name>{nouns})"
        rf"(?:[ \t]+(?:{ofs})[ \t]+(?:(?:the|my|our|your|o|a|meu|minha|el|la|le|mon|ma|das|mein|il|mio)[ \t]+)?"
        rf"{thing}(?:[ \t]+{thing}){{0,2}})?"
        rf"(?:[ \t]+(?:{verbs})[ \t]*[:=]?|[ \t]*[:=])[ \t]+[\"'`]?"
        r"(?P<v>[^\s\"'`]{3,199}[^\s\"'`.,;:!?)])"
    )


def looks_like_secret(v: str) -> bool:
    """A chat token worth redacting: not a word, a placeholder, code or a small number."""
    if is_placeholder(v) or CODE_REF.search(v):
        return False
    if v.isdigit():
        return len(v) >= 6
    if "-" in v and hyphenated_words(v):  # "the password is case-sensitive"
        return False
    has_alpha = any(c.isalpha() for c in v)
    inner_upper = any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)
    return has_alpha and (any(c.isdigit() for c in v) or any(not c.isalnum() for c in v) or inner_upper)


def _chat_kind(m: re.Match[str]) -> str | None:
    if not looks_like_secret(m.group("v")):
        return None
    return "password" if _PASSWORD_NOUNS.fullmatch(m.group("name")) else "secret"


CHAT_RULES: tuple[Rule, ...] = (
    Rule(
        "password",
        _pattern(),
        "v",
        validator=_chat_kind,
        positive="oi! a senha do banco é Xy7#k2pQ, não compartilha",
        negative="a senha é forte e o token é válido; the password is incorrect",
        hints=("pass", "pwd", "mdp", "senha", "contrase", "clave", "mot de passe", "kennwort", "parola",
               "token", "secret", "chave", "segredo", "jeton", "clé", "cle secrete", "schlüssel", "chiave",
               "api", "access", "auth", "private"),
        anchor=("passw", "passc", "passp", "pwd", "mdp", "senha", "contrase", "clave", "mot de passe", "kennwort",
                "parola", "token", "secret", "chave", "segredo", "jeton", "clé", "cle secrete", "schlüssel",
                "zugangs", "chiave", "api", "access", "auth", "private"),
        generic=True,
        rule_id="chat",
    ),
)
