"""Answers grounded in memory (``Memory.answer()``): :mod:`.answering` runs it; :mod:`.extractive` (keyless),
:mod:`.generative` (an LLM) and :mod:`.counting` ("how many" / "list" questions) make it. Importing this package
loads only :class:`Answer`: ``Memory`` is imported on a hook's hot path."""

from .result import NOT_FOUND, Answer

__all__ = ["Answer", "NOT_FOUND"]
