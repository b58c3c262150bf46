"""LangChain messages -> the OpenAI-style dicts ``Memory.remember`` distils (the one converter every part uses)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Mapping, Sequence

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
          "developer": "system", "chat": "user", "user": "user", "assistant": "assistant"}


def content_text(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    parts: list[str] = []
    for block in content if isinstance(content, (list, tuple)) else [content]:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") in (None, "text", "input_text", "output_text"):
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(p for p in parts if p)


def to_openai_message(message: Any) -> dict[str, Any] | None:
    """One LangChain message (or an already OpenAI/Anthropic-style dict) as ``{"role", "content", ...}``.

    Returns None for messages with nothing to remember (no text and no tool calls, e.g. RemoveMessage).
    """
    if isinstance(message, Mapping):
        role = _ROLES.get(str(message.get("role") or message.get("type") or ""), None)
        if role is None:
            return None
        out: dict[str, Any] = {"role": role, "content": content_text(message.get("content"))}
        for key in ("id", "timestamp", "name", "tool_call_id", "tool_calls"):
            if message.get(key):
                out[key] = message[key]
        return out if out["content"] or out.get("tool_calls") else None
    mtype = getattr(message, "type", None)
    role = _ROLES.get(str(mtype), None)
    if role is None:
        return None
    out = {"role": role, "content": content_text(getattr(message, "content", ""))}
    mid = getattr(message, "id", None)
    if isinstance(mid, str) and mid:
        out["id"] = mid  # the message's own id: the sources of what is distilled from it
    name = getattr(message, "name", None)
    if name:
        out["name"] = name
    if role == "tool":
        out["tool_call_id"] = getattr(message, "tool_call_id", None) or ""
    calls = getattr(message, "tool_calls", None) or []
    if role == "assistant" and calls:
        out["tool_calls"] = [{"id": c.get("id") or "", "type": "function",
                              "function": {"name": c.get("name", ""),
                                           "arguments": json.dumps(c.get("args") or {}, ensure_ascii=False)}}
                             for c in calls]
    if not out["content"] and not out.get("tool_calls"):
        return None
    return out


def to_openai_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """Convert a sequence of LangChain messages (or dicts), dropping the ones with nothing to remember."""
    return [m for m in (to_openai_message(x) for x in messages or ()) if m is not None]


def message_key(message: Any) -> str:
    """A stable identity for "already captured": the message id when it has one, else a content hash."""
    mid = message.get("id") if isinstance(message, Mapping) else getattr(message, "id", None)
    if mid:
        return str(mid)
    conv = to_openai_message(message) or {}
    raw = json.dumps(conv, sort_keys=True, ensure_ascii=False, default=str)
    return "h:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def latest_human_text(messages: Sequence[Any]) -> str:
    """The text of the last user message (what recall searches for)."""
    for msg in reversed(list(messages or ())):
        conv = to_openai_message(msg)
        if conv and conv["role"] == "user" and conv["content"].strip():
            return conv["content"]
    return ""
