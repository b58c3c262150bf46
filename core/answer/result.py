"""What ``Memory.answer()`` returns: a short answer, the ids it rests on, how sure it is, and whether memory held
one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOT_FOUND = "Memory holds no answer to this question."


@dataclass(frozen=True)
class Answer:
    """An answer grounded in memory.

    ``citations``: the ids of the memories and of the messages (episodes' message ids) the answer rests on,
    memory ids first; every one was in the recalled context. ``confidence``: 0-1 (the model's, or for an
    extractive answer, how much of the question the cited sentence covers, weighed by its rank). ``found`` is
    False when memory does not hold an answer: ``text`` then says so and nothing is guessed. ``method`` names how
    it was made: ``"llm"``, ``"extractive"`` (keyless) or ``"count"`` (a count/list question read over every
    matching memory of the scope). ``counted``: for a count/list question, how many memories were read."""

    text: str
    citations: tuple[str, ...] = ()
    confidence: float = 0.0
    found: bool = False
    method: str = "extractive"
    counted: int = 0

    def __str__(self) -> str:
        return self.text

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "citations": list(self.citations), "confidence": self.confidence,
                "found": self.found, "method": self.method, "counted": self.counted}


def not_found(method: str, counted: int = 0) -> Answer:
    """The answer when memory holds none: says so, cites nothing, guesses nothing."""
    return Answer(text=NOT_FOUND, citations=(), confidence=0.0, found=False, method=method, counted=counted)


__all__ = ["Answer", "NOT_FOUND", "not_found"]
