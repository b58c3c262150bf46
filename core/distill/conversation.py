"""Conversations -> turns: OpenAI / Anthropic message dicts, framework message objects and plain transcripts,
normalised into :class:`Turn` objects, minus what remem itself injected (recalled memories, memory tools).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..types import record_time
from ..unicode import valid_unicode


@dataclass(frozen=True)
class Turn:
    """One normalised unit of a conversation.

    ``role`` is ``user``, ``assistant``, ``system``, ``tool_call`` (the assistant calling a tool: ``name`` and
    JSON ``text`` arguments) or ``tool_result`` (``name`` of the tool when known, ``is_error``).

    From the message it came from: ``id`` (the message's own ``"id"``; the pipeline derives one when it has
    none), ``at`` (its ``timestamp`` / ``created_at``), ``speaker`` (its ``name``, on user and assistant turns)
    and ``index`` (the message's position in the capture).
    """

    role: str
    text: str
    name: str | None = None
    is_error: bool = False
    args: Mapping[str, Any] | None = None
    id: str | None = None
    at: _dt.datetime | None = None
    speaker: str | None = None
    index: int = -1


_ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "bot": "assistant", "chatbot": "assistant",
                 "developer": "system", "function": "tool", "toolmessage": "tool", "humanmessage": "user",
                 "aimessage": "assistant", "systemmessage": "system"}
_TRANSCRIPT_RE = re.compile(r"^\s*(user|human|assistant|ai|system|tool)\s*:\s*", re.I | re.M)


def to_plain_messages(messages: Any) -> list[dict[str, Any]]:
    """Accept a list of dicts (OpenAI or Anthropic shapes), ``(role, content)`` pairs, message objects with
    ``role``/``type`` and ``content`` attributes (LangChain, LlamaIndex...), or a plain string (one user message, or a
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
        elif isinstance(msg, tuple) and len(msg) == 2 and isinstance(msg[0], str):
            out.append({"role": msg[0], "content": _jsonable(msg[1])})  # LangChain's ("user", "text") form
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
    for key in ("tool_call_id", "name", "id"):
        value = getattr(msg, key, None) or data.get(key)
        if value:
            out[key] = str(value)
    for key in ("timestamp", "created_at"):
        value = getattr(msg, key, None) or data.get(key)
        if value is not None:
            out[key] = value.isoformat() if isinstance(value, _dt.datetime) else _jsonable(value)
            break
    return out


_TIME_KEYS = ("timestamp", "created_at")
SPOKEN_OR_TOOL = ("user", "assistant", "system", "tool")


def _time_of(value: Any) -> _dt.datetime:
    """``value`` (ISO 8601, epoch seconds or milliseconds, or a datetime) as an aware datetime; ValueError if it
    is none of them."""
    try:
        if isinstance(value, bool):
            raise ValueError("a boolean")
        if isinstance(value, str) and re.fullmatch(r"\d{8}", value.strip()):  # ISO 8601 basic: 20240510
            with contextlib.suppress(ValueError):  # (strptime: fromisoformat reads it only from Python 3.11)
                return _dt.datetime.strptime(value.strip(), "%Y%m%d").replace(tzinfo=_dt.timezone.utc)
        if isinstance(value, (int, float)) or (isinstance(value, str) and re.fullmatch(r"\d+(?:\.\d+)?",
                                                                                       value.strip())):
            secs = float(value)
            if secs > 1e11:  # epoch milliseconds (JavaScript clients)
                secs /= 1000.0
            return _dt.datetime.fromtimestamp(secs, tz=_dt.timezone.utc)
        if isinstance(value, _dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
        if isinstance(value, str):
            parsed = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.timezone.utc)
    except (OverflowError, OSError) as exc:
        raise ValueError(str(exc)) from exc
    raise ValueError(f"a {type(value).__name__}")


def message_time(msg: Mapping[str, Any]) -> _dt.datetime | None:
    """When a message was said: its ``timestamp`` or ``created_at``. None when absent or unreadable (a bad
    timestamp never fails a capture; :func:`check_messages` says which were unreadable)."""
    for key in _TIME_KEYS:
        value = msg.get(key)
        if value is None or value == "":
            continue
        try:
            return record_time(_time_of(value))  # a time a record can keep (not at the calendar's ends)
        except ValueError:
            continue
    return None


def check_messages(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Raise a ValueError naming the first message remember() would skip (a role it does not know; a user message
    with no content, when no message has any), before anything is stored: what the caller sent is untouched, so
    nothing is lost. Return what it will keep without (a timestamp that is no time: the message is kept,
    undated; a capture never fails for its dates) or skip (a user message with no content among others)."""
    unread: list[str] = []
    empty: list[int] = []  # user messages with no content at all
    for i, msg in enumerate(messages):
        role = str(msg.get("role") or msg.get("type") or "user").lower()
        if _ROLE_ALIASES.get(role, role) not in SPOKEN_OR_TOOL:
            raise ValueError(f"message {i} has role {role!r}: remember() reads user, assistant, system (or developer) "
                             "and tool messages (human/ai and the frameworks' message objects too)")
        if _ROLE_ALIASES.get(role, role) == "user" and msg.get("content") is None and msg.get("text") is None:
            empty.append(i)
        for key in _TIME_KEYS:
            value = msg.get(key)
            if value is None or value == "":
                continue
            try:
                record_time(_time_of(value))
            except ValueError:
                unread.append(f"message {i} has {key} {str(value)[:40]!r}, no time between the years 1 and 9998 in "
                              "ISO 8601 or epoch seconds: kept without its date")
    if empty and len(empty) == len(messages):  # nothing to keep at all: the caller's mistake, said at once
        raise ValueError(f"message {empty[0]} is a user message with no content: give it 'content' (a string or "
                         "content blocks)")
    return unread + [f"message {i} is a user message with no content: skipped" for i in empty]


def _message_id(msg: Mapping[str, Any]) -> str | None:
    value = msg.get("id")
    if value is None or isinstance(value, bool) or not str(value).strip():
        return None
    return str(value).strip()


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
    for index, msg in enumerate(messages):
        start = len(turns)
        _message_turns(msg, turns, tool_names)
        mid, at = _message_id(msg), message_time(msg)
        speaker = msg.get("name") if isinstance(msg.get("name"), str) and msg.get("name", "").strip() else None
        for k in range(start, len(turns)):
            t = turns[k]
            turns[k] = Turn(t.role, valid_unicode(t.text), t.name, t.is_error, t.args,
                            id=valid_unicode(mid) if mid else mid, at=at, index=index,
                            speaker=valid_unicode(speaker.strip()) if speaker and t.role in ("user", "assistant")
                            else None)
    return turns


def _message_turns(msg: Mapping[str, Any], turns: list[Turn], tool_names: dict[str, str]) -> None:
    """Append the turns of one message to ``turns``."""
    role = str(msg.get("role") or msg.get("type") or "user").lower()
    role = _ROLE_ALIASES.get(role, role)
    content = msg.get("content")
    if content is None and isinstance(msg.get("text"), str):  # {"role": "user", "text": ...}: some SDKs say text
        content = msg["text"]
    if isinstance(content, Mapping):  # one content block given alone, not in a list
        content = [content]
    elif isinstance(content, (int, float)) and not isinstance(content, bool):  # "content": 42
        content = str(content)
    if role == "tool":
        name = msg.get("name") or tool_names.get(str(msg.get("tool_call_id")))
        turns.append(Turn("tool_result", _content_text(content), name=name,
                          is_error=bool(msg.get("is_error") or msg.get("status") == "error")))
        return
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


_RECALLED_LINE_RE = re.compile(r"^- \[\d{4}-\d\d-\d\d · [\w -]{1,40}\] .*$\n?", re.M)
_RECALLED_HEADER_RE = re.compile(r"^Relevant memories \(most relevant first;[^\n]*\):[ \t]*$\n?", re.M)
_MEMORY_TOOL_RE = re.compile(r"^(?:memory[_-]|remem)|_memory$", re.I)


def strip_recalled(text: str) -> str:
    """Remove memory context that remem itself injected (``Memory.context`` blocks), so a capture never
    re-learns what was recalled into the prompt."""
    from ..recall.fencing import unfence
    from ..recall.rendering import HEADER

    text = unfence(text)  # a fenced block whole: its note, header and lines
    if HEADER not in text and "· " not in text and "Relevant memories (" not in text:
        return text
    return _RECALLED_LINE_RE.sub("", _RECALLED_HEADER_RE.sub("", text.replace(HEADER, ""))).strip()


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
                t = replace(t, text=text)
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


__all__ = ["Turn", "check_messages", "conversation_turns", "message_time", "normalize_messages", "strip_recalled",
           "to_plain_messages"]
