"""answer() with an LLM sends the question to the endpoint: redacted first, like every text remem sends to an
LLM (README: "every text sent to an LLM passes redaction first"), for a plain and a count question."""

from __future__ import annotations

from typing import Any

import pytest

from remem import Memory, Scope

SCOPE = Scope(tenant="acme")
KEY = "sk-proj-Q7vT2mXk9LpR4sWz8NbY1cHd6FgJ3eKa5UoP0iQl"


@pytest.mark.parametrize("question", [f"Is the deploy key {KEY} the one Fly.io uses?",
                                      f"How many deploys used the key {KEY}?"])
def test_the_question_reaches_the_llm_redacted(mem: Memory, llm_env: Any, question: str) -> None:
    mem.add("The deploy goes to Fly.io with the key in the CI secrets.", scope=SCOPE, kind="fact")
    mem.add("We deployed to Fly.io on Monday.", scope=SCOPE, kind="event")
    llm_env.reply({"found": False, "answer": "", "citations": [], "confidence": 0.0, "items": []})
    mem.answer(question, scope=SCOPE)
    sent = llm_env.requests("chat")
    assert sent, "the LLM was not asked"
    body = str(sent[-1]["messages"])
    assert KEY not in body and "[REDACTED:" in body
