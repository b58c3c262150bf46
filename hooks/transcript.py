"""Read what happened in a Claude Code session from its transcript JSONL, defensively and incrementally.

The format is internal to Claude Code and "changes between versions", so this module only relies on the
stable core (``type`` user/assistant, ``message.role``/``message.content`` as a string or Anthropic content
blocks, ``uuid``) and skips everything it does not recognise: unknown entry types, metadata lines
(``summary``, ``tag``, titles), meta/sidechain/compact-summary entries, thinking blocks, tool results, and lines
that are not JSON. Reading resumes from a byte offset, and a trailing line that is still being written is
left for the next read.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from remem.core.unicode import no_surrogates

from .common import may_hold_surrogates

MAX_READ_BYTES = 8_000_000          # parse at most this much of the newest text per capture; before it, only
HEAD_LINE_BYTES = 65_536            # lines this short (a tool output is longer; a prompt or a reply is not),
MAX_SCAN_BYTES = 64_000_000         # and in at most this much (a session first seen mid-way: its recent part)
MAX_TEXT_CHARS = 6_000              # one prompt or answer, kept head + tail
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_COMMAND_MARKERS = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>",
                    "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-prompt-submit-hook>")
_INTERRUPTED = re.compile(r"^\[Request interrupted by user.*\]$")
_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
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
    """Entries appended after ``offset``. Past ``max_bytes`` of new text (a long turn's tool outputs), the older
    part is only scanned for lines of at most ``HEAD_LINE_BYTES`` (prompts, what was said, tool calls), so the
    prompt that started the turn is never lost to the tool outputs that followed it. Raises OSError when the
    file cannot be read or is not a regular file (the caller decides)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        reset = offset > size or offset < 0
        start = max(0 if reset else offset, size - max_bytes - MAX_SCAN_BYTES)
        entries: list[dict[str, Any]] = []
        fh.seek(start)
        pos = start
        while size - pos > max_bytes:
            line = fh.readline(HEAD_LINE_BYTES + 1)
            used = len(line)
            if line.endswith(b"\n"):
                _parse_into(entries, line)
            elif used > HEAD_LINE_BYTES:  # a tool output: skipped, never held whole
                more, ended = _skip_line(fh)
                used += more
                if not ended:
                    break
            else:
                break  # the end of the file, half written
            pos += used
        fh.seek(pos)
        data = fh.read(max(0, size - pos))
    end = data.rfind(b"\n")
    complete = data[: end + 1] if end >= 0 else b""
    for raw in complete.split(b"\n"):
        _parse_into(entries, raw)
    if start != offset and last_uuid:  # re-read from elsewhere: drop what was captured already
        for i, entry in enumerate(entries):
            if entry.get("uuid") == last_uuid:
                entries = entries[i + 1:]
                break
    new_uuid = last_uuid
    for entry in entries:
        if isinstance(entry.get("uuid"), str):
            new_uuid = entry["uuid"]
    return ReadResult(entries=entries, offset=pos + len(complete), last_uuid=new_uuid, reset=reset)


def open_regular(path: str | os.PathLike[str]) -> Any:
    """``path`` opened for reading if it is a regular file; an OSError otherwise. A FIFO or a device named as
    the transcript would block the open or the read forever (and with it the session's captures), so the open
    does not wait (O_NONBLOCK) and only a regular file is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _skip_line(fh: Any) -> tuple[int, bool]:
    """Move past the rest of the current line: (bytes skipped, whether its newline was found)."""
    skipped = 0
    while chunk := fh.read(1 << 20):
        cut = chunk.find(b"\n")
        if cut >= 0:
            fh.seek(cut + 1 - len(chunk), os.SEEK_CUR)
            return skipped + cut + 1, True
        skipped += len(chunk)
    return skipped, False


def _parse_into(entries: list[dict[str, Any]], raw: bytes) -> None:
    """One JSONL line as an entry. Text that is not valid Unicode (a lone surrogate escape, a stray byte) is
    kept with U+FFFD in its place: dropping the line would lose the turn, keeping it raw breaks every write."""
    raw = raw.strip()
    if not raw:
        return
    try:
        entry = json.loads(raw)
    except UnicodeDecodeError:
        try:
            entry = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            return
    except ValueError:
        return
    if isinstance(entry, dict):
        entries.append(no_surrogates(entry) if may_hold_surrogates(raw) else entry)


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
    prompt_id: str | None = None     # the transcript entry's uuid: the message id remem keeps in ``sources``
    text_ids: list[str | None] = field(default_factory=list)   # one per text

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


def entry_id(entry: dict[str, Any]) -> str | None:
    """The entry's uuid when it looks like one (it becomes a message id, so nothing else passes)."""
    value = entry.get("uuid")
    return value if isinstance(value, str) and _ENTRY_ID.fullmatch(value) else None


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
                current = Turn(prompt=clip(prompt), at=at, prompt_id=entry_id(entry))
                out.append(current)
        elif role == "assistant":
            for block in _blocks(msg.get("content")):
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                    if current is None:
                        current = Turn(at=at)
                        out.append(current)
                    current.texts.append(clip(block["text"]))
                    current.text_ids.append(entry_id(entry))
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
    """Chat messages for ``remember``: each turn's prompt, what the assistant said on the way (a tool-heavy turn
    says why before it acts: "the flake is a race in the retry queue, so ..."), and its final answer with the
    tools and files it touched. Each message carries its transcript entry's uuid as ``id`` when it has one.

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
        said = [(t, tid) for t, tid in zip(turn.texts, _padded(turn.text_ids, len(turn.texts)))
                if not seen or normalize(t) != seen]
        last: tuple[str, str | None] = said.pop() if said else ("", None)
        if i == len(found) - 1 and final and normalize(last[0]) != final:
            if last[0]:
                said.append(last)  # the transcript lags: its last text was said on the way, the payload's is final
            last = (clip(last_assistant_message), None)
        stamp = {"timestamp": turn.at} if with_time and turn.at else {}
        if turn.prompt:
            messages.append(_message("user", turn.prompt, turn.prompt_id, stamp))
        for text, tid in said:
            messages.append(_message("assistant", text, tid, stamp))
        body = "\n\n".join(p for p in (last[0], tools_summary(turn.tools)) if p)
        if body:
            messages.append(_message("assistant", body, last[1], stamp))
    if not found and final and final != seen:
        messages.append({"role": "assistant", "content": clip(last_assistant_message)})
    return messages


def _padded(ids: list[str | None], n: int) -> list[str | None]:
    return (ids + [None] * n)[:n]


def _message(role: str, content: str, mid: str | None, extra: dict[str, str]) -> dict[str, str]:
    msg = {"role": role, "content": content, **extra}
    if mid:
        msg["id"] = mid
    return msg
