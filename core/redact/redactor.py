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
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

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


@dataclass(frozen=True)
class Finding:
    """One span :meth:`Redactor.redact` replaces: its kind and the rule (``source:rule_id``) that found it."""

    start: int
    end: int
    kind: str
    rule: str

    @property
    def source(self) -> str:
        return self.rule.split(":", 1)[0]


class _Spans:
    """Sorted, non-overlapping spans with O(log n) overlap queries (keeps big inputs linear)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_right(self.starts, start) - 1
        if i >= 0 and self.ends[i] > start:
            return True
        return i + 1 < len(self.starts) and self.starts[i + 1] < end

    def add(self, start: int, end: int) -> None:
        """Insert a span known not to overlap any existing one."""
        i = bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)


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
        """Redact JSON-like data (metadata): every string, keys included, at any depth; input untouched."""
        counts: dict[str, int] = {}

        def walk(node: Any) -> Any:
            if isinstance(node, str):
                res = self.redact(node)
                for k, n in res.counts.items():
                    counts[k] = counts.get(k, 0) + n
                return res.text
            if isinstance(node, Mapping):
                return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in node.items()}
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
        taken = _Spans([m.span() for m in PLACEHOLDER_RE.finditer(text)] + self._allowed_spans(text))
        chosen: list[Finding] = []
        for cand in self._candidates(text, taken):
            if taken.overlaps(cand.start, cand.end):
                continue
            if self._is_allowed(text[cand.start : cand.end]):
                continue
            taken.add(cand.start, cand.end)
            chosen.append(cand)
        return chosen

    def _candidates(self, text: str, taken: _Spans) -> Iterator[Finding]:
        low = _ascii_lower(text)
        rules, scan = self._ruleset.scan(low)
        for rule in self._extra:
            yield from _rule_matches(rule, text, low, taken, None)
        for rule in rules:
            yield from _rule_matches(rule, text, low, taken, scan)
        if self._entropy_on:
            yield from self._entropy_candidates(text, low, taken, scan)

    def _entropy_candidates(self, text: str, low: str, taken: _Spans, scan: Scan) -> Iterator[Finding]:
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
            if key in _STRUCTURAL_KEYS or node.startswith("data:"):
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


def find_all(low: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """Sorted (start, end) of every occurrence of each literal in ``low``."""
    hits: list[tuple[int, int]] = []
    for w in words:
        i = low.find(w)
        while i >= 0:
            hits.append((i, i + len(w)))
            i = low.find(w, i + 1)
    hits.sort()
    return hits


def _ascii_lower(text: str) -> str:
    """Lowercase with offsets preserved (``str.lower`` may grow e.g. 'İ')."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# A run of eight equal characters is a template (ghp_xxxx..., AKIAXXXX..., "aaaa..."), not a secret; key material
# (PEM bodies, service-account JSON) has such runs legitimately, and a person telling a password means it.
_RUN = re.compile(r"(.)\1{7,}")
_RUNS_ALLOWED = frozenset({"private_key", "gcp_service_account_key", "prose", "chat"})


def _judge(rule: Rule, m: re.Match[str], taken: _Spans) -> Finding | None:
    """The finding for match ``m``, or None: nothing to replace, already taken, or rejected by the validator.

    The overlap test comes first: validators (entropy, allow-lists, name heuristics) are the costly part, and
    a span an earlier rule already took is dropped anyway.
    """
    span = rule.span(m)
    if not span or span[0] >= span[1] or taken.overlaps(span[0], span[1]):
        return None
    if (rule.source == "overlay" and (rule.rule_id or rule.kind) not in _RUNS_ALLOWED
            and _RUN.search(m.string, span[0], span[1])):
        return None
    kind = _safe_validate(rule, m)
    return Finding(span[0], span[1], kind, rule.name) if kind else None


def _hits(low: str, rule: Rule, scan: Scan | None) -> list[tuple[int, int]]:
    return scan.hits(rule.anchor_words) if scan is not None else find_all(low, rule.anchor)  # type: ignore[arg-type]


def _rule_matches(rule: Rule, text: str, low: str, taken: _Spans, scan: Scan | None) -> Iterator[Finding]:
    """Validated matches of one rule.

    A rejected match resumes the search one character later rather than at its
    end, so ``loaded: smtp_pass=x`` still finds ``smtp_pass=x`` after the
    ``loaded: ...`` candidate was rejected.
    """
    if rule.anchor:
        yield from _anchored_matches(rule, text, low, taken, scan)
        return
    if rule.starts:
        yield from _matches_at_starts(rule, text, low, taken)
        return
    search = rule.compiled.search
    pos, n = 0, len(text)
    while pos <= n:
        m = search(text, pos)
        if m is None:
            return
        found = _judge(rule, m, taken)
        if found:
            yield found
            pos = max(m.end(), m.start() + 1)
        else:
            pos = m.start() + 1


def _matches_at_starts(rule: Rule, text: str, low: str, taken: _Spans) -> Iterator[Finding]:
    """Same matches as the search loop, trying ``regex.match`` only where a literal start occurs."""
    match = rule.compiled.match
    done_until = 0
    window = rule.window or len(text)
    for start, _ in find_all(low, rule.starts):  # type: ignore[arg-type]
        if start < done_until:
            continue
        m = match(text, start, start + window)
        if m is None:
            continue
        found = _judge(rule, m, taken)
        if found:
            done_until = max(m.end(), start + 1)
            yield found


_MAX_WALK_BACK = 100  # names/schemes are short; bounding this keeps huge tokens linear


def _anchored_matches(rule: Rule, text: str, low: str, taken: _Spans, scan: Scan | None) -> Iterator[Finding]:
    """Try ``rule`` only at the token starts around its anchor keyword hits."""
    match = rule.compiled.match
    tried: set[int] = set()
    done_until = 0
    if rule.compiled_anchor is not None:
        hits = [a.span() for a in rule.compiled_anchor.finditer(low)]
    else:
        hits = _hits(low, rule, scan)
    for start, _ in hits:
        floor = max(0, start - _MAX_WALK_BACK)
        while start > floor and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        starts = (start - 1, start) if start > 0 and text[start - 1] in "\"'" else (start,)
        for st in starts:
            if st < done_until or st in tried:
                continue
            tried.add(st)
            m = match(text, st)
            if m is None:
                continue
            found = _judge(rule, m, taken)
            if found:
                done_until = m.end()
                yield found
                break


def _safe_validate(rule: Rule, m: re.Match[str]) -> str | None:
    """Kind for an accepted match; validators never make redaction raise."""
    if rule.validator is None:
        return rule.kind
    try:
        ok = rule.validator(m)
    except Exception:  # noqa: BLE001 - redaction must never raise on str input
        return None
    if isinstance(ok, str):
        return ok
    return rule.kind if ok else None


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


def config_path() -> Path:
    """``$REMEM_REDACT_CONFIG``, else ``$REMEM_HOME/redact.json``."""
    env = os.environ.get("REMEM_REDACT_CONFIG")
    return Path(env).expanduser() if env else Path(os.environ.get("REMEM_HOME") or "~/.remem").expanduser() / "redact.json"


def configured(pii: bool = False) -> Redactor:
    """The redactor remem uses on its write paths: the rules plus the user's configuration, if any.

    ``redact.json``: ``{"allow": ["literal or regex", ...], "patterns": {"kind": "regex", ...}}``. A broken
    file is an error that names the file, never a silent fallback to fewer rules."""
    path = config_path()
    try:
        stat = path.stat()
    except OSError:
        return _default(bool(pii))
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
