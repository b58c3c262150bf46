"""MemoryCaptureSaver: passes LangGraph's checkpointer conformance suite as the saver it wraps does, and captures
each thread's new messages (once, at turn boundaries, root graph only) with no change to the graph."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langchain_core.messages import AIMessage
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import DetectedCapabilities
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from conftest import DiskFullOnce, RecordingCapture
from remem import Memory, Scope
from remem.core.tooling import BackgroundCapture
from remem.integrations.langgraph import MemoryCaptureSaver, ScopeResolver


async def test_conformance_full_like_the_wrapped_saver(mem: Memory) -> None:
    @checkpointer_test(name="MemoryCaptureSaver(InMemorySaver)")
    async def wrapped() -> Any:
        yield MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver(), capture_executor=RecordingCapture())

    report = await validate(wrapped)
    assert report.passed_all_base()
    assert DetectedCapabilities.from_instance(MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver())).detected == \
        DetectedCapabilities.from_instance(InMemorySaver()).detected


def test_advertises_exactly_the_optional_methods_the_wrapped_saver_has(mem: Memory) -> None:
    class CopyingSaver(InMemorySaver):
        async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
            self.copied = (source_thread_id, target_thread_id)

    inner = CopyingSaver()
    saver = MemoryCaptureSaver(inner, mem, scope=ScopeResolver())
    assert isinstance(saver, MemoryCaptureSaver)
    assert DetectedCapabilities.from_instance(saver).detected == DetectedCapabilities.from_instance(inner).detected
    import asyncio
    asyncio.run(saver.acopy_thread("a", "b"))
    assert inner.copied == ("a", "b")
    assert not hasattr(type(MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver())), "acopy_thread") or \
        type(MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver())).acopy_thread is InMemorySaver.acopy_thread


def _graph(saver: Any, *, with_tool_step: bool = False) -> Any:
    def bot(state: MessagesState) -> dict[str, Any]:
        text = state["messages"][-1].content
        if with_tool_step:
            return {"messages": [AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "x1"}]),
                                 AIMessage(f"answer to {text}")]}
        return {"messages": [AIMessage(f"answer to {text}")]}

    g = StateGraph(MessagesState)
    g.add_node("bot", bot)
    g.add_edge(START, "bot")
    g.add_edge("bot", END)
    return g.compile(checkpointer=saver)


def test_captures_each_turn_once_without_graph_changes(mem: Memory) -> None:
    cap = RecordingCapture()
    user = f"u-{uuid.uuid4().hex[:6]}"
    graph = _graph(MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver(), capture_executor=cap))
    conf = {"configurable": {"thread_id": "th1", "user_id": user}}
    graph.invoke({"messages": [{"role": "user", "content": "I moved to Porto"}]}, conf)
    graph.invoke({"messages": [{"role": "user", "content": "I work at Acme"}]}, conf)
    assert [[(m["role"], m["content"]) for m in msgs] for msgs, _, _ in cap.submitted] == [
        [("user", "I moved to Porto"), ("assistant", "answer to I moved to Porto")],
        [("user", "I work at Acme"), ("assistant", "answer to I work at Acme")]]
    assert all(scope == Scope(user=user) and session == "th1" for _, scope, session in cap.submitted)
    # a thread without a user is not captured
    graph.invoke({"messages": [{"role": "user", "content": "anonymous"}]}, {"configurable": {"thread_id": "th2"}})
    assert len(cap.submitted) == 2


def test_a_thread_continued_by_another_user_gives_them_only_what_their_run_said(mem: Memory) -> None:
    """Review: the ledger was kept per (scope, thread), so bob continuing alice's thread got all she had said."""
    cap = RecordingCapture()
    graph = _graph(MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver(), capture_executor=cap))
    graph.invoke({"messages": [{"role": "user", "content": "My passport number is X1234567"}]},
                 {"configurable": {"thread_id": "shared", "user_id": "alice"}})
    graph.invoke({"messages": [{"role": "user", "content": "I prefer window seats"}]},
                 {"configurable": {"thread_id": "shared", "user_id": "bob"}})
    by_user = {scope.user: [m["content"] for m in msgs] for msgs, scope, _ in cap.submitted}
    assert by_user == {"alice": ["My passport number is X1234567", "answer to My passport number is X1234567"],
                       "bob": ["I prefer window seats", "answer to I prefer window seats"]}


async def test_async_graph_capture_and_every_mode(mem: Memory) -> None:
    cap = RecordingCapture()
    graph = _graph(MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver(), capture_executor=cap, capture_on="every"))
    conf = {"configurable": {"thread_id": "a1", "user_id": "u"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": "hello there"}]}, conf)
    flat = [(m["role"], m["content"]) for msgs, _, _ in cap.submitted for m in msgs]
    assert flat == [("user", "hello there"), ("assistant", "answer to hello there")]
    assert len(cap.submitted) == 2  # one capture per checkpoint that added messages
    assert (await graph.aget_state(conf)).values["messages"][-1].content == "answer to hello there"


def test_captures_into_real_memory(mem: Memory) -> None:
    """End to end: the real remember() runs in the background and the fact lands in the user's memory."""
    pytest.importorskip("remem.core.distill.pipeline")
    cap = BackgroundCapture()
    user = f"u-{uuid.uuid4().hex[:6]}"
    saver = MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver(), capture_executor=cap)
    _graph(saver).invoke({"messages": [{"role": "user", "content": "My favourite editor is Helix."}]},
                         {"configurable": {"thread_id": "r1", "user_id": user}})
    cap.flush(30)
    assert saver.last_capture is not None and saver.last_capture.done()
    assert any("Helix" in r.text for r in mem.list(scope=Scope(user=user)))
    # each episode names its LangChain message by the message's own id (what the thread's state holds)
    ids = {m.id for m in _graph(saver).get_state({"configurable": {"thread_id": "r1"}}).values["messages"]}
    episodes = mem.list(scope=Scope(user=user), kind="episode")
    assert episodes and all(e.sources[0] in ids for e in episodes), (ids, [e.sources for e in episodes])


def test_a_turn_whose_capture_failed_is_captured_with_the_next_one(mem: Memory) -> None:
    """Review: the ledger marked messages captured before remember() ran, so a failed capture lost the turn."""
    cap = BackgroundCapture()
    flaky = DiskFullOnce(mem)
    saver = MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver(), capture_executor=cap)
    saver.memory = flaky
    conf = {"configurable": {"thread_id": "f1", "user_id": "dana"}}
    _graph(saver).invoke({"messages": [{"role": "user", "content": "I'm allergic to penicillin."}]}, conf)
    cap.flush(30)
    assert flaky.failed and not mem.list(scope=Scope(user="dana"))
    _graph(saver).invoke({"messages": [{"role": "user", "content": "I live in Porto."}]}, conf)
    cap.flush(30)
    said = {r.text for r in mem.list(scope=Scope(user="dana"), kind="episode")}
    assert {"I'm allergic to penicillin.", "I live in Porto."} <= said


def test_a_forgotten_message_stays_forgotten_when_a_restarted_app_continues_the_thread(mem: Memory) -> None:
    """The user asks to forget what they said; the app restarts (a new saver, the same checkpoints) and the
    thread goes on: the forgotten message is not captured back into memory, what is said next is."""
    inner, user = InMemorySaver(), f"u-{uuid.uuid4().hex[:6]}"
    conf = {"configurable": {"thread_id": "t-forget", "user_id": user}}
    for text in ("My passport number is X1234567, use it for the visa form.", "We deploy on Tuesdays."):
        cap = BackgroundCapture()
        _graph(MemoryCaptureSaver(inner, mem, scope=ScopeResolver(), capture_executor=cap)).invoke(
            {"messages": [{"role": "user", "content": text}]}, conf)
        cap.flush(30)
    said_it = [r for r in mem.list(scope=Scope(user=user), kind="episode") if "X1234567" in r.text]
    assert len(said_it) == 2  # the question, and the bot's answer that repeats it
    assert all(mem.forget(r.id, scope=Scope(user=user)) for r in said_it)
    cap = BackgroundCapture()  # the app restarted: a new saver over the same checkpoints
    _graph(MemoryCaptureSaver(inner, mem, scope=ScopeResolver(), capture_executor=cap)).invoke(
        {"messages": [{"role": "user", "content": "I live in Porto."}]}, conf)
    cap.flush(30)
    held = [r.text for r in mem.list(scope=Scope(user=user), limit=100)]
    assert "I live in Porto." in held and not [t for t in held if "X1234567" in t or "passport" in t], held
