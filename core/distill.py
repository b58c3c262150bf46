"""Turn a conversation into memories: facts, preferences, decisions, lessons, and one summary per session.

``remember(engine, messages, scope=..., session=...)`` is what ``Memory.remember`` runs. The pipeline:

1. **Redact** every message (secrets always, PII on request) before anything is stored or sent anywhere.
2. **Normalise** OpenAI / Anthropic / plain-text conversations into turns; skip the part of a session that an
   earlier capture already distilled (the session summary remembers how far it got).
3. **Extract** candidates: with an LLM (one structured-output call, token budgeted) or, keyless by default, with
   a deterministic extractive distiller (pattern-scored sentences plus files, commands and errors).
4. **Admit**: a gate drops greetings, restated instructions, JSON blobs, logs and stack traces.
5. **Reconcile** (LLM only): candidates with similar memories in the scope go to one batched call that says
   add / merge / supersede / drop for each; supersede keeps history (``search(as_of=...)`` still finds it).
6. **Store** the memories and create or update the session's single summary.

An LLM failure never loses the capture: the redacted messages go to the durable pending queue
(:mod:`remem.core.pending`, drained by :func:`drain_pending`) and the keyless summary is stored at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .llm import ChatLLM, DEFAULT_LLM_MODEL, Usage, llm_settings_from_env
from .pending import PendingQueue, queue_for
from .records import normalize_text
from .tokens import count_tokens, truncate_to_tokens
from .types import MemoryRecord, NotFoundError, ProviderError, RememError, Scope

log = logging.getLogger("remem.distill")

MEMORY_KINDS: tuple[str, ...] = ("fact", "preference", "decision", "event", "lesson")
DEFAULT_IMPORTANCE = {"preference": 7, "decision": 7, "fact": 6, "lesson": 6, "event": 4, "summary": 4}
USAGE_FILE = "usage.jsonl"
SUMMARY_TAG = "session"

# ====================================================================== results


@dataclass
class Candidate:
    """A memory the distiller proposes (before the gate and reconciliation)."""

    text: str
    kind: str = "fact"
    tags: tuple[str, ...] = ()
    importance: int = 5
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Distillation:
    """What one distiller produced for one capture."""

    candidates: list[Candidate]
    summary: str | None
    summary_metadata: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


@dataclass
class RememberResult:
    """What a capture changed. ``queued`` means the LLM failed and the raw (redacted) capture waits in the
    pending queue; ``usage`` is the LLM tokens it cost (zeros when keyless)."""

    added: list[MemoryRecord] = field(default_factory=list)
    merged: list[MemoryRecord] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    dropped: int = 0
    summary: MemoryRecord | None = None
    queued: bool = False
    redactions: dict[str, int] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=lambda: Usage().as_dict())
    session: str | None = None
    distiller: str = "keyless"
    error: str | None = None

    @property
    def stored(self) -> list[MemoryRecord]:
        """Every memory this capture wrote or changed (summary included)."""
        return [*self.added, *self.merged, *([self.summary] if self.summary else [])]


# ====================================================================== the admission gate


@dataclass(frozen=True)
class Admission:
    """The gate's verdict on one text: ``ok`` and, when refused, why (a short machine-readable reason)."""

    ok: bool
    reason: str = "ok"

    def __bool__(self) -> bool:
        return self.ok


_PLEASANTRY_WORDS = (
    r"hi|hello|hey|heya|yo|howdy|good (?:morning|afternoon|evening|night)|thanks?|thank you|thankyou|thx|ty|tysm|"
    r"cheers|ok|okay|okey|k|kk|sure|yes|yeah|yep|yup|no|nope|nah|great|cool|nice|perfect|awesome|excellent|"
    r"wonderful|amazing|fantastic|got it|sounds good|will do|done|np|no problem|no worries|you'?re welcome|"
    r"welcome|bye|goodbye|see you|see ya|later|lgtm|agreed|right|alright|all right|understood|makes sense|"
    r"there|all|everyone|folks|team|so much|a lot|very much|again|indeed|fine|good|wow|haha|lol|please|pls|sir|mate|buddy|man|that'?s it|"
    r"that helps|that works|exactly|correct|true|go ahead|continue|proceed|go on|let'?s go|yes please"
)
_PLEASANTRY_RE = re.compile(rf"^(?:(?:{_PLEASANTRY_WORDS})\b[\s,.!?:;)(\-~*]*)+$", re.I)
_SYSTEM_RE = re.compile(
    r"^(?:you are|you're) (?:a|an|the|my|chatgpt|claude)\b|^as an ai\b|^your (?:task|role|job|goal|purpose) is\b|"
    r"^system(?: prompt)?:|^<\s*system|^(?:instructions|rules|guidelines):|^you (?:must|should) always\b", re.I)
_RESTATE_RE = re.compile(
    r"^(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|great|got it)[,!.]?\s+(?:i'?ll|i will|let me|here)\b|"
    r"(?:let me|i'?ll now|i will now|i'?m going to|i am going to|i'?ll start by|first,? i'?ll|i'?ll go ahead)\b|"
    r"(?:you(?:'ve)? (?:asked|want|wanted|would like|requested)|as (?:you )?requested|per your (?:request|instructions)|"
    r"to summari[sz]e your request|your request is|i understand (?:that )?you)\b|"
    r"here(?:'s| is| are) (?:the|a|an|your|what|how)\b)", re.I)
_TRACE_LINE_RE = re.compile(r'^\s+File ".*", line \d+|^\s+at [\w.$<>/\[\]]+\(.*\)\s*$|^\s+at .+:\d+:\d+\)?$', re.M)
_LOG_LINE_RE = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|TRACE|FATAL)\b|"
    r"(?:Requirement already satisfied|Collecting|Downloading|Installing|Successfully|Building|Compiling|Running|"
    r"Fetching|Resolving|Updating|Removing|Processing)\b|[=\-*#]{5,}|\S+\s+(?:PASSED|FAILED|ERROR|SKIPPED|ok)\b|"
    r"[\w./-]+:\d+(?::\d+)?:|\s*\d+%\s|\$ )", re.I)
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[^\]]+\]")
MAX_MEMORY_CHARS = 2000


def check_admission(text: Any) -> Admission:
    """Is ``text`` worth keeping as a memory? Refuses, with a reason, what never helps recall:

    ``empty`` / ``too_short``, ``pleasantry`` (greetings, thanks, ok), ``system_prompt``, ``restated_instruction``
    (the assistant repeating the request or narrating what it will do), ``json_blob``, ``stack_trace``,
    ``log_output``, ``too_long``, ``no_words`` (mostly symbols or code) and ``only_redacted``.
    """
    if not isinstance(text, str):
        return Admission(False, "empty")
    s = text.strip()
    if not s:
        return Admission(False, "empty")
    if len(s) > MAX_MEMORY_CHARS:
        if "Traceback (most recent call last)" in s or len(_TRACE_LINE_RE.findall(s)) >= 2:
            return Admission(False, "stack_trace")
        return Admission(False, "too_long")
    if _PLEASANTRY_RE.match(re.sub(r"[^\w\s',.!?:;()\-~*]", " ", s).strip() or "ok"):
        return Admission(False, "pleasantry")
    if _PLACEHOLDER_RE.search(s) and len(_content_words(_PLACEHOLDER_RE.sub(" ", s))) < 3:
        return Admission(False, "only_redacted")  # "User's key is [REDACTED:...]" helps no one
    words = re.findall(r"[^\W\d_]{2,}", s)
    if len(s) < 8 or len(words) < 2:
        return Admission(False, "too_short")
    if s[0] in "{[" and _is_json(s):
        return Admission(False, "json_blob")
    if "Traceback (most recent call last)" in s or len(_TRACE_LINE_RE.findall(s)) >= 2:
        return Admission(False, "stack_trace")
    lines = [ln for ln in s.splitlines() if ln.strip()]
    if len(lines) >= 4 and sum(1 for ln in lines if _LOG_LINE_RE.match(ln)) >= max(3, len(lines) // 2):
        return Admission(False, "log_output")
    if sum(len(w) for w in words) / max(1, len(s)) < 0.4:
        if s.count('":') >= 2 or s.count("{") >= 2:
            return Admission(False, "json_blob")
        return Admission(False, "no_words")
    if _SYSTEM_RE.match(s):
        return Admission(False, "system_prompt")
    if _RESTATE_RE.match(s):
        return Admission(False, "restated_instruction")
    return Admission(True)


def admit(text: Any) -> bool:
    """True when ``text`` may be stored as a memory (see :func:`check_admission` for the reasons)."""
    return check_admission(text).ok


def _is_json(s: str) -> bool:
    try:
        json.loads(s)
        return True
    except ValueError:
        return s.count('":') >= 2 and (s.rstrip().endswith(("}", "]", "...", "…")))


# ====================================================================== conversations -> turns


@dataclass(frozen=True)
class Turn:
    """One normalised unit of a conversation.

    ``role`` is ``user``, ``assistant``, ``system``, ``tool_call`` (the assistant calling a tool: ``name`` and
    JSON ``text`` arguments) or ``tool_result`` (``name`` of the tool when known, ``is_error``).
    """

    role: str
    text: str
    name: str | None = None
    is_error: bool = False
    args: Mapping[str, Any] | None = None


_ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "bot": "assistant",
                 "developer": "system", "function": "tool", "toolmessage": "tool", "humanmessage": "user",
                 "aimessage": "assistant", "systemmessage": "system"}
_TRANSCRIPT_RE = re.compile(r"^\s*(user|human|assistant|ai|system|tool)\s*:\s*", re.I | re.M)


def to_plain_messages(messages: Any) -> list[dict[str, Any]]:
    """Accept a list of dicts (OpenAI or Anthropic shapes), message objects with ``role``/``type`` and
    ``content`` attributes (LangChain, LlamaIndex...), or a plain string (one user message, or a
    ``User: ... / Assistant: ...`` transcript), and return JSON-ready dicts."""
    if messages is None:
        return []
    if isinstance(messages, str):
        return _parse_transcript(messages)
    if isinstance(messages, Mapping):
        messages = [messages]
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, str):
            out.append({"role": "user", "content": msg})
        elif isinstance(msg, Mapping):
            out.append(_jsonable(dict(msg)))
        else:
            out.append(_object_message(msg))
    return out


def _parse_transcript(text: str) -> list[dict[str, Any]]:
    marks = list(_TRANSCRIPT_RE.finditer(text))
    if len(marks) < 2 or marks[0].start() > 0 and text[: marks[0].start()].strip():
        return [{"role": "user", "content": text}]
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        role = _ROLE_ALIASES.get(m.group(1).lower(), m.group(1).lower())
        out.append({"role": role, "content": text[m.end():end].strip()})
    return out


def _object_message(msg: Any) -> dict[str, Any]:
    dump = getattr(msg, "model_dump", None) or getattr(msg, "dict", None)
    data: dict[str, Any] = {}
    if callable(dump):
        try:
            data = dict(dump())
        except Exception:  # noqa: BLE001 - best effort for foreign message objects
            data = {}
    role = getattr(msg, "role", None) or data.get("role") or getattr(msg, "type", None) or data.get("type")
    role = getattr(role, "value", role)
    content = getattr(msg, "content", data.get("content"))
    out: dict[str, Any] = {"role": str(role or "user").lower(), "content": _jsonable(content)}
    calls = getattr(msg, "tool_calls", None) or data.get("tool_calls")
    if calls:
        out["tool_calls"] = [{"type": "function", "id": c.get("id"),
                              "function": {"name": c.get("name"), "arguments": c.get("args", {})}}
                             if isinstance(c, Mapping) and "args" in c else _jsonable(c) for c in calls]
    for key in ("tool_call_id", "name"):
        value = getattr(msg, key, None) or data.get(key)
        if value:
            out[key] = str(value)
    return out


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


def normalize_messages(messages: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """Plain message dicts -> :class:`Turn` list (OpenAI ``tool_calls``/``role: tool``, Anthropic content blocks
    ``text``/``tool_use``/``tool_result``; images, thinking and other blocks are skipped)."""
    turns: list[Turn] = []
    tool_names: dict[str, str] = {}
    for msg in messages:
        role = str(msg.get("role") or msg.get("type") or "user").lower()
        role = _ROLE_ALIASES.get(role, role)
        content = msg.get("content")
        if role == "tool":
            name = msg.get("name") or tool_names.get(str(msg.get("tool_call_id")))
            turns.append(Turn("tool_result", _content_text(content), name=name,
                              is_error=bool(msg.get("is_error") or msg.get("status") == "error")))
            continue
        if isinstance(content, str):
            if content.strip():
                turns.append(Turn(role, content))
        elif isinstance(content, list):
            texts: list[str] = []
            for block in content:
                if isinstance(block, str):
                    texts.append(block)
                    continue
                if not isinstance(block, Mapping):
                    continue
                btype = block.get("type")
                if btype in ("text", "input_text", "output_text") or (btype is None and "text" in block):
                    texts.append(str(block.get("text") or ""))
                elif btype == "tool_use":
                    if texts:
                        turns.append(Turn(role, "\n".join(texts)))
                        texts = []
                    args = block.get("input") or {}
                    tool_names[str(block.get("id"))] = str(block.get("name"))
                    turns.append(Turn("tool_call", _args_text(args), name=str(block.get("name")),
                                      args=args if isinstance(args, Mapping) else None))
                elif btype == "tool_result":
                    if texts:
                        turns.append(Turn(role, "\n".join(texts)))
                        texts = []
                    turns.append(Turn("tool_result", _content_text(block.get("content")),
                                      name=tool_names.get(str(block.get("tool_use_id"))),
                                      is_error=bool(block.get("is_error"))))
            if any(t.strip() for t in texts):
                turns.append(Turn(role, "\n".join(t for t in texts if t.strip())))
        for call in msg.get("tool_calls") or ():
            if not isinstance(call, Mapping):
                continue
            fn = call.get("function") if isinstance(call.get("function"), Mapping) else call
            name = str(fn.get("name") or "tool")
            raw = fn.get("arguments", fn.get("args", {}))
            args = raw
            if isinstance(raw, str):
                try:
                    args = json.loads(raw)
                except ValueError:
                    args = {"input": raw}
            tool_names[str(call.get("id"))] = name
            turns.append(Turn("tool_call", _args_text(args), name=name, args=args if isinstance(args, Mapping) else None))
    return turns


_RECALLED_LINE_RE = re.compile(r"^- \[\d{4}-\d\d-\d\d · [\w-]+\] .*$\n?", re.M)
_MEMORY_TOOL_RE = re.compile(r"^(?:memory[_-]|remem)|_memory$", re.I)


def strip_recalled(text: str) -> str:
    """Remove memory context that remem itself injected (``Memory.context`` blocks), so a capture never
    re-learns what was recalled into the prompt."""
    from .formatting import HEADER

    if HEADER not in text and "· " not in text:
        return text
    return _RECALLED_LINE_RE.sub("", text.replace(HEADER, "")).strip()


def conversation_turns(messages: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """The turns worth distilling: no system prompt, no remem memory-tool traffic, no injected recall."""
    out = []
    for t in normalize_messages(messages):
        if t.role == "system" or (t.role in ("tool_call", "tool_result") and _MEMORY_TOOL_RE.search(t.name or "")):
            continue
        if t.role in ("user", "assistant"):
            text = strip_recalled(t.text)
            if not text.strip():
                continue
            if text != t.text:
                t = Turn(t.role, text, t.name, t.is_error, t.args)
        out.append(t)
    return out


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and ("text" in block or block.get("type") == "text"):
                parts.append(str(block.get("text") or ""))
        return "\n".join(parts)
    return json.dumps(content, default=str)


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


# ====================================================================== identifiers (files, commands, errors)

_FILE_RE = re.compile(
    r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w@+-][\w.@+-]*/)*[\w@+-][\w.@+-]*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|rs|go|java|"
    r"kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|rst|json|jsonl|ya?ml|toml|ini|cfg|conf|env|sh|bash|zsh|sql|txt|csv|html|"
    r"css|scss|vue|svelte|lock|gradle|xml|proto|tf|dockerfile|ipynb)\b(?![\w/])", re.I)
_CLI_WORDS = ("pip", "pip3", "python", "python3", "pytest", "uv", "poetry", "npm", "npx", "pnpm", "yarn", "node",
              "git", "make", "cargo", "go", "docker", "kubectl", "helm", "terraform", "brew", "apt", "apt-get",
              "curl", "wget", "ls", "cd", "cat", "grep", "rg", "sed", "mkdir", "rm", "mv", "cp", "chmod", "ruff",
              "mypy", "black", "tox", "nox", "conda", "bundle", "rails", "mvn", "gradle", "dotnet", "psql",
              "sqlite3", "systemctl", "journalctl", "ssh", "scp", "export", "source", "alembic", "django-admin",
              "flask", "uvicorn", "gunicorn", "remem", "claude", "gh", "bash", "sh", "java", "javac", "tsc",
              "eslint", "prettier", "jest", "vitest", "deno", "bun", "rustc", "gcc", "clang", "cmake", "pre-commit")
_CMD_RE = re.compile(r"^\s*(?:\$\s+)?((?:sudo\s+)?(?:" + "|".join(re.escape(w) for w in _CLI_WORDS) +
                     r")(?:\s+[^\s].*)?)$")
_BACKTICK_RE = re.compile(r"`([^`\n]{2,160})`")
_FENCE_RE = re.compile(r"```[\w+-]*\n?(.*?)```", re.S)
_ERROR_LINE_RE = re.compile(
    r"^\s*((?:[\w.]+(?:Error|Exception|Warning|Exit|Interrupt|Fault)|error(?:\[\w+\])?|fatal|FATAL|ERROR|panic|"
    r"npm ERR!|E\s{2,}\w+Error|FAILED|Segmentation fault|command not found)\b[:\s!].{2,}|"
    r".*\bcommand not found\b.*|.*\bNo such file or directory\b.*|.*\bPermission denied\b.*)$", re.M)
_COMMAND_KEYS = ("command", "cmd", "shell_command", "script")
_SHELL_TOOLS = re.compile(r"bash|shell|terminal|exec|run|command|console|sh$", re.I)


def _add_unique(out: list[str], item: str, cap: int) -> None:
    item = item.strip()
    if item and item not in out and len(out) < cap:
        out.append(item)


def extract_identifiers(turns: Sequence[Turn]) -> dict[str, list[str]]:
    """Files, commands, errors and tools a conversation touched (for tags, metadata and the summary)."""
    files: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    tools: list[str] = []
    for t in turns:
        if t.role == "tool_call":
            _add_unique(tools, t.name or "tool", 12)
            args = t.args or {}
            for key in _COMMAND_KEYS:
                if isinstance(args.get(key), str):
                    _add_unique(commands, args[key].strip().splitlines()[0][:160] if args[key].strip() else "", 10)
            if not any(isinstance(args.get(k), str) for k in _COMMAND_KEYS) and _SHELL_TOOLS.search(t.name or "") \
                    and isinstance(args.get("input"), str):
                _add_unique(commands, args["input"].strip()[:160], 10)
            for value in _strings(args):
                for m in _FILE_RE.finditer(value):
                    _add_unique(files, m.group(0), 15)
        elif t.role == "tool_result":
            found = _error_lines(t.text)
            if found:
                _add_unique(errors, found[-1][:200], 6)
        elif t.role in ("user", "assistant"):
            prose = _FENCE_RE.sub(" ", t.text)
            for m in _FILE_RE.finditer(prose):
                _add_unique(files, m.group(0), 15)
            for block in _FENCE_RE.findall(t.text):
                for line in block.splitlines():
                    cm = _CMD_RE.match(line)
                    if cm:
                        _add_unique(commands, cm.group(1)[:160], 10)
            for tick in _BACKTICK_RE.findall(prose):
                cm = _CMD_RE.match(tick)
                if cm and " " in cm.group(1):
                    _add_unique(commands, cm.group(1)[:160], 10)
            if t.role == "user":
                for line in _error_lines(t.text)[-1:]:
                    _add_unique(errors, line[:200], 6)
    return {"files": files, "commands": commands, "errors": errors, "tools": tools}


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _error_lines(text: str) -> list[str]:
    return [m.group(0).strip() for m in _ERROR_LINE_RE.finditer(text or "")][-3:]


# ====================================================================== the keyless distiller

_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])|(?<=[.!?])\s*\n|\n{2,}|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_BULLET_RE = re.compile(r"^\s*(?:[-*•>]+|\d+[.)]|#+)\s*")
_LEAD_RE = re.compile(r"^(?:also|and|oh and|btw|by the way|fyi|just so you know|note|ps|p\.s\.|one more thing|"
                      r"for the record|remember(?: that)?|please remember(?: that)?|keep in mind(?: that)?)[,:]?\s+",
                      re.I)
_QUESTION_RE = re.compile(r"\?\s*$")
_REASON_RE = re.compile(r"\b(?:because|since|so that|due to|as it|otherwise|which means|in order to)\b", re.I)


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    score: float
    roles: tuple[str, ...]


def _p(kind: str, score: float, roles: tuple[str, ...], pattern: str) -> _Pattern:
    return _Pattern(kind, re.compile(pattern, re.I), score, roles)


_U, _A, _UA = ("user",), ("assistant",), ("user", "assistant")
_PATTERNS: tuple[_Pattern, ...] = (
    _p("preference", 0.9, _U, r"\b(?:i|we)\s+(?:really\s+|generally\s+|usually\s+|strongly\s+|much\s+)?"
       r"(?:prefer|like|love|enjoy|hate|dislike|can'?t stand|despise|avoid)\b"),
    _p("preference", 0.85, _U, r"\b(?:i|we)\s+(?:don'?t|do not|never)\s+(?:like|want|use|enjoy)\b"),
    _p("preference", 0.85, _U, r"\b(?:i|we)(?:'d| would)\s+(?:rather|prefer|like)\b|\bmy (?:favou?rite|preferred)\b"),
    _p("preference", 0.8, _U, r"^(?:please\s+)?(?:always|never|don'?t ever|do not ever|make sure (?:to|you)|"
       r"from now on|going forward|in (?:the )?future)\b"),
    _p("preference", 0.8, _U, r"\b(?:i|we)\s+(?:always|never|usually|rarely|only)\s+(?!know\b|remember\b)\w+"),
    _p("preference", 0.75, _U, r"\b(?:always|never)\s+(?:use|run|write|add|put|commit|push|ask|call|format|"
       r"include|mention|reply|answer|respond)\b"),
    _p("fact", 0.85, _U, r"\bmy name(?:'s| is)\b|\bcall me\b|\bi(?:'m| am) called\b"),
    _p("fact", 0.8, _U, r"\bi\s+(?:work|worked|am working)\s+(?:at|for|on|as|in)\b|\bi(?:'m| am) (?:based|located) in\b|"
       r"\bi\s+(?:live|lived|moved)\s+(?:in|to|at)\b|\bi(?:'m| am) from\b"),
    _p("fact", 0.7, _U, r"^i(?:'m| am) an?\s+(?!bit\b|little\b|lot\b|few\b)\w+"),
    _p("fact", 0.7, _U, r"^(?:i|we)(?:'m|'re| am| are)\s+(?:both\s+|all\s+)?(?:vegetarian|vegan|pescatarian|"
       r"allergic|lactose|gluten|diabetic|married|single|divorced|retired|pregnant|left-handed|colou?r-?blind|"
       r"deaf|blind|remote|freelance|self-employed|unemployed|based|located|from|originally)\b"),
    _p("fact", 0.7, _U, r"^(?:(?:also|and|btw|oh|fyi|so)[,:]?\s+)*(?:my|our)\s+[\w-]+(?:\s+[\w-]+)?\s+"
       r"(?:is|are|was|were|has|have|lives|works|uses|runs)\b"),
    _p("fact", 0.7, _U, r"\bmy\s+(?:wife|husband|partner|son|daughter|kids?|children|dog|cat|team|company|employer|"
       r"manager|boss|role|job|title|email|birthday|timezone|time zone|project|stack|os|laptop|machine|setup|"
       r"editor|ide|shell|language|server|database|repo|repository|app|startup|product|client|customer)\b"),
    _p("fact", 0.65, _U, r"\b(?:i|we)\s+(?:use|run|deploy|host|have|own|maintain|develop|build)\s+(?!to\b|it\b|this\b|"
       r"that\b)\w+"),
    _p("fact", 0.65, _UA, r"\b(?:our|the)\s+(?:project|team|company|stack|app|repo|codebase|api|service|backend|"
       r"frontend|database|server|cluster|deployment|ci|pipeline)\s+(?:is|uses|runs|has|lives|targets|requires|"
       r"depends)\b"),
    _p("decision", 0.85, _UA, r"\b(?:we|i)(?:'ve| have)?\s+decided\b|\bdecided to\b|\bthe decision (?:is|was)\b|"
       r"\bsettled on\b|\bopted (?:for|to)\b|\bwe chose\b|\bi chose\b|\bwe(?:'re| are) going with\b"),
    _p("decision", 0.75, _UA, r"\blet'?s\s+(?:use|go with|switch|stick|keep|move|adopt|pin|drop|replace|stay)\b|"
       r"\bgoing with\b|\bwe(?:'ll| will)\s+(?:use|go with|switch|keep|stick|adopt|pin|drop|replace)\b|"
       r"\bthe plan is\b|\bwe should (?:use|switch|keep|pin|drop)\b"),
    _p("decision", 0.6, _UA, r"\b(?:switched|migrated|moved|changed|upgraded|downgraded|pinned)\s+(?:\w+\s+){0,3}"
       r"(?:to|from)\b|\binstead of\b"),
    _p("lesson", 0.85, _UA, r"\b(?:the\s+)?(?:root cause|problem|issue|bug|culprit|cause|error)\s+(?:was|is|turned out)\b|"
       r"\bturns? out\b|\bturned out\b|\bthe (?:fix|solution|workaround|trick) (?:was|is)\b"),
    _p("lesson", 0.8, _UA, r"\b(?:fixed|solved|resolved)\s+(?:it\s+|this\s+|that\s+|the\s+\w+\s+)?(?:by|with)\b|"
       r"\bcaused by\b|\bworkaround\b|\blesson(?:s)? learn(?:ed|t)\b|\bnote to self\b|\bgotcha\b"),
    _p("lesson", 0.75, _UA, r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t|will not|can'?t|cannot)\s+work\b|"
       r"\bfailed because\b|\bbreaks? (?:when|if|because)\b|\bmake sure (?:to|that)\b|\bneeds? to be\b"),
    _p("event", 0.6, _UA, r"\b(?:it|that|this)\s+(?:worked|works now|did the trick|fixed it|solved it)\b|"
       r"\ball (?:\d+ )?tests? (?:pass|passed|are passing|green)\b|\b(?:deployed|released|shipped|merged|published)\b"),
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "'m": "is", "'ve": "has", "'d": "would",
              "'ll": "will", "don't": "doesn't", "do not": "does not", "haven't": "hasn't", "have not": "has not",
              "am not": "is not", "'m not": "is not"}
_MODALS = {"can", "could", "would", "will", "should", "must", "might", "may", "can't", "cannot", "won't",
           "wouldn't", "shouldn't", "couldn't", "was", "wasn't", "had", "did", "didn't", "went", "got", "made",
           "left", "chose", "bought", "built", "wrote", "ran", "met", "began", "became", "grew", "knew", "thought",
           "told", "said", "saw", "took", "gave", "found", "felt", "kept", "lost", "paid", "sent", "spent", "brought",
           "caught", "taught", "sold", "held", "heard", "meant", "forgot", "broke", "spoke", "drove", "flew", "ate",
           "drank", "slept", "won", "understood", "stood", "sat", "fell", "led", "read", "put", "set", "cut", "let",
           "quit", "hit", "shut", "might've", "must've", "used", "need", "needed"}
_ADVERBS = r"(?:(?:really|generally|usually|strongly|always|never|often|mostly|also|still|only|just|much|"
_ADVERBS += r"definitely|typically|normally|currently|now|actually|mainly|rarely|sometimes)\s+)*"
_I_VERB_RE = re.compile(r"^i(?P<contr>'m not|'m|'ve|'d|'ll)?\s*(?P<adv>" + _ADVERBS + r")(?P<verb>don't|do not|"
                        r"haven't|have not|am not|[a-z']+)?", re.I)
_CLAUSE_RE = re.compile(r"(?:,\s*|\s+)(?:and|but|so|also)\s+(?=(?:i|my|we)\b)|;\s+", re.I)


def _conjugate(verb: str) -> str:
    v = verb.lower()
    if v in _IRREGULAR:
        return _IRREGULAR[v]
    if v in _MODALS or v.endswith("ed") or "'" in v:
        return v
    if v.endswith(("s", "sh", "ch", "x", "z", "o")):
        return v + "es"
    if len(v) > 2 and v.endswith("y") and v[-2] not in "aeiou":
        return v[:-1] + "ies"
    return v + "s"


def _first_person_to_user(sentence: str) -> str:
    """Rewrite a user's first-person sentence to the third person ("I prefer" -> "User prefers",
    "My name is" -> "User's name is") so a memory reads right in any later prompt."""
    s = _LEAD_RE.sub("", sentence).strip()
    out = _rewrite_subject(s)
    if out.startswith("User"):
        return _INNER_FIRST_PERSON_RE.sub(lambda m: _INNER_FIRST_PERSON[m.group(0).lower()], out)
    return f"User: {out}"  # not rewritable: keep the words, say who said them


_INNER_FIRST_PERSON = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs"}
_INNER_FIRST_PERSON_RE = re.compile(r"\b(?:my|me|myself|mine)\b", re.I)


def _rewrite_subject(s: str) -> str:
    low = s.lower()
    if low.startswith("my "):
        return "User's " + s[3:]
    if low.startswith("call me "):
        return "User wants to be called " + s[8:]
    m = _I_VERB_RE.match(s)
    if m and (low.startswith(("i ", "i'")) ):
        contr, adv, verb = m.group("contr"), m.group("adv") or "", m.group("verb")
        if contr:
            rest = s[m.start("adv"):] if m.group("adv") is not None else s[m.end("contr"):].lstrip()
            return f"User {_IRREGULAR[contr.lower()]} {rest.lstrip()}".rstrip()
        if verb:
            return f"User {adv}{_conjugate(verb)}{s[m.end('verb'):]}"
    return s[:1].upper() + s[1:] if s else s


def split_sentences(text: str) -> list[str]:
    """Prose sentences and bullet items, with code blocks removed."""
    prose = _FENCE_RE.sub("\n\n", text or "")
    out = []
    for part in _SENT_SPLIT_RE.split(prose):
        part = _BULLET_RE.sub("", part.strip()).strip()
        part = re.sub(r"\s+", " ", part).strip(" *_")
        if part:
            out.append(part)
    return out


_REQUEST_RE = re.compile(r"\?\s*$|\b(?:can|could|would|will) you\b|\bplease\b|\bhelp\b|\bhow (?:do|can|to|should)\b|"
                         r"\bi (?:want|need|would like|'d like)\b|^(?:let'?s|fix|add|write|create|make|implement|build|"
                         r"update|change|remove|delete|refactor|explain|find|show|run|set up|setup|install|debug|"
                         r"review|rename|move|convert|generate|test|check|investigate|deploy|migrate|tell me|why|what|"
                         r"where|when|which|who)\b", re.I)


def _end(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _clip_words(text: str, n: int) -> str:
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]).rstrip(",;:") + " …"


class KeylessDistiller:
    """Deterministic, offline extraction: pattern-scored sentences become memories with sensible kinds, and the
    session summary keeps the request, the outcome and the files/commands/errors touched. Never fails."""

    name = "keyless"

    def __init__(self, *, max_memories: int = 12, min_score: float = 0.6, max_words: int = 60) -> None:
        self.max_memories = max_memories
        self.min_score = min_score
        self.max_words = max_words

    # ------------------------------------------------------------------ memories
    def candidates(self, turns: Sequence[Turn]) -> list[Candidate]:
        scored: list[tuple[float, int, Candidate]] = []
        seen: set[str] = set()
        pending_errors: list[str] = []
        order = 0
        for t in turns:
            if t.role == "tool_result":
                pending_errors.extend(_error_lines(t.text)[-1:])
                continue
            if t.role not in ("user", "assistant"):
                continue
            sentences = split_sentences(t.text)
            if t.role == "user":
                sentences = [c.strip(" ,;") for sent in sentences for c in _CLAUSE_RE.split(sent) if c.strip(" ,;")]
            for sent in sentences:
                order += 1
                cand = self._score(sent, t.role, pending_errors)
                if cand is None:
                    continue
                score, c = cand
                key = normalize_text(c.text)
                if key in seen:
                    continue
                seen.add(key)
                scored.append((score, order, c))
        best = sorted(scored, key=lambda x: -x[0])[: self.max_memories]
        return [c for _, _, c in sorted(best, key=lambda x: x[1])]

    def _score(self, sentence: str, role: str, pending_errors: list[str]) -> tuple[float, Candidate] | None:
        words = sentence.split()
        if len(words) < (2 if role == "user" else 4):
            return None
        best: _Pattern | None = None
        for pat in _PATTERNS:
            if role in pat.roles and pat.regex.search(sentence) and (best is None or pat.score > best.score):
                best = pat
        if best is None:
            return None
        score = best.score
        if _QUESTION_RE.search(sentence):
            if best.kind in ("preference", "fact", "decision"):
                return None
            score -= 0.3
        if _REASON_RE.search(sentence):
            score += 0.1
        from .lexical import identifiers

        idents = identifiers(sentence)
        if idents:
            score += 0.05
        if len(words) > self.max_words:
            score -= 0.15
        if best.kind == "event" and not idents and len(words) < 8:
            return None  # "It worked." alone says nothing later; the summary keeps the outcome
        if score < self.min_score:
            return None
        text = _clip_words(sentence, self.max_words)
        if role == "user":
            text = _first_person_to_user(text)
        else:
            text = _LEAD_RE.sub("", text).strip()
            text = text[:1].upper() + text[1:]
        text = _end(text)
        meta: dict[str, Any] = {"role": role}
        if best.kind == "lesson" and pending_errors:
            err = pending_errors.pop()
            if err.lower() not in text.lower():
                text = f"{text} (error: {err[:160]})"
                meta["error"] = err[:200]
        if not admit(text):
            return None
        tags = tuple(i for i in idents if len(i) <= 60)[:4]
        return score, Candidate(text=text, kind=best.kind, tags=tags, importance=DEFAULT_IMPORTANCE[best.kind],
                                metadata=meta)

    # ------------------------------------------------------------------ summary
    def summary_parts(self, turns: Sequence[Turn]) -> dict[str, Any]:
        """Structured pieces of the session summary (kept in its metadata so later captures can extend it)."""
        requests: list[str] = []
        for t in turns:
            if t.role != "user" or not admit(t.text.strip()[:600]):
                continue
            sents = [_LEAD_RE.sub("", x).strip() for x in split_sentences(t.text) if admit(x)]
            asks = [x for x in sents if _REQUEST_RE.search(x)]
            picked = sents[:1] + [a for a in asks[:1] if a not in sents[:1]]  # context + the actual ask
            req = " ".join(_clip_words(x, 25) for x in picked)
            if req and req not in requests:
                requests.append(req)
        outcome = ""
        for t in reversed(turns):
            if t.role == "assistant":
                sents = [s for s in split_sentences(t.text) if admit(s)]
                if sents:
                    outcome = _clip_words(" ".join(sents[:2]), 45)
                    break
        return {"requests": requests, "outcome": outcome, **extract_identifiers(turns)}

    @staticmethod
    def merge_parts(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
        if not old:
            return dict(new)
        out: dict[str, Any] = {}
        for key in ("requests", "files", "commands", "errors", "tools"):
            merged: list[str] = []
            for item in [*(old.get(key) or []), *(new.get(key) or [])]:
                if isinstance(item, str) and item not in merged:
                    merged.append(item)
            out[key] = merged
        out["outcome"] = new.get("outcome") or old.get("outcome") or ""
        return out

    @staticmethod
    def render_summary(parts: Mapping[str, Any], max_tokens: int = 300) -> str | None:
        requests = list(parts.get("requests") or [])
        if not requests and not parts.get("outcome"):
            return None
        bits = []
        if requests:
            verb = "asked" if _REQUEST_RE.search(requests[0]) else "said"
            bits.append(f"Session summary. The user {verb}: {_end(requests[0])}")
            later = requests[1:]
            if len(later) > 3:
                later = [later[0], "…", *later[-2:]]
            if later:
                bits.append("Then: " + " ".join(_end(r) for r in later))
        else:
            bits.append("Session summary.")
        if parts.get("outcome"):
            bits.append(f"Outcome: {_end(parts['outcome'])}")
        for key, label, n in (("files", "Files", 8), ("commands", "Commands", 5), ("errors", "Errors seen", 3)):
            items = list(parts.get(key) or [])[:n]
            if items:
                bits.append(f"{label}: " + ", ".join(f"`{i}`" if key == "commands" else i for i in items) + ".")
        return truncate_to_tokens(" ".join(bits), max_tokens, keep="head")

    def distill(self, turns: Sequence[Turn], *, context_turns: Sequence[Turn] | None = None,
                previous: Mapping[str, Any] | None = None) -> Distillation:
        """Candidates from ``turns`` (the new part of the session); the summary covers ``context_turns``
        (the whole session when known) merged with ``previous`` summary parts."""
        parts = self.summary_parts(context_turns if context_turns is not None else turns)
        if context_turns is None:
            parts = self.merge_parts(previous, parts)
        return Distillation(candidates=self.candidates(turns), summary=self.render_summary(parts),
                            summary_metadata={"parts": parts})


# ====================================================================== the LLM distiller

_EXTRACT_SYSTEM = """You maintain the long-term memory of an AI assistant. From the conversation, extract what will \
still be useful in future conversations, as short standalone statements:
- fact: stable facts about the user, their project, environment or people ("User's team deploys on Fridays").
- preference: likes, dislikes, standing instructions ("User prefers pytest over unittest").
- decision: choices made, WITH the reason when one was given ("Chose Postgres over MySQL because ...").
- lesson: what was tried and whether it worked, root causes, fixes, pitfalls ("X failed because Y; fixed by Z").
- event: notable outcomes or happenings with lasting relevance ("Released v2.1 on 3 May").
Rules: write each memory in the third person ("User ..."), self-contained (no "this"/"it" without a referent),
one idea per memory, under 40 words; keep exact identifiers (file names, commands, versions, error messages).
Never store greetings, thanks, the system prompt, the assistant restating the request, tool output dumps, raw
JSON, logs or secrets ([REDACTED:...] placeholders stay as they are). Skip anything only relevant to this
moment. Importance 1-10: 8-10 identity, strong preferences, hard-won lessons; 5-7 useful facts and decisions;
1-4 minor details. Return an empty list when nothing is worth keeping.
Also write `summary`: 2-5 sentences on what this session was about: the request, what was done and the
outcome, with the files/commands that matter. If a previous summary is given, return an updated summary that
covers both the earlier part and the new messages."""

_RECONCILE_SYSTEM = """You keep an assistant's long-term memory consistent. For each NEW candidate memory you see \
the EXISTING memories that look similar. Decide one action per candidate:
- add: it is new information (the similar memories are about something else).
- merge: it adds detail to an existing memory that is still true; give `target` (the existing id) and `text`
  (one combined memory, under 50 words).
- supersede: it contradicts or updates an existing memory (a preference or fact changed, a decision was
  reversed); give `target`. The old memory is kept as history.
- drop: the existing memory already says the same thing, or the candidate is not worth keeping.
Use `target` "" and `text` "" when they do not apply. Return one decision per candidate."""

EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["memories", "summary"],
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["text", "kind", "tags", "importance"],
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": list(MEMORY_KINDS)},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "importance": {"type": "integer"},
                },
            },
        },
        "summary": {"type": "string"},
    },
}

RECONCILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["decisions"],
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["candidate", "action", "target", "text", "reason"],
                "properties": {
                    "candidate": {"type": "integer"},
                    "action": {"type": "string", "enum": ["add", "merge", "supersede", "drop"]},
                    "target": {"type": "string"},
                    "text": {"type": "string"},
                    "reason": {"type": "string"},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Decision:
    """Reconciliation verdict for candidate ``index``: ``target`` is a real memory id (merge/supersede)."""

    index: int
    action: str
    target: str | None = None
    text: str | None = None
    reason: str = ""


def render_transcript(turns: Sequence[Turn], max_tokens: int = 6000, *, user_tokens: int = 1200,
                      assistant_tokens: int = 800, tool_call_tokens: int = 150, tool_result_tokens: int = 300) -> str:
    """The conversation as compact text for an LLM, within ``max_tokens``: long turns keep their head and
    tail, tool outputs are cut hardest, and when the whole is still too long the middle turns go first."""
    lines: list[str] = []
    for t in turns:
        if t.role == "system":
            continue
        if t.role == "tool_call":
            body = truncate_to_tokens(t.text, tool_call_tokens, keep="head")
            lines.append(f"assistant -> tool {t.name or ''}: {body}")
        elif t.role == "tool_result":
            body = truncate_to_tokens(t.text.strip(), tool_result_tokens, keep="both")
            lines.append(f"tool {t.name or ''} {'error' if t.is_error else 'result'}: {body}")
        else:
            budget = user_tokens if t.role == "user" else assistant_tokens
            lines.append(f"{t.role}: {truncate_to_tokens(t.text.strip(), budget, keep='both')}")
    costs = [count_tokens(ln) + 1 for ln in lines]
    if sum(costs) <= max_tokens:
        return "\n".join(lines)
    head_budget = max_tokens * 3 // 10
    head: list[str] = []
    used = 0
    i = 0
    while i < len(lines) and used + costs[i] <= head_budget:
        head.append(lines[i])
        used += costs[i]
        i += 1
    tail: list[str] = []
    j = len(lines) - 1
    while j >= i and used + costs[j] + 12 <= max_tokens:
        tail.append(lines[j])
        used += costs[j]
        j -= 1
    omitted = j - i + 1
    middle = [f"[... {omitted} turns omitted ...]"] if omitted > 0 else []
    return "\n".join([*head, *middle, *reversed(tail)])


class LLMDistiller:
    """Distillation with an LLM on any OpenAI-compatible endpoint: one extraction call per capture, plus one
    batched reconciliation call when candidates resemble existing memories."""

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2, temperature: float | None = 0.0,
                 max_input_tokens: int = 6000, max_memories: int = 20, neighbours: int = 3,
                 llm: ChatLLM | None = None) -> None:
        self.llm = llm or ChatLLM(model or DEFAULT_LLM_MODEL, base_url=base_url, api_key=api_key, timeout=timeout,
                                  max_retries=max_retries, temperature=temperature)
        self.model = self.llm.model
        self.name = f"llm:{self.model}"
        self.max_input_tokens = max_input_tokens
        self.max_memories = max_memories
        self.neighbours = neighbours

    @classmethod
    def from_env(cls, **kwargs: Any) -> "LLMDistiller | None":
        settings = llm_settings_from_env()
        return cls(**settings, **kwargs) if settings else None

    # ------------------------------------------------------------------ call 1: extraction
    def extract_messages(self, turns: Sequence[Turn], previous_summary: str | None) -> list[dict[str, str]]:
        transcript = render_transcript(turns, self.max_input_tokens)
        user = []
        if previous_summary:
            user.append("Previous summary of this session (the messages below continue it):\n"
                        + truncate_to_tokens(previous_summary, 400, keep="head"))
        user.append("Conversation:\n" + transcript)
        return [{"role": "system", "content": _EXTRACT_SYSTEM}, {"role": "user", "content": "\n\n".join(user)}]

    def parse_extraction(self, data: Mapping[str, Any], usage: Usage) -> Distillation:
        cands: list[Candidate] = []
        for item in data.get("memories") or []:
            if not isinstance(item, Mapping) or not isinstance(item.get("text"), str) or not item["text"].strip():
                continue
            kind = str(item.get("kind") or "fact").lower()
            kind = kind if kind in MEMORY_KINDS else "fact"
            try:
                importance = int(item.get("importance") or DEFAULT_IMPORTANCE[kind])
            except (TypeError, ValueError):
                importance = DEFAULT_IMPORTANCE[kind]
            tags = tuple(dict.fromkeys(str(t).strip().lower()[:60] for t in (item.get("tags") or [])
                                       if isinstance(t, (str, int)) and str(t).strip()))[:6]
            cands.append(Candidate(text=item["text"].strip(), kind=kind, tags=tags,
                                   importance=min(10, max(1, importance))))
        summary = data.get("summary")
        summary = summary.strip() if isinstance(summary, str) and summary.strip() else None
        return Distillation(candidates=cands[: self.max_memories], summary=summary, usage=usage)

    def extract(self, turns: Sequence[Turn], previous_summary: str | None = None) -> Distillation:
        data, usage = self.llm.complete_json(self.extract_messages(turns, previous_summary), EXTRACT_SCHEMA,
                                             "memories")
        return self.parse_extraction(data, usage)

    async def aextract(self, turns: Sequence[Turn], previous_summary: str | None = None) -> Distillation:
        data, usage = await self.llm.acomplete_json(self.extract_messages(turns, previous_summary), EXTRACT_SCHEMA,
                                                    "memories")
        return self.parse_extraction(data, usage)

    # ------------------------------------------------------------------ call 2: reconciliation
    @staticmethod
    def reconcile_messages(cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]
                           ) -> tuple[list[dict[str, str]], dict[str, str]]:
        """The prompt, and the short-id -> memory-id map (short ids save tokens and stop invented UUIDs)."""
        short: dict[str, str] = {}
        back: dict[str, str] = {}
        existing_lines: list[str] = []
        cand_lines: list[str] = []
        for i, cand in enumerate(cands):
            if not neighbours.get(i):
                continue  # nothing similar stored: it is simply added, no need to ask
            refs = []
            for rec in neighbours.get(i, ()):
                if rec.id not in back:
                    sid = f"m{len(short) + 1}"
                    short[sid] = rec.id
                    back[rec.id] = sid
                    when = (rec.valid_from or rec.created_at).date().isoformat()
                    existing_lines.append(f"{sid} [{rec.kind}, {when}] {truncate_to_tokens(rec.text, 120)}")
                refs.append(back[rec.id])
            cand_lines.append(f"{i} [{cand.kind}] {cand.text}  (similar: {', '.join(refs)})")
        user = "EXISTING memories:\n" + "\n".join(existing_lines) + "\n\nNEW candidates:\n" + "\n".join(cand_lines)
        return [{"role": "system", "content": _RECONCILE_SYSTEM}, {"role": "user", "content": user}], short

    @staticmethod
    def parse_decisions(data: Mapping[str, Any], short: Mapping[str, str], n: int,
                        asked: Iterable[int] | None = None) -> list[Decision]:
        """One decision per candidate (``add`` for any the model skipped, mislabeled or was not asked about)."""
        allowed = set(range(n)) if asked is None else set(asked)
        out: dict[int, Decision] = {}
        for item in data.get("decisions") or []:
            if not isinstance(item, Mapping):
                continue
            try:
                idx = int(item.get("candidate"))
            except (TypeError, ValueError):
                continue
            action = str(item.get("action") or "add").lower()
            if idx not in allowed or idx in out or action not in ("add", "merge", "supersede", "drop"):
                continue
            raw_target = str(item.get("target") or "").strip()
            target = short.get(raw_target) or (raw_target if raw_target in short.values() else None)
            if action in ("merge", "supersede") and target is None:
                action = "add"  # an unknown target: keeping the candidate is the safe choice
            text = item.get("text") if isinstance(item.get("text"), str) and item.get("text").strip() else None
            out[idx] = Decision(idx, action, target, text.strip() if text else None, str(item.get("reason") or ""))
        return [out.get(i, Decision(i, "add")) for i in range(n)]

    def reconcile(self, cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]
                  ) -> tuple[list[Decision], Usage]:
        messages, short = self.reconcile_messages(cands, neighbours)
        data, usage = self.llm.complete_json(messages, RECONCILE_SCHEMA, "reconcile")
        return self.parse_decisions(data, short, len(cands), [i for i in neighbours if neighbours[i]]), usage

    async def areconcile(self, cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]
                         ) -> tuple[list[Decision], Usage]:
        messages, short = self.reconcile_messages(cands, neighbours)
        data, usage = await self.llm.acomplete_json(messages, RECONCILE_SCHEMA, "reconcile")
        return self.parse_decisions(data, short, len(cands), [i for i in neighbours if neighbours[i]]), usage

    def __repr__(self) -> str:
        return f"LLMDistiller(model={self.model!r}, base_url={self.llm.base_url!r})"


def resolve_distiller(distiller: Any = None) -> KeylessDistiller | LLMDistiller:
    """An explicit distiller, ``"keyless"``, ``"llm"`` / a model name, or None: the environment decides
    (``REMEM_LLM_MODEL`` / ``REMEM_LLM_API_KEY``), keyless when nothing is configured."""
    if isinstance(distiller, (KeylessDistiller, LLMDistiller)):
        return distiller
    if distiller is None or distiller == "auto":
        return LLMDistiller.from_env() or KeylessDistiller()
    if isinstance(distiller, str):
        if distiller.lower() in ("keyless", "none", "off"):
            return KeylessDistiller()
        settings = llm_settings_from_env() or {}
        if distiller.lower() != "llm":
            settings["model"] = distiller
        return LLMDistiller(**settings)
    if hasattr(distiller, "extract") and hasattr(distiller, "reconcile"):
        return distiller  # duck-typed custom distiller
    raise TypeError("distiller must be a KeylessDistiller, an LLMDistiller, 'keyless', 'llm' or a model name")


# ====================================================================== the pipeline


_REDACTORS: dict[bool, Any] = {}
_SUMMARY_LOCK = threading.RLock()
_REDACTOR_LOCK = threading.Lock()


def _redactor(pii: bool | None) -> Any:
    from .redact import Redactor

    key = bool(pii)
    with _REDACTOR_LOCK:
        if key not in _REDACTORS:
            _REDACTORS[key] = Redactor(pii=key)
        return _REDACTORS[key]


def _count_into(total: dict[str, int], counts: Mapping[str, int]) -> None:
    for k, n in counts.items():
        total[k] = total.get(k, 0) + int(n)


def _turn_hash(turns: Sequence[Turn]) -> str:
    h = hashlib.sha256()
    for t in turns:
        h.update(f"{t.role}\x1f{t.name or ''}\x1f{t.text}\x1e".encode("utf-8", "replace"))
    return h.hexdigest()[:24]


def derive_session_id(turns: Sequence[Turn]) -> str:
    """A stable id for a conversation without one: the hash of its first user message (a growing
    conversation keeps its id, so its summary is updated rather than duplicated)."""
    first = next((t for t in turns if t.role == "user"), turns[0] if turns else Turn("user", ""))
    return "auto-" + hashlib.sha256(first.text.strip().encode("utf-8", "replace")).hexdigest()[:16]


@dataclass
class _Prep:
    """Everything decided before the distiller runs (redaction, session, what is new)."""

    scope: Scope
    session: str
    messages: list[dict[str, Any]]
    turns: list[Turn]
    new_turns: list[Turn]
    continuation: bool
    previous: MemoryRecord | None
    result: RememberResult
    metadata: dict[str, Any]
    source: str
    tags: tuple[str, ...]
    redactor: Any


def _find_summary(engine: Any, scope: Scope, session: str) -> MemoryRecord | None:
    try:
        found = engine.list(scope=scope, kind="summary", where={"meta.session": session}, limit=5,
                            include_superseded=False)
    except TypeError:  # engines without include_superseded
        found = engine.list(scope=scope, kind="summary", where={"meta.session": session}, limit=5)
    found = [r for r in found if r.scope == scope and r.superseded_by is None]
    return found[0] if found else None


def _prepare(engine: Any, messages: Any, scope: Any, session: str | None, pii: bool | None,
             metadata: Mapping[str, Any] | None, source: str | None, tags: Iterable[str] | None) -> _Prep:
    scope = Scope.coerce(scope)
    redactor = _redactor(pii)
    plain = to_plain_messages(messages)
    redacted, counts = redactor.redact_messages(plain)
    result = RememberResult(redactions=dict(counts))
    turns = conversation_turns(redacted)
    sid = session or scope.session or derive_session_id(turns)
    result.session = sid
    previous = _find_summary(engine, scope, sid) if turns else None
    new_turns, continuation = list(turns), False
    if previous is not None:
        meta = previous.metadata
        covered = int(meta.get("covered") or 0)
        if 0 < covered <= len(turns) and meta.get("prefix") == _turn_hash(turns[:covered]):
            new_turns, continuation = list(turns[covered:]), True
        elif covered > len(turns) and meta.get("head") == _turn_hash(turns[:1]):
            new_turns, continuation = [], True  # an older snapshot of a session already distilled further
    return _Prep(scope=scope, session=sid, messages=redacted, turns=turns, new_turns=new_turns,
                 continuation=continuation, previous=previous, result=result, metadata=dict(metadata or {}),
                 source=source or "remember", tags=tuple(tags or ()), redactor=redactor)


def _neighbours(engine: Any, prep: _Prep, cands: Sequence[Candidate], k: int) -> dict[int, list[MemoryRecord]]:
    """Existing memories (not summaries) in the capture's scope that resemble each candidate."""
    out: dict[int, list[MemoryRecord]] = {}
    for i, cand in enumerate(cands):
        try:
            try:
                hits = engine.search(cand.text, scope=prep.scope, limit=k + 2, reinforce=False)
            except TypeError:  # a client without the reinforce switch
                hits = engine.search(cand.text, scope=prep.scope, limit=k + 2)
        except RememError as exc:
            log.debug("neighbour search failed: %s", exc)
            continue
        words = _content_words(cand.text)
        recs = [h.record for h in hits if h.record.kind != "summary" and h.record.scope == prep.scope
                and (engine.dense or words & _content_words(h.record.text))][:k]
        if recs:
            out[i] = recs
    return out


_STOPWORDS = frozenset("""a an the and or but if then of to in on at by for with from as is are was were be been being
this that these those it its it's i me my we our you your he she they them their his her user user's users s has have
had do does did not no so very just also now still about into over under than too can will would should could
""".split())


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9'._-]*", text.lower()) if w not in _STOPWORDS and len(w) > 1}


def _gate(prep: _Prep, dist: Distillation) -> list[Candidate]:
    """Redact (again: LLM output is text like any other) and admit; refused ones count as dropped."""
    kept: list[Candidate] = []
    seen: set[str] = set()
    for cand in dist.candidates:
        red = prep.redactor.redact(cand.text)
        _count_into(prep.result.redactions, red.counts)
        text = red.text.strip()
        key = normalize_text(text)
        if not admit(text) or key in seen:
            prep.result.dropped += 1
            continue
        seen.add(key)
        cand.text = text
        kept.append(cand)
    return kept


def _memory_meta(prep: _Prep, cand: Candidate, distiller_name: str) -> dict[str, Any]:
    return {**cand.metadata, **prep.metadata, "session": prep.session, "distiller": distiller_name}


def _add_candidates(engine: Any, prep: _Prep, cands: Sequence[Candidate], name: str) -> None:
    """Add in one batch (one embedding call for all); the engine's de-duplication turns repeats into merges."""
    if not cands:
        return
    items = [{"text": c.text, "kind": c.kind, "tags": [*c.tags, *prep.tags], "importance": c.importance,
              "metadata": _memory_meta(prep, c, name), "source": prep.source} for c in cands]
    add_many = getattr(engine, "add_many", None)
    if callable(add_many):
        recs = add_many(items, scope=prep.scope)
    else:
        recs = [engine.add(it.pop("text"), scope=prep.scope, **it) for it in items]
    for rec in recs:
        (prep.result.merged if rec.merged_count > 0 else prep.result.added).append(rec)


def _apply(engine: Any, prep: _Prep, cands: Sequence[Candidate], decisions: Sequence[Decision] | None,
           name: str) -> None:
    by_index = {d.index: d for d in decisions or ()}
    to_add: list[Candidate] = []
    for i, cand in enumerate(cands):
        d = by_index.get(i, Decision(i, "add"))
        try:
            if d.action == "drop":
                prep.result.dropped += 1
            elif d.action == "merge" and d.target:
                old = engine.get(d.target, scope=prep.scope)
                text = cand.text
                if d.text:
                    red = prep.redactor.redact(d.text)
                    _count_into(prep.result.redactions, red.counts)
                    text = red.text if admit(red.text) else cand.text
                rec = engine.update(d.target, text=text, tags=list(dict.fromkeys([*old.tags, *cand.tags])),
                                    importance=max(old.importance, cand.importance),
                                    metadata={"merged_from_session": prep.session}, scope=prep.scope)
                prep.result.merged.append(rec)
            elif d.action == "supersede" and d.target:
                new = engine.supersede(d.target, {"text": cand.text, "kind": cand.kind, "tags": list(cand.tags),
                                                  "importance": cand.importance, "source": prep.source,
                                                  "metadata": _memory_meta(prep, cand, name)}, scope=prep.scope)
                prep.result.superseded.append((d.target, new.id))
                prep.result.added.append(new)
            else:
                to_add.append(cand)
        except (NotFoundError, RememError) as exc:  # target vanished or already superseded: keep the candidate
            log.info("reconcile %s on %s failed (%s); adding instead", d.action, d.target, exc)
            to_add.append(cand)
    _add_candidates(engine, prep, to_add, name)


def _store_summary(engine: Any, prep: _Prep, text: str | None, meta: Mapping[str, Any], name: str,
                   advance: bool) -> None:
    """Create the session's single summary or update it in place."""
    if not text:
        if prep.previous is not None:
            prep.result.summary = prep.previous
        return
    red = prep.redactor.redact(text)
    _count_into(prep.result.redactions, red.counts)
    text = truncate_to_tokens(red.text.strip(), 400, keep="head")
    ids = extract_identifiers(prep.turns)
    md: dict[str, Any] = {**prep.metadata, "session": prep.session, "distiller": name,
                          "turns": len(prep.turns), **{k: v for k, v in ids.items() if v}, "provisional": False,
                          **meta}
    if advance:
        md.update(covered=len(prep.turns), prefix=_turn_hash(prep.turns), head=_turn_hash(prep.turns[:1]))
    elif prep.previous is not None:
        for key in ("covered", "prefix", "head"):
            if key in prep.previous.metadata:
                md[key] = prep.previous.metadata[key]
    else:
        md.update(covered=0)
    with _SUMMARY_LOCK:  # two captures of one session at once must not create two summaries
        current = prep.previous or _find_summary(engine, prep.scope, prep.session)
        if current is not None:
            try:
                prep.result.summary = engine.update(current.id, text=text, metadata=md, scope=prep.scope)
                return
            except NotFoundError:
                pass
        prep.result.summary = engine.add(text, scope=prep.scope, kind="summary", tags=[SUMMARY_TAG, *prep.tags],
                                         importance=DEFAULT_IMPORTANCE["summary"], metadata=md,
                                         source=prep.source, dedupe=False)


def _keyless_summary(prep: _Prep) -> Distillation:
    """The keyless summary of the whole session (merged with the previous one when this capture is not a
    continuation of what it covered)."""
    kd = KeylessDistiller()
    parts = kd.summary_parts(prep.turns)
    if prep.previous is not None and not prep.continuation:
        parts = kd.merge_parts(prep.previous.metadata.get("parts"), parts)
    return Distillation([], kd.render_summary(parts), {"parts": parts})


def _run_keyless(engine: Any, prep: _Prep, kd: KeylessDistiller) -> None:
    if prep.continuation or prep.previous is None:
        dist = kd.distill(prep.new_turns, context_turns=prep.turns)
    else:
        dist = kd.distill(prep.new_turns, previous=prep.previous.metadata.get("parts"))
    _apply(engine, prep, _gate(prep, dist), None, kd.name)
    _store_summary(engine, prep, dist.summary, dist.summary_metadata, kd.name, advance=True)


def _queue_failure(engine: Any, prep: _Prep, exc: ProviderError, name: str) -> None:
    """LLM failed: keep the redacted capture for later and store the keyless summary right away."""
    prep.result.queued = True
    prep.result.error = str(exc)
    try:
        queue_for(engine).put({"messages": prep.messages, "scope": prep.scope.as_dict(), "session": prep.session,
                               "metadata": prep.metadata, "source": prep.source, "tags": list(prep.tags),
                               "location": getattr(engine.backend, "location", None), "error": str(exc),
                               "error_kind": exc.kind, "distiller": name})
    except OSError as qexc:  # the queue itself failed: the keyless memories are better than nothing
        log.warning("could not queue the capture (%s); distilling it keyless instead", qexc)
        prep.result.queued = False
        _run_keyless(engine, prep, KeylessDistiller())
        return
    dist = _keyless_summary(prep)
    _store_summary(engine, prep, dist.summary, {**dist.summary_metadata, "provisional": True}, "keyless",
                   advance=False)
    log.warning("LLM distillation failed (%s); capture queued for `remem distill --pending`", exc)


def _finish(engine: Any, prep: _Prep, usage: Usage, name: str) -> RememberResult:
    prep.result.usage = usage.as_dict()
    prep.result.distiller = name
    if usage.calls:
        record_usage(engine, usage, model=name.removeprefix("llm:"), session=prep.session)
    return prep.result


def remember(engine: Any, messages: Any, *, scope: Any = None, session: str | None = None,
             distiller: Any = None, pii: bool | None = None, metadata: Mapping[str, Any] | None = None,
             source: str | None = None, tags: Iterable[str] | None = None, queue: bool = True) -> RememberResult:
    """Distil ``messages`` into memories in ``scope`` and update the session's summary.

    ``messages``: OpenAI or Anthropic message dicts (tool calls included), message objects, or a string.
    ``session``: the conversation id (default ``scope.session``, else derived from the first user message);
    re-capturing a session only distils what is new and updates its one summary. Memories are stored in
    ``scope`` itself (tag/metadata ``session`` says where they came from), so they are recalled across sessions.
    ``distiller``: None = environment (keyless unless an LLM is configured), ``"keyless"``, or an
    :class:`LLMDistiller`. ``pii=True`` also redacts emails, phone numbers and similar. ``queue=False`` raises
    :class:`ProviderError` on LLM failure instead of queueing (used when draining the queue).
    """
    prep = _prepare(engine, messages, scope, session, pii, metadata, source, tags)
    dist_obj = resolve_distiller(distiller)
    name = getattr(dist_obj, "name", type(dist_obj).__name__)
    usage = Usage()
    if not prep.new_turns:
        prep.result.summary = prep.previous
        return _finish(engine, prep, usage, name)
    if isinstance(dist_obj, KeylessDistiller):
        _run_keyless(engine, prep, dist_obj)
        return _finish(engine, prep, usage, name)
    previous_text = prep.previous.text if prep.previous is not None else None
    try:
        dist = dist_obj.extract(prep.new_turns, previous_text)
    except ProviderError as exc:
        if not queue:
            raise
        _queue_failure(engine, prep, exc, name)
        return _finish(engine, prep, usage, name)
    usage.add(dist.usage)
    cands = _gate(prep, dist)
    decisions = None
    neighbours = _neighbours(engine, prep, cands, getattr(dist_obj, "neighbours", 3)) if cands else {}
    if neighbours:
        try:
            decisions, rusage = dist_obj.reconcile(cands, neighbours)
            usage.add(rusage)
        except ProviderError as exc:  # candidates are in hand: add them (exact duplicates still merge)
            log.warning("reconciliation failed (%s); adding candidates with de-duplication only", exc)
            prep.result.error = str(exc)
    _apply(engine, prep, cands, decisions, name)
    summary = dist.summary or _keyless_summary(prep).summary
    _store_summary(engine, prep, summary, {}, name, advance=True)
    return _finish(engine, prep, usage, name)


async def aremember(memory: Any, messages: Any, *, scope: Any = None, session: str | None = None,
                    distiller: Any = None, pii: bool | None = None, metadata: Mapping[str, Any] | None = None,
                    source: str | None = None, tags: Iterable[str] | None = None,
                    queue: bool = True) -> RememberResult:
    """Async :func:`remember`: LLM calls use ``AsyncOpenAI``; store work runs in worker threads.
    ``memory`` is an :class:`~remem.AsyncMemory` or a sync engine."""
    engine = getattr(memory, "sync", memory)
    dist_obj = resolve_distiller(distiller)
    if not isinstance(dist_obj, LLMDistiller) or not hasattr(dist_obj, "aextract"):
        return await asyncio.to_thread(remember, engine, messages, scope=scope, session=session,
                                       distiller=dist_obj, pii=pii, metadata=metadata, source=source, tags=tags,
                                       queue=queue)
    prep = await asyncio.to_thread(_prepare, engine, messages, scope, session, pii, metadata, source, tags)
    name = dist_obj.name
    usage = Usage()
    if not prep.new_turns:
        prep.result.summary = prep.previous
        return _finish(engine, prep, usage, name)
    try:
        dist = await dist_obj.aextract(prep.new_turns, prep.previous.text if prep.previous else None)
    except ProviderError as exc:
        if not queue:
            raise
        await asyncio.to_thread(_queue_failure, engine, prep, exc, name)
        return _finish(engine, prep, usage, name)
    usage.add(dist.usage)
    cands = _gate(prep, dist)
    neighbours = await asyncio.to_thread(_neighbours, engine, prep, cands, dist_obj.neighbours) if cands else {}
    decisions = None
    if neighbours:
        try:
            decisions, rusage = await dist_obj.areconcile(cands, neighbours)
            usage.add(rusage)
        except ProviderError as exc:
            log.warning("reconciliation failed (%s); adding candidates with de-duplication only", exc)
            prep.result.error = str(exc)
    summary = dist.summary or _keyless_summary(prep).summary

    def store() -> None:
        _apply(engine, prep, cands, decisions, name)
        _store_summary(engine, prep, summary, {}, name, advance=True)

    await asyncio.to_thread(store)
    return await asyncio.to_thread(_finish, engine, prep, usage, name)


# ====================================================================== the pending queue


def pending_count(engine: Any) -> int:
    """Captures waiting for the LLM (for stats and ``remem doctor``)."""
    loc = getattr(engine.backend, "location", None)
    return sum(1 for e in queue_for(engine).peek() if e.data.get("location") in (None, loc))


def drain_pending(engine: Any, distiller: Any = None, *, limit: int | None = None,
                  queue: PendingQueue | None = None, max_attempts: int = 5) -> int:
    """Distil queued captures (oldest first); returns how many were stored.

    A provider-wide failure (quota, credentials, rate limit, connection) stops the drain: the entry stays queued
    with its attempt counted. An entry the LLM keeps failing on by itself (bad responses) is retried up to
    ``max_attempts`` times, then distilled keyless so the queue never clogs. With no LLM configured the keyless
    distiller does the work, so draining always makes progress."""
    q = queue or queue_for(engine)
    dist_obj = resolve_distiller(distiller)
    loc = getattr(engine.backend, "location", None)
    done = 0
    for peeked in q.peek():
        if limit is not None and done >= limit:
            break
        if peeked.data.get("location") not in (None, loc):  # another store's capture (shared $REMEM_HOME/pending)
            continue
        entry = q.claim(peeked.id)
        if entry is None:  # another worker took it
            continue
        data = entry.data
        use = dist_obj if entry.attempts < max_attempts else KeylessDistiller()
        try:
            remember(engine, data.get("messages") or [], scope=data.get("scope"), session=data.get("session"),
                     distiller=use, metadata=data.get("metadata"), source=data.get("source"),
                     tags=data.get("tags"), queue=False)
        except ProviderError as exc:
            q.release(entry, str(exc))
            log.warning("pending capture %s still failing: %s", entry.id, exc)
            if exc.kind != "bad_response":
                break
            continue
        except Exception as exc:  # noqa: BLE001 - keep the capture, report, go on
            q.release(entry, f"{type(exc).__name__}: {exc}")
            log.exception("pending capture %s failed", entry.id)
            continue
        q.done(entry)
        done += 1
    return done


# ====================================================================== usage ledger

_LEDGER_LOCK = threading.Lock()


def _ledger_path(engine: Any) -> Path | None:
    folder = getattr(getattr(engine, "backend", None), "folder", None)
    return Path(folder) / USAGE_FILE if folder is not None else None


def record_usage(engine: Any, usage: Usage, *, model: str, session: str | None = None) -> None:
    """Append one capture's LLM token usage to ``<store>/usage.jsonl`` (no ledger for server backends)."""
    path = _ledger_path(engine)
    if path is None:
        return
    line = json.dumps({"ts": time.time(), "model": model, "session": session, **usage.as_dict()})
    try:
        with _LEDGER_LOCK, open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError as exc:
        log.debug("usage ledger not written: %s", exc)


def usage_totals(engine: Any) -> dict[str, Any]:
    """What distillation has cost in this store: captures, LLM calls and tokens, in total and per model."""
    totals: dict[str, Any] = {"captures": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                              "total_tokens": 0, "by_model": {}}
    path = _ledger_path(engine)
    if path is None or not path.exists():
        return totals
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            model = totals["by_model"].setdefault(str(row.get("model")), {"captures": 0, "calls": 0,
                                                                           "prompt_tokens": 0,
                                                                           "completion_tokens": 0})
            totals["captures"] += 1
            model["captures"] += 1
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                n = int(row.get(key) or 0)
                totals[key] += n
                model[key] += n
    totals["total_tokens"] = totals["prompt_tokens"] + totals["completion_tokens"]
    return totals


# ====================================================================== audit


@dataclass
class AuditReport:
    """``remem audit``: duplicate groups (exact or near-identical), junk (fails the gate, with the reason) and
    stale memories (old, never recalled, faded importance). Superseded history is not audited."""

    total: int = 0
    duplicates: list[list[str]] = field(default_factory=list)
    junk: list[tuple[str, str]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def duplicate_count(self) -> int:
        """Memories that could go (each group keeps one)."""
        return sum(len(g) - 1 for g in self.duplicates)

    @property
    def counts(self) -> dict[str, int]:
        return {"total": self.total, "duplicates": self.duplicate_count, "duplicate_groups": len(self.duplicates),
                "junk": len(self.junk), "stale": len(self.stale)}

    def as_dict(self, examples: int = 5) -> dict[str, Any]:
        reasons = Counter(r for _, r in self.junk)
        return {**self.counts, "junk_reasons": dict(reasons),
                "examples": {"duplicates": self.duplicates[:examples],
                             "junk": [list(j) for j in self.junk[:examples]], "stale": self.stale[:examples]}}


def audit(engine: Any, scope: Any = None, *, stale_days: float = 90.0, stale_importance: float = 3.0,
          now: float | None = None) -> AuditReport:
    """Scan the memories of ``scope`` (None: the whole store) and report what a cleanup could remove."""
    from .engine import same_meaning

    now = time.time() if now is None else now
    report = AuditReport()
    recs = [r for r in engine.iter_records(scope) if r.superseded_by is None
            and (r.valid_until is None or r.valid_until.timestamp() > now)]
    report.total = len(recs)
    decay = getattr(engine, "decay", None)
    for r in recs:
        verdict = check_admission(r.text)
        if not verdict.ok:
            report.junk.append((r.id, verdict.reason))
        if (r.access_count == 0 and now - r.created_at.timestamp() > stale_days * 86400
                and "pinned" not in r.tags and decay is not None
                and decay.effective_importance(r, now) < stale_importance):
            report.stale.append(r.id)
    # duplicates: exact normalised text per (scope, kind), then near-identical via prefix-filtered Jaccard
    groups: dict[tuple[Any, ...], list[MemoryRecord]] = {}
    for r in recs:
        groups.setdefault((r.scope, r.kind), []).append(r)
    for members in groups.values():
        report.duplicates.extend(_duplicate_groups(members, same_meaning))
    return report


def _duplicate_groups(recs: Sequence[MemoryRecord], same_meaning: Any, threshold: float = 0.8) -> list[list[str]]:
    parent = list(range(len(recs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    exact: dict[str, int] = {}
    tokens: list[list[str]] = []
    for i, r in enumerate(recs):
        key = normalize_text(r.text)
        if key in exact:
            union(exact[key], i)
        else:
            exact[key] = i
        tokens.append(sorted(set(re.findall(r"[a-z0-9]+", key))))
    # prefix filtering: sets with Jaccard >= t share a token among their rarest |x| - ceil(t|x|) + 1
    df = Counter(tok for toks in tokens for tok in toks)
    index: dict[str, list[int]] = {}
    for i, toks in enumerate(tokens):
        if not toks:
            continue
        ordered = sorted(toks, key=lambda tok: (df[tok], tok))
        prefix = len(ordered) - math.ceil(threshold * len(ordered)) + 1
        partners: set[int] = set()
        for tok in ordered[:prefix]:
            partners.update(index.get(tok, ()))
            index.setdefault(tok, []).append(i)
        for j in partners:
            if find(i) != find(j) and same_meaning(recs[i].text, recs[j].text, None, None):
                union(i, j)
    clusters: dict[int, list[str]] = {}
    for i, r in enumerate(recs):
        clusters.setdefault(find(i), []).append(r.id)
    return [ids for ids in clusters.values() if len(ids) > 1]


__all__ = [
    "Admission", "AuditReport", "Candidate", "Decision", "Distillation", "KeylessDistiller", "LLMDistiller",
    "RememberResult", "Turn", "admit", "aremember", "audit", "check_admission", "derive_session_id",
    "conversation_turns", "drain_pending", "extract_identifiers", "normalize_messages", "strip_recalled", "pending_count", "record_usage", "remember",
    "render_transcript", "resolve_distiller", "split_sentences", "to_plain_messages", "usage_totals",
]
