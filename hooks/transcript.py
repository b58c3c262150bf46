"""Read what happened in a Claude Code session from its transcript JSONL, defensively and incrementally.

The format is internal to Claude Code and "changes between versions", so this module only relies on the
stable core (``type`` user/assistant, ``message.role``/``message.content`` as a string or Anthropic content
blocks, ``uuid``) and skips everything it does not recognise: unknown entry types, metadata lines
(``summary``, ``tag``, titles), meta/sidechain/compact-summary entries, thinking blocks, tool results, and lines
that are not JSON. Reading resumes from a byte offset, and a trailing line that is still being written is
left for the next read.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

MAX_READ_BYTES = 8_000_000          # never read more than this per capture (huge sessions: keep the tail)
MAX_TEXT_CHARS = 6_000              # one prompt or answer, kept head + tail
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_COMMAND_MARKERS = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>",
                    "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-prompt-submit-hook>")
_INTERRUPTED = re.compile(r"^\[Request interrupted by user.*\]$")
FILE_KEYS = ("file_path", "notebook_path", "path")
WRITE_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


@dataclass
class ReadResult:
    entries: list[dict[str, Any]]
    offset: int                      # where the next read starts (end of the last complete line)
    last_uuid: str | None
    reset: bool = False              # the file shrank or was replaced: read from the start


def read_new(path: str | os.PathLike[str], offset: int = 0, last_uuid: str | None = None,
             max_bytes: int = MAX_READ_BYTES) -> ReadResult:
    """Entries appended after ``offset`` (at most the last ``max_bytes`` of them). Raises OSError when the file
    cannot be read (the caller decides)."""
    size = os.path.getsize(path)
    reset = offset > size or offset < 0
    start = 0 if reset else offset
    if size - start > max_bytes:
        start = size - max_bytes
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(size - start)
    end = data.rfind(b"\n")
    complete = data[: end + 1] if end >= 0 else b""
    entries: list[dict[str, Any]] = []
    for raw in complete.split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    if start != offset and last_uuid:  # re-read from elsewhere: drop what was captured already
        for i, entry in enumerate(entries):
            if entry.get("uuid") == last_uuid:
                entries = entries[i + 1:]
                break
    new_uuid = last_uuid
    for entry in entries:
        if isinstance(entry.get("uuid"), str):
            new_uuid = entry["uuid"]
    return ReadResult(entries=entries, offset=start + len(complete), last_uuid=new_uuid, reset=reset)


# ---------------------------------------------------------------------------------------------- turns
@dataclass
class ToolCall:
    name: str
    detail: str = ""
    file: str | None = None


@dataclass
class Turn:
    """One user prompt and what the assistant did about it (``prompt`` is empty for a continuation)."""

    prompt: str = ""
    texts: list[str] = field(default_factory=list)
    tools: list[ToolCall] = field(default_factory=list)
    at: str | None = None            # the transcript's timestamp of the turn's first entry (ISO 8601)

    @property
    def final(self) -> str:
        return self.texts[-1] if self.texts else ""

    @property
    def empty(self) -> bool:
        return not (self.prompt or self.texts or self.tools)


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half].rstrip() + "\n[…]\n" + text[-(limit - half):].lstrip()


def clean_user_text(text: str) -> str:
    """The human part of a user entry: no system reminders, no slash-command plumbing, no hook echoes."""
    if not isinstance(text, str):
        return ""
    stripped = text.strip()
    if any(stripped.startswith(m) for m in _COMMAND_MARKERS):
        return ""
    stripped = _REMINDER.sub("", stripped).strip()
    if _INTERRUPTED.match(stripped):
        return ""
    return stripped


def _tool_call(block: dict[str, Any], root: Path | None) -> ToolCall:
    name = block.get("name") if isinstance(block.get("name"), str) else "tool"
    args = block.get("input") if isinstance(block.get("input"), dict) else {}
    file = None
    for key in FILE_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            file = relative(value.strip(), root)
            break
    detail = ""
    for key in ("command", "pattern", "query", "url", "description", "prompt", "skill"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            detail = " ".join(value.split())[:160]
            break
    return ToolCall(name=name, detail=detail, file=file)


def relative(path: str, root: Path | None) -> str:
    if root is None:
        return path
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def _blocks(content: Any) -> Iterable[dict[str, Any]]:
    if isinstance(content, str):
        yield {"type": "text", "text": content}
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                yield block
            elif isinstance(block, str):
                yield {"type": "text", "text": block}


def turns(entries: Iterable[dict[str, Any]], root: str | os.PathLike[str] | None = None) -> list[Turn]:
    """Group transcript entries into turns; everything unrecognised is skipped, never an error."""
    base = Path(root) if root else None
    out: list[Turn] = []
    current: Turn | None = None
    for entry in entries:
        kind = entry.get("type")
        if kind not in ("user", "assistant"):
            continue  # summary, system, progress, attachment, tag, titles, and whatever comes next
        if entry.get("isSidechain") is True or entry.get("isMeta") is True or entry.get("isCompactSummary") is True:
            continue
        msg = entry.get("message")
        if not isinstance(msg, dict):
            continue
        role = msg.get("role") if isinstance(msg.get("role"), str) else kind
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if role == "user":
            parts = [clean_user_text(b.get("text", "")) for b in _blocks(msg.get("content"))
                     if b.get("type") == "text"]  # tool_result / image blocks are not the human's words
            prompt = "\n".join(p for p in parts if p)
            if prompt:
                current = Turn(prompt=clip(prompt), at=at)
                out.append(current)
        elif role == "assistant":
            for block in _blocks(msg.get("content")):
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                    if current is None:
                        current = Turn(at=at)
                        out.append(current)
                    current.texts.append(clip(block["text"]))
                elif btype == "tool_use" and isinstance(block.get("name"), str):
                    if current is None:
                        current = Turn(at=at)
                        out.append(current)
                    current.tools.append(_tool_call(block, base))
    return [t for t in out if not t.empty]


def normalize(text: str) -> str:
    return " ".join((text or "").split())


def tools_summary(tools: list[ToolCall]) -> str:
    """Two short lines: the files changed/read and the other tool calls (deduplicated, in order)."""
    changed = list(dict.fromkeys(t.file for t in tools if t.file and t.name in WRITE_TOOLS))
    read = [f for f in dict.fromkeys(t.file for t in tools if t.file and t.name not in WRITE_TOOLS)
            if f not in changed]
    calls = list(dict.fromkeys(f"{t.name}: {t.detail}" if t.detail else t.name for t in tools if not t.file))
    lines = []
    if changed:
        lines.append("Files changed: " + ", ".join(changed[:30]))
    if read:
        lines.append("Files read: " + ", ".join(read[:30]))
    if calls:
        lines.append("Tool calls: " + "; ".join(calls[:20]))
    return "\n".join(lines)


def to_messages(found: list[Turn], last_assistant_message: str = "", already_final: str = "",
                with_time: bool = False) -> list[dict[str, str]]:
    """Chat messages for ``remember``: each turn's prompt and final answer (plus tools and files touched).

    ``last_assistant_message`` (from the Stop payload) is the final answer of the last turn even when the
    transcript lags behind; ``already_final`` is the final answer captured by the previous Stop, so a lagging
    copy of it is not captured twice. ``with_time``: each message carries its turn's ``timestamp``.
    """
    final = normalize(last_assistant_message)
    seen = normalize(already_final)
    if final and final == seen:  # the same Stop again (or a lagging copy): that answer is captured already
        final, last_assistant_message = "", ""
    messages: list[dict[str, str]] = []
    for i, turn in enumerate(found):
        texts = [t for t in turn.texts if not seen or normalize(t) != seen]
        answer = texts[-1] if texts else ""
        if i == len(found) - 1 and final:
            answer = clip(last_assistant_message)
        stamp = {"timestamp": turn.at} if with_time and turn.at else {}
        if turn.prompt:
            messages.append({"role": "user", "content": turn.prompt, **stamp})
        body = "\n\n".join(p for p in (answer, tools_summary(turn.tools)) if p)
        if body:
            messages.append({"role": "assistant", "content": body, **stamp})
    if not found and final and final != seen:
        messages.append({"role": "assistant", "content": clip(last_assistant_message)})
    return messages
