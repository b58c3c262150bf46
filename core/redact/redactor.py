"""Secret and PII redaction for every remem write path and every LLM call.

Secrets are replaced by typed placeholders such as ``[REDACTED:github_token]`` so
a memory still says *that* a credential existed (and under which variable name)
without ever storing its value. Detection is rule based: the vendored gitleaks
rule set (:mod:`remem.core.redact.gitleaks`, provider token formats) plus remem's
own overlay (:mod:`remem.core.redact.rules`: broader provider rules, assignments,
headers, command lines, chat phrasings) and a context-gated entropy check. PII
rules (:mod:`remem.core.redact.pii`) are opt-in because emails/phones are often
the very thing a memory is about.

Speed: every rule names keywords; one Aho-Corasick pass over the lowercased text
finds which occur, and only those rules' regexes run (compiled on first use).

Design constraints: compile once, no mutable state while redacting (thread
safe), never raise on ``str`` input, idempotent on already-redacted text.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..config import OWN_UID
from .assignments import names_a_credential
from .matching import Finding, Spans, ascii_lower, rule_matches
from .rule import SOURCES, Rule, shannon_entropy
from .ruleset import Scan, ruleset

__all__ = ["Finding", "Redactor", "RedactionResult", "redact"]

PLACEHOLDER_RE = re.compile(r"\[REDACTED:[A-Za-z0-9_.\-]{1,64}\]")

# Context words that make a nearby high-entropy token a likely secret.
# Literal context words (searched with str.find on the lowercased text: an
# alternation regex costs ~100 µs per 2 KB in CPython, find() ~1 µs per word).
_ENTROPY_CONTEXT: tuple[str, ...] = tuple(
    ["secret", "token", "passw", "passphrase", "pwd", "apikey", "credential", "bearer", "auth"]
    + [f"{w}{sep}key" for w in ("api", "access", "private", "signing", "session") for sep in ("_", "-", " ")]
    + ["key is", "key=", "key:", "key ="]
)
_ENTROPY_WORDS = frozenset(_ENTROPY_CONTEXT)
# Words that say the nearby hex/base64 is a digest or identifier, not a secret.
_DIGEST_CONTEXT = re.compile(
    r"\b(?:commit|sha\d*|hash|digest|checksum|etag|revision|rev|uuid|guid|request[_ -]?id|"
    r"trace[_ -]?id|md5|integrity|fingerprint|image|png|jpe?g)\b|base64,|public[_\- ]?key|"
    r"ssh-(?:rsa|ed25519|dss)|ecdsa-sha2"
)
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/_\-=.])[A-Za-z0-9+/_\-]{20,512}={0,2}(?![A-Za-z0-9+/_\-=])")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_WORDY = re.compile(
    r"^[A-Za-z]+(?:[_\-/][A-Za-z0-9]+)+$|^[a-z0-9]+(?:[_\-][a-z0-9]+){2,}$|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"
)

# Message keys whose values are protocol structure, never user content.
_STRUCTURAL_KEYS = frozenset(
    {"role", "type", "id", "tool_call_id", "tool_use_id", "call_id", "model", "media_type",
     "cache_control", "stop_reason", "finish_reason", "index", "signature"}
)


_DATA_URL_RE = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,")
"""An inline image or file (``data:image/png;base64,...``): bytes, not text. Anything else that starts with
"data:" is text (a pasted event stream: ``data: {"aws_key": ...}``) and is redacted like any."""


@dataclass(frozen=True)
class RedactionResult:
    """Redacted text plus per-kind counts (kinds only, never the values)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.counts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class Redactor:
    """Compiled rule set; construct once, call :meth:`redact` from any thread.

    ``sources`` limits the built-in rules to some of ``("overlay", "gitleaks", "pii")`` (the benchmark
    scores each on its own); the default is all of them (PII only with ``pii=True``).
    """

    def __init__(
        self,
        pii: bool = False,
        allow: Iterable[str] = (),
        extra_patterns: Mapping[str, str] | None = None,
        entropy: bool = True,
        entropy_threshold: float = 3.5,
        *,
        sources: Iterable[str] = SOURCES,
    ) -> None:
        if isinstance(allow, str):
            allow = (allow,)
        if isinstance(sources, str):
            sources = (sources,)
        self.pii = pii
        self.entropy = entropy
        self.entropy_threshold = entropy_threshold
        self.sources = frozenset(sources)
        self._extra: tuple[Rule, ...] = tuple(_user_rule(k, p) for k, p in (extra_patterns or {}).items())
        self._ruleset = ruleset(bool(pii), self.sources, _ENTROPY_CONTEXT)
        self._entropy_on = entropy and "overlay" in self.sources
        self._allow_literals = frozenset(a for a in allow if isinstance(a, str))
        self._allow_res = tuple(_compile_allow(a) for a in self._allow_literals)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule this redactor may run, in the order overlaps are decided (user patterns first)."""
        return self._extra + self._ruleset.rules

    # ------------------------------------------------------------------ api
    def redact(self, text: str) -> RedactionResult:
        """Replace every detected secret (and PII if enabled) in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"Redactor.redact() expects str, got {type(text).__name__}")
        if len(text) < 6:
            return RedactionResult(text)
        try:
            matches = self._select(text)
        except (RecursionError, re.error):  # pragma: no cover - defensive: never raise on str
            return RedactionResult(text)
        return _apply(text, matches)

    def findings(self, text: str) -> list[Finding]:
        """What :meth:`redact` would replace and which rule decided each span (for reports and the bench)."""
        if not isinstance(text, str) or len(text) < 6:
            return []
        return sorted(self._select(text), key=lambda f: f.start)

    def redact_data(self, value: Any) -> tuple[Any, dict[str, int]]:
        """Redact JSON-like data (metadata): every string, keys included, at any depth; input untouched. A string
        value is read with its key, as ``key=value`` would be in text: ``{"password": "hunter2"}`` is redacted
        as ``password=hunter2`` is, though "hunter2" alone is no secret."""
        counts: dict[str, int] = {}

        def tally(res: RedactionResult) -> str:
            for k, n in res.counts.items():
                counts[k] = counts.get(k, 0) + n
            return res.text

        def entry(key: Any, node: Any) -> Any:
            if isinstance(key, str) and key.strip().lower() in _DATA_PASSWORD_KEYS and _not_a_word(node):
                key = "password"  # {"user": "admin", "pass": "..."}: in data, not the keyword of code
            elif isinstance(key, str) and key.strip().lower() == "pwd" and _not_a_path(node):
                key = "password"  # {"pwd": "..."}: a password unless it is the working directory
            if not isinstance(key, str) or not names_a_credential(key):
                return walk(node)
            if isinstance(node, list):  # {"api_keys": [...]}: each item read with the key
                return [entry(key, v) for v in node]
            if isinstance(node, str) and node:
                head = f"{key}="
                res = self.redact(head + node)
                if res.text.startswith(head) and res.text != head + node:  # a credential: the whole value goes
                    tally(res)  # (a rule reads up to a space or a symbol: "Tr0ub4dor&3" kept "&3")
                    return f"[REDACTED:{next(iter(res.counts), 'secret')}]"
            return walk(node)

        def walk(node: Any) -> Any:
            if isinstance(node, str):
                return tally(self.redact(node))
            if isinstance(node, Mapping):
                return {walk(k) if isinstance(k, str) else k: entry(k, v) for k, v in node.items()}
            if isinstance(node, (list, tuple)):
                return [walk(v) for v in node]
            return node

        return walk(value), counts

    def redact_messages(self, messages: Any) -> tuple[Any, dict[str, int]]:
        """Redact chat messages (OpenAI/Anthropic shapes) recursively; input untouched."""
        counts: dict[str, int] = {}
        return self._walk(messages, counts, None), counts

    # ------------------------------------------------------------ detection
    def _select(self, text: str) -> list[Finding]:
        """All non-overlapping matches; earlier rules win, protected spans never touched."""
        taken = Spans([m.span() for m in PLACEHOLDER_RE.finditer(text)] + self._allowed_spans(text))
        chosen: list[Finding] = []
        for cand in self._candidates(text, taken):
            if taken.overlaps(cand.start, cand.end):
                continue
            if self._is_allowed(text[cand.start : cand.end]):
                continue
            taken.add(cand.start, cand.end)
            chosen.append(cand)
        return chosen

    def _candidates(self, text: str, taken: Spans) -> Iterator[Finding]:
        low = ascii_lower(text)
        rules, scan = self._ruleset.scan(low)
        for rule in self._extra:
            yield from rule_matches(rule, text, low, taken, None)
        for rule in rules:
            yield from rule_matches(rule, text, low, taken, scan)
        if self._entropy_on:
            yield from self._entropy_candidates(text, low, taken, scan)

    def _entropy_candidates(self, text: str, low: str, taken: Spans, scan: Scan) -> Iterator[Finding]:
        """High-entropy tokens shortly after a secret-ish word on the same line."""
        scanned_to = 0
        for ctx_start, ctx_end in scan.hits(_ENTROPY_WORDS):
            if ctx_end <= scanned_to or low.startswith("author", ctx_start):
                continue
            if taken.overlaps(ctx_end, ctx_end + 1):
                continue
            line_end = text.find("\n", ctx_end)
            window_end = min(ctx_end + 80, len(text) if line_end < 0 else line_end)
            scanned_to = window_end
            line_start = max(text.rfind("\n", 0, ctx_start) + 1, ctx_start - 80)
            if _DIGEST_CONTEXT.search(low, line_start, window_end):
                continue
            # endpos bounds the scan (keeps big inputs linear) yet never cuts a token
            for tok in _CANDIDATE.finditer(text, ctx_end, min(len(text), window_end + 520)):
                if tok.start() >= window_end:
                    break
                if taken.overlaps(tok.start(), tok.end()):
                    break  # the secret after this keyword is already redacted
                if self._high_entropy(tok.group(0)):
                    yield Finding(tok.start(), tok.end(), "high_entropy", "overlay:high_entropy")
                    break

    def _high_entropy(self, tok: str) -> bool:
        core = tok.rstrip("=")
        if _UUID.match(core) or _WORDY.match(core) or "REDACTED" in core:
            return False
        if not any(c.isdigit() for c in core) or not any(c.isalpha() for c in core):
            return False
        if "/" in core and core.lower() == core:
            return False  # a path
        threshold = self.entropy_threshold - (0.5 if _HEX.match(core) else 0.0)
        return shannon_entropy(core) >= threshold

    # ------------------------------------------------------------- allowing
    def _allowed_spans(self, text: str) -> list[tuple[int, int]]:
        if not self._allow_res:
            return []
        return [m.span() for rx in self._allow_res for m in rx.finditer(text) if m.end() > m.start()]

    def _is_allowed(self, value: str) -> bool:
        if value in self._allow_literals:
            return True
        return any(rx.fullmatch(value) for rx in self._allow_res)

    # ------------------------------------------------------------- messages
    def _walk(self, node: Any, counts: dict[str, int], key: str | None) -> Any:
        if isinstance(node, str):
            if key in _STRUCTURAL_KEYS or _DATA_URL_RE.match(node):
                return node
            res = self.redact(node)
            for k, n in res.counts.items():
                counts[k] = counts.get(k, 0) + n
            return res.text
        if isinstance(node, Mapping):
            if node.get("type") == "base64" and "data" in node:
                return {k: v if k == "data" else self._walk(v, counts, k) for k, v in node.items()}
            return {k: self._walk(v, counts, k if isinstance(k, str) else None) for k, v in node.items()}
        if isinstance(node, list):
            return [self._walk(v, counts, key) for v in node]
        if isinstance(node, tuple):
            return tuple(self._walk(v, counts, key) for v in node)
        return node


# ---------------------------------------------------------------- helpers


_DATA_PASSWORD_KEYS = frozenset({"pass"})
"""Field names that hold a password in data (metadata, a store value) though, in text, ``pass`` is Python's
keyword and so not read as one (:func:`~.assignments.secret_name_kind`). "pass" also says whether a check
passed, so its value is read as a password only when it is no plain word ("failed", "first" stay)."""


def _not_a_word(value: Any) -> bool:
    from .words import is_word

    return not isinstance(value, str) or not re.fullmatch(r"[A-Za-z]+(?:[ -][A-Za-z]+)*", value.strip()) \
        or not all(is_word(w) for w in re.split(r"[ -]", value.strip()))


def _not_a_path(value: Any) -> bool:
    from .assignments import _PATH

    return isinstance(value, str) and not _PATH.search(value.strip())


def _apply(text: str, matches: list[Finding]) -> RedactionResult:
    """Splice placeholders into ``text`` (matches are non-overlapping)."""
    if not matches:
        return RedactionResult(text)
    matches.sort(key=lambda m: m.start)
    out: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    for m in matches:
        out.append(text[pos : m.start])
        out.append(f"[REDACTED:{m.kind}]")
        counts[m.kind] = counts.get(m.kind, 0) + 1
        pos = m.end
    out.append(text[pos:])
    return RedactionResult("".join(out), counts)


def _compile_allow(entry: str) -> re.Pattern[str]:
    """Allow entries are regexes; invalid regexes fall back to literals."""
    try:
        return re.compile(entry)
    except re.error:
        return re.compile(re.escape(entry))


def _user_rule(kind: str, pattern: str) -> Rule:
    """Wrap a user regex; a named group ``secret``/``value`` limits the replacement."""
    if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}", kind):
        raise ValueError(f"extra_patterns kind must be [A-Za-z0-9_.-]{{1,64}}, got {kind!r}")
    compiled = re.compile(pattern)
    group: int | str = 0
    for name in ("secret", "value"):
        if name in compiled.groupindex:
            group = name
            break
    return Rule(kind, pattern, group, source="user", rule_id=kind)


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$REMEM_REDACT_CONFIG``, else ``$REMEM_HOME/redact.json`` (in ``environ``: another process's
    environment, e.g. a hook the local service answers; default this process's)."""
    env = os.environ if environ is None else environ
    explicit = env.get("REMEM_REDACT_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return Path(env.get("REMEM_HOME") or "~/.remem").expanduser() / "redact.json"


def configured(pii: bool = False, environ: Mapping[str, str] | None = None) -> Redactor:
    """The redactor remem uses on its write paths: the rules plus the user's configuration, if any.

    ``redact.json``: ``{"allow": ["literal or regex", ...], "patterns": {"kind": "regex", ...}}``. A broken
    file is an error that names the file, never a silent fallback to fewer rules."""
    path = config_path(environ)
    try:
        stat = path.stat()
    except OSError:
        return _default(bool(pii))
    if OWN_UID is not None and (stat.st_uid != OWN_UID or stat.st_mode & 0o002):  # an allow-list turns it off
        raise PermissionError(f"{path} belongs to uid {stat.st_uid} or every account may write it (mode "
                              f"{stat.st_mode & 0o777:04o}): remem will not take redaction rules another account "
                              f"could have written; make it yours and 0600, or remove it")
    return _from_file(str(path), stat.st_mtime_ns, bool(pii))


@lru_cache(maxsize=8)
def _from_file(path: str, mtime_ns: int, pii: bool) -> Redactor:
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"redaction config {path} is not readable JSON: {exc}") from exc
    if not isinstance(data, dict) or not set(data) <= {"allow", "patterns"}:
        raise ValueError(f"redaction config {path} must be an object with 'allow' and/or 'patterns'")
    allow = data.get("allow") or []
    patterns = data.get("patterns") or {}
    if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
        raise ValueError(f"redaction config {path}: 'allow' must be a list of strings")
    if not isinstance(patterns, dict) or not all(isinstance(v, str) for v in patterns.values()):
        raise ValueError(f"redaction config {path}: 'patterns' must map kinds to regex strings")
    try:
        return Redactor(pii=pii, allow=tuple(allow), extra_patterns=patterns)
    except re.error as exc:
        raise ValueError(f"redaction config {path}: bad pattern: {exc}") from exc


@lru_cache(maxsize=4)
def _default(pii: bool) -> Redactor:
    return Redactor(pii=pii)


def redact(text: str, pii: bool = False) -> RedactionResult:
    """Redact with a cached default :class:`Redactor`."""
    return _default(bool(pii)).redact(text)
