"""Context rotation in real graphs and agents (offline models): past the budget the oldest messages are captured
into the real store, dropped only once stored, a digest stands in for them, and recall brings them back."""

from __future__ import annotations

import time
from typing import Any, Sequence

import pytest

from conftest import DiskFullOnce
from remem import Memory, Scope
from remem.core.recall.tokens import count_tokens

pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402

from remem.integrations.langgraph import ContextRotation  # noqa: E402
from remem.integrations.langgraph.rotation import is_digest  # noqa: E402

SCOPE = Scope(tenant="acme", user="alice")
TOPICS = ["the Postgres job queue", "the ArgoCD staging deploy", "the ruff pre-commit hook", "the S3 upload retries",
          "the Stripe webhook backoff", "the report worker memory limit", "the nightly OOMKilled job",
          "migration 0042 and the jobs table"]


def said(i: int) -> str:
    return (f"Turn {i}: let us talk about {TOPICS[i % len(TOPICS)]}. " + "Some detail about it that matters. " * 8)


class Talker(BaseChatModel):
    """A fake chat model that answers every call with a long reply and records what it was sent."""

    calls: list[list[Any]] = []

    @property
    def _llm_type(self) -> str:
        return "talker"

    def bind_tools(self, tools: Sequence[Any], **kw: Any) -> Any:
        return self.bind(**kw)

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        self.calls.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage("Noted. " + "I will keep that in mind. " * 6))])


def tokens_of(messages: Sequence[Any]) -> int:
    return sum(count_tokens(str(m.content)) + 4 for m in messages)


def episodes(mem: Memory) -> list[Any]:
    return [r for r in mem.list(scope=SCOPE, limit=1000) if r.kind == "episode"]


def run_turns(agent: Any, n: int, thread: str = "t1", start: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(start, start + n):
        out = agent.invoke({"messages": [HumanMessage(said(i))]}, {"configurable": {"thread_id": thread}})
    return out


def test_langgraph_agent_rotates_past_the_budget_and_recall_brings_it_back(mem: Memory) -> None:
    rotation = ContextRotation(mem, scope=SCOPE, max_tokens=600, target_tokens=300, keep_last=2)
    model = Talker(calls=[])
    agent = create_agent(model, tools=[], middleware=[rotation], checkpointer=InMemorySaver())
    state = run_turns(agent, 8)
    messages = state["messages"]
    assert is_digest(messages[0]) and "messages were moved to long-term memory" in messages[0].content
    assert tokens_of(messages) <= 600 + 200  # the budget, plus the turn added after the last rotation
    assert said(7) in [m.content for m in messages]  # the latest turn is never rotated
    sent = model.calls[-1]
    assert is_digest(sent[0]) and not any(said(0) == m.content for m in sent)  # the model no longer sees turn 0
    # what was dropped is in memory, with the message's own id, and recall finds it
    stored = {r.sources[0]: r.text for r in episodes(mem)}
    assert any(text.startswith("Turn 0: let us talk about the Postgres job queue") for text in stored.values())
    hits = mem.search("What did we say about the Postgres job queue?", scope=SCOPE)
    assert hits and "Postgres job queue" in hits[0].text
    # nothing stored twice: each message id is one episode, however many rotations saw it
    ids = [r.sources[0] for r in episodes(mem)]
    assert len(ids) == len(set(ids))


def test_a_failed_capture_drops_nothing_and_the_next_call_retries(mem: Memory) -> None:
    flaky = DiskFullOnce(mem)
    rotation = ContextRotation(flaky, scope=SCOPE, max_tokens=600, target_tokens=300, keep_last=2)
    agent = create_agent(Talker(calls=[]), tools=[], middleware=[rotation], checkpointer=InMemorySaver())
    grown = []
    for i in range(9):
        state = agent.invoke({"messages": [HumanMessage(said(i))]}, {"configurable": {"thread_id": "t2"}})
        grown.append(len(state["messages"]))
        if flaky.failed and not episodes(mem):
            assert not any(is_digest(m) for m in state["messages"])  # the failed capture dropped nothing
            assert state["messages"][0].content == said(0)
    assert flaky.failed and episodes(mem)  # it was retried and stored
    assert any(is_digest(m) for m in state["messages"])


def test_a_slow_capture_goes_on_in_the_background_and_is_flushed_at_the_runs_end(mem: Memory) -> None:
    class Slow:
        def __init__(self, inner: Memory) -> None:
            self.inner = inner

        def remember(self, *args: Any, **kwargs: Any) -> Any:
            time.sleep(0.5)
            return self.inner.remember(*args, **kwargs)

    rotation = ContextRotation(Slow(mem), scope=SCOPE, max_tokens=600, target_tokens=300, keep_last=2, wait=0.01)
    agent = create_agent(Talker(calls=[]), tools=[], middleware=[rotation], checkpointer=InMemorySaver())
    state = run_turns(agent, 7, thread="t3")
    assert episodes(mem)  # the run's end waited for the capture it started
    later = run_turns(agent, 1, thread="t3", start=7)
    assert any(is_digest(m) for m in later["messages"])  # and a later call made the cut
    assert tokens_of(later["messages"]) <= 600 + 200 and len(state["messages"]) <= 9
    rotation.close()


def test_context_rotation_as_a_node_in_a_hand_built_graph(mem: Memory) -> None:
    rotation = ContextRotation(mem, scope=SCOPE, max_tokens=600, target_tokens=300, keep_last=2)

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("Noted. " + "I will keep that in mind. " * 6)]}

    builder = StateGraph(MessagesState)
    builder.add_node("rotate", rotation.node)
    builder.add_node("model", model)
    builder.add_edge(START, "rotate")
    builder.add_edge("rotate", "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    state = run_turns(graph, 8, thread="t4")
    assert is_digest(state["messages"][0]) and tokens_of(state["messages"]) <= 800
    rotation.close()
    assert any("ArgoCD" in r.text for r in episodes(mem))


def test_bad_budgets_are_clear_errors(mem: Memory) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        ContextRotation(mem, max_tokens=10)
    with pytest.raises(ValueError, match="target_tokens"):
        ContextRotation(mem, max_tokens=1000, target_tokens=2000)


def test_with_memory_middleware_what_was_rotated_out_is_recalled_when_asked_about(mem: Memory) -> None:
    from langchain_core.messages import SystemMessage

    from remem.integrations.langgraph import MemoryMiddleware

    rotation = ContextRotation(mem, scope=SCOPE, max_tokens=600, target_tokens=300, keep_last=2)
    model = Talker(calls=[])
    agent = create_agent(model, tools=[], checkpointer=InMemorySaver(),
                         middleware=[MemoryMiddleware(mem, scope=SCOPE, capture=False, tools=False), rotation])
    run_turns(agent, 8, thread="t5")
    agent.invoke({"messages": [HumanMessage("What did we say about the Postgres job queue?")]},
                 {"configurable": {"thread_id": "t5"}})
    sent = model.calls[-1]
    assert not any(m.content == said(0) for m in sent)  # turn 0 is no longer in the thread...
    system = next(m.content for m in sent if isinstance(m, SystemMessage))
    assert "Turn 0: let us talk about the Postgres job queue" in system  # ...but recall brings it back


async def test_async_agent_rotates_through_an_async_memory(mem: Memory) -> None:
    from remem import AsyncMemory

    rotation = ContextRotation(AsyncMemory(memory=mem), scope=SCOPE, max_tokens=600, target_tokens=300,
                               keep_last=2)
    agent = create_agent(Talker(calls=[]), tools=[], middleware=[rotation], checkpointer=InMemorySaver())
    state: dict[str, Any] = {}
    for i in range(8):
        state = await agent.ainvoke({"messages": [HumanMessage(said(i))]}, {"configurable": {"thread_id": "t6"}})
    assert is_digest(state["messages"][0]) and episodes(mem)
