"""A Pydantic AI agent with long-term memory, runnable offline.

    python examples/pydantic_ai_agent.py

The model here is a tiny scripted ``FunctionModel`` so the example needs no API key: it searches memory when
told to (ForceMemorySearchFirst pins the first request of each run to memory_search), saves what the user
asks it to remember, and answers from what it found. Replace ``offline_model()`` with a real model, e.g.
``"openai:gpt-5.2"``, and the rest stays the same.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from remem import Memory, Scope
from remem.core.tooling import BackgroundCapture
from remem.integrations.pydantic_ai import (CaptureMemories, ForceMemorySearchFirst, RecallMemories, from_deps,
                                            memory_toolset)


@dataclass
class Deps:
    """Whatever your app passes to a run; ``memory_scope`` says whose memories the run may use."""

    user_id: str

    @property
    def memory_scope(self) -> Scope:
        return Scope(tenant="demo", user=self.user_id)


def offline_model() -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        prompt = next((str(p.content) for m in reversed(messages) if isinstance(m, ModelRequest)
                       for p in m.parts if p.part_kind == "user-prompt"), "")
        forced = (info.model_settings or {}).get("tool_choice")
        if forced:  # the first request of the run: search as instructed
            return ModelResponse(parts=[ToolCallPart(forced[0], {"query": prompt})])
        returns = {p.tool_name: str(p.content) for p in request.parts if isinstance(p, ToolReturnPart)}
        if "memory_search" in returns and prompt.lower().startswith("remember"):
            fact = prompt.split(" that ", 1)[-1].rstrip(".").replace("I take my", "takes their")
            return ModelResponse(parts=[ToolCallPart("memory_save", {"text": f"The user {fact}.",
                                                                     "kind": "preference"})])
        if "memory_save" in returns:
            return ModelResponse(parts=[TextPart("Got it, I'll remember that.")])
        # RecallMemories put the relevant memories into this request's instructions, as "- [date · kind] text".
        recalled = [line.split("] ", 1)[1] for line in (request.instructions or "").splitlines()
                    if line.startswith("- [")]
        return ModelResponse(parts=[TextPart(f"You told me before: {recalled[0]}" if recalled
                                             else "I don't know that yet.")])

    return FunctionModel(respond)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, Memory(path=f"{folder}/store", embedder="none") as mem:
        capture = BackgroundCapture()
        agent = Agent(
            offline_model(),
            deps_type=Deps,
            instructions="You are a helpful assistant with long-term memory.",
            toolsets=[memory_toolset(mem, scope=from_deps)],          # each run: deps.memory_scope
            capabilities=[RecallMemories(mem, scope=from_deps, token_budget=400),      # memories into the instructions
                          CaptureMemories(mem, scope=from_deps, capture=capture),      # distil each run in the background
                          ForceMemorySearchFirst()],                  # first request must search memory
        )
        alice = Deps("alice")
        print("alice:", agent.run_sync("Remember that I take my coffee black", deps=alice).output)
        print("alice:", agent.run_sync("How do I take my coffee?", deps=alice).output)
        print("bob:", agent.run_sync("How do I take my coffee?", deps=Deps("bob")).output)
        capture.flush(60)
        for rec in mem.list(scope=alice.memory_scope):
            print(f"  alice's memory [{rec.kind}]: {rec.text}")


if __name__ == "__main__":
    main()
