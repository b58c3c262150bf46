"""What the LlamaIndex adapter's parts share: one sync and one async handle on the store, message text."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from llama_index.core.llms import ChatMessage

from ...core.aio import AsyncMemory
from ...core.memory import Memory

CAPTURED_ROLES = ("user", "assistant")
"""Only what people said is distilled. Tool results (memory_search output above all) and system prompts
would feed recalled memories back in as if they were new facts."""


def sync_and_async(memory: Any) -> tuple[Any, Any]:
    """``(Memory, AsyncMemory)`` over the same store, whichever of the two the caller passed."""
    if isinstance(memory, AsyncMemory):
        return memory.sync, memory
    if isinstance(memory, Memory):
        return memory, AsyncMemory(memory=memory)
    if memory is None:
        return None, None
    # A duck-typed stand-in (a service client, a test double): use it as-is for both.
    return memory, getattr(memory, "aio", None) or memory


def message_text(message: ChatMessage) -> str:
    """The text a person would read in the message (tool-call blocks and images have none)."""
    try:
        text = message.content
    except Exception:  # noqa: BLE001 - unusual block types must not break capture
        text = None
    return (text or "").strip()


def role_of(message: ChatMessage) -> str:
    role = message.role
    return str(getattr(role, "value", role))


def to_capture_dicts(messages: Iterable[ChatMessage]) -> list[dict[str, str]]:
    """LlamaIndex messages as the role/content dicts ``Memory.remember`` takes; only user/assistant text."""
    out: list[dict[str, str]] = []
    for m in messages:
        role = role_of(m)
        text = message_text(m)
        if role in CAPTURED_ROLES and text:
            out.append({"role": role, "content": text})
    return out


def last_user_text(messages: Sequence[ChatMessage] | None, *, turns: int = 1) -> str:
    """The recall query for a conversation: its latest user message(s)."""
    picked: list[str] = []
    for m in reversed(list(messages or [])):
        if role_of(m) == "user":
            text = message_text(m)
            if text:
                picked.append(text)
                if len(picked) >= turns:
                    break
    return "\n".join(reversed(picked))
