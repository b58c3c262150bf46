"""What a capture changed (:class:`RememberResult`), and which distiller does the work."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .keyless import KeylessDistiller
from .llm_distiller import LLMDistiller
from ..providers.llm import Usage, llm_settings_from_env
from ..types import MemoryRecord


@dataclass
class RememberResult:
    """What a capture changed. ``added``/``merged``/``episodes`` are records (``episodes``: the messages stored as
    said, new ones only); ``superseded`` is ``(old id, new id)`` pairs, the memories a correction replaced;
    ``queued`` means the LLM failed and the raw (redacted) capture waits in the pending queue; ``usage`` is the
    LLM tokens it cost (zeros when keyless)."""

    added: list[MemoryRecord] = field(default_factory=list)
    merged: list[MemoryRecord] = field(default_factory=list)
    episodes: list[MemoryRecord] = field(default_factory=list)
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


def resolve_distiller(distiller: Any = None) -> KeylessDistiller | LLMDistiller:
    """An explicit distiller, ``"keyless"``, ``"llm"`` / a model name, ``"claude-code"``, or None: the environment
    decides (``REMEM_DISTILLER=claude-code``, else ``REMEM_LLM_MODEL`` / ``REMEM_LLM_API_KEY``), keyless when
    nothing is configured."""
    if isinstance(distiller, (KeylessDistiller, LLMDistiller)):
        return distiller
    from .claude_code import ClaudeCodeDistiller, wants_claude_code  # REMEM_DISTILLER=claude-code: `claude -p`

    if distiller is None or distiller == "auto":
        if wants_claude_code():
            return ClaudeCodeDistiller.from_env()
        return LLMDistiller.from_env() or KeylessDistiller()
    if isinstance(distiller, str):
        if distiller.lower() in ("keyless", "none", "off"):
            return KeylessDistiller()
        if wants_claude_code(distiller):
            return ClaudeCodeDistiller.from_env()
        settings = llm_settings_from_env() or {}
        if distiller.lower() != "llm":
            settings["model"] = distiller
        return LLMDistiller(**settings)
    if hasattr(distiller, "extract") and hasattr(distiller, "reconcile"):
        return distiller  # duck-typed custom distiller
    raise TypeError("distiller must be a KeylessDistiller, an LLMDistiller, 'keyless', 'llm' or a model name")


__all__ = ["RememberResult", "resolve_distiller"]
