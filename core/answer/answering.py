"""How ``Memory.answer()`` is made: a short answer grounded in memory, with the ids it rests on, or an honest
"not found".

With an LLM configured (any OpenAI-compatible endpoint: ``REMEM_LLM_MODEL`` / ``REMEM_LLM_API_KEY``, or the
``llm`` argument) the answer is written by the model from the recalled context and must cite it
(:mod:`.generative`); keyless, it is the sentence of the recalled passages that answers (:mod:`.extractive`).
"How many" and "list" questions read every matching memory of the scope, not the top k (:mod:`.counting`).
An endpoint that fails falls back to the keyless answer (``method`` says which one ran), so a question never
goes unanswered because a provider is down.
"""

from __future__ import annotations

import logging
from typing import Any

from . import counting, extractive, generative
from .evidence import fit, gather
from .question import is_count
from .result import Answer, not_found
from ..types import ProviderError, to_datetime, utcnow

log = logging.getLogger("remem.answer")

DEFAULT_TOKEN_BUDGET = 2000
RECALL_LIMIT = 12  # hits recalled for an answer (a passage shows several messages)


def answer(memory: Any, question: str, *, scope: Any = None, token_budget: int = DEFAULT_TOKEN_BUDGET,
           as_of: Any = None, llm: Any = None) -> Answer:
    """See :meth:`remem.Memory.answer`. ``memory`` is the in-process store (``search`` and ``iter_records``)."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, got {type(question).__name__}")
    if not question.strip():
        raise ValueError("question must not be empty")
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or not 100 <= token_budget <= 200_000:
        raise ValueError(f"token_budget must be a whole number from 100 to 200000, got {token_budget!r}")
    model = generative.resolve_llm(llm)
    asked = for_llm(memory, question) if model is not None else question
    today = f"{(to_datetime(as_of) or utcnow()):%Y-%m-%d}"
    if is_count(question):
        records = counting.matching(memory.iter_records(scope), question, as_of=as_of)
        if not records:
            return not_found("count")
        if model is not None:
            try:
                return counting.with_llm(model, asked, records, token_budget)
            except ProviderError as exc:
                log.warning("answer: the LLM failed (%s); answering keyless", exc.kind)
        return counting.keyless(question, records, token_budget)
    hits = memory.search(question, scope=scope, limit=RECALL_LIMIT, as_of=as_of, token_budget=token_budget)
    items = fit(gather(hits), token_budget)
    if model is not None:
        try:
            return generative.answer(model, asked, items, today=today)
        except ProviderError as exc:
            log.warning("answer: the LLM failed (%s); answering keyless", exc.kind)
    return extractive.answer(question, items)


def for_llm(memory: Any, question: str) -> str:
    """The question as the LLM endpoint is sent it: redacted like every text remem sends to an LLM (a key pasted
    into a question stays on this machine), with the store's settings (``pii``, ``redact``)."""
    check = getattr(memory, "check", None)
    if check is not None:
        redacted = check.redact(question)
        return question if redacted is None else redacted
    from ..redact.redactor import configured

    return configured(False).redact(question).text


__all__ = ["DEFAULT_TOKEN_BUDGET", "answer", "for_llm"]
