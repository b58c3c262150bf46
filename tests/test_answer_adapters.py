"""``memory_answer`` as each framework's agents call it: a real Pydantic AI agent (FunctionModel), a real
LangChain ``create_agent`` graph (a scripted chat model), and LlamaIndex's FunctionTool, on the real store."""

from __future__ import annotations

from typing import Any, Sequence

import pytest

from remem import Memory, Scope
from remem.core.answer import NOT_FOUND

SCOPE = Scope(tenant="acme", user="alice")


@pytest.fixture
def coding(mem: Memory) -> Memory:
    mem.remember([{"id": "u1", "role": "user", "content": "The staging deploy goes through ArgoCD, never kubectl."},
                  {"id": "u2", "role": "user", "content": "We pinned stripe-python to 7.4.0 because 8.0 broke "
                                                         "the webhook signatures."}],
                 scope=SCOPE, session="s1", distiller="keyless")
    return mem


def test_pydantic_ai_agent_calls_memory_answer(coding: Memory) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from remem.integrations.pydantic_ai import memory_toolset

    seen: list[str] = []

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            assert "memory_answer" in {t.name for t in info.function_tools}
            return ModelResponse(parts=[ToolCallPart("memory_answer", {"question": "How does the staging deploy "
                                                                                    "work?"})])
        seen.append(str(returns[-1].content))
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(brain), toolsets=[memory_toolset(coding, scope=SCOPE, include_answer=True)])
    assert agent.run_sync("how do we deploy staging?").output == "done"
    assert "ArgoCD" in seen[0] and "u1" in seen[0] and "citations:" in seen[0]
    assert "memory_answer" not in memory_toolset(coding, scope=SCOPE).tools  # opt-in


def test_langgraph_agent_calls_memory_answer(coding: Memory) -> None:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from remem.integrations.langgraph import memory_tools

    class Scripted(BaseChatModel):
        calls: list[Any] = []

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Sequence[Any], **kw: Any) -> Any:
            return self.bind(**kw)

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            self.calls.append(list(messages))
            if not any(isinstance(m, ToolMessage) for m in messages):
                msg = AIMessage("", tool_calls=[{"name": "memory_answer", "id": "c1",
                                                 "args": {"question": "Why did we pin stripe-python?"}}])
            else:
                msg = AIMessage("done")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    agent = create_agent(Scripted(), tools=memory_tools(coding, scope=SCOPE, answer=True))
    out = agent.invoke({"messages": [{"role": "user", "content": "why that stripe version?"}]})
    tool_text = next(m.content for m in out["messages"] if isinstance(m, ToolMessage))
    assert "signatures" in tool_text and "u2" in tool_text


def test_llamaindex_memory_answer_tool(coding: Memory) -> None:
    pytest.importorskip("llama_index.core")
    from remem.integrations.llamaindex import memory_tools

    tools = {t.metadata.name: t for t in memory_tools(coding, SCOPE, answer=True)}
    assert "ArgoCD" in str(tools["memory_answer"].call(question="How does the staging deploy work?"))
    assert str(tools["memory_answer"].call(question="What is the capital of France?")) == NOT_FOUND
