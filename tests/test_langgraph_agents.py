"""create_agent middleware, memory tools and graph nodes, on real agents and graphs with a fake chat model.

The model records what it received on every call (messages and tool_choice), so the tests assert on what a
real provider would have been sent. Capture is asserted on what reaches ``remember`` (a recording
BackgroundCapture: the adapter's boundary), with the real remem store behind recall and the tools.
"""

from __future__ import annotations

import uuid
from typing import Any, Sequence, TypedDict

import pytest

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import Annotated

from conftest import RecordingCapture
from remem import Memory, Scope
from remem.integrations.langgraph import (ForceMemorySearchFirst, MemoryMiddleware, capture_node, memory_tools,
                                          recall_node, ScopeResolver)

WHO = ScopeResolver()  # the user from the run config, as an app serving several users wires it


class ScriptedModel(BaseChatModel):
    """A fake chat model that supports bind_tools and records each call's messages and tool_choice.

    When tool_choice names a tool it calls that tool with the latest user text as ``query``; otherwise it
    plays ``script`` (a dict = a tool call, a str = an answer), then answers "ok".
    """

    script: list[Any] = []
    calls: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kw: Any) -> Any:
        return self.bind(tools=[getattr(t, "name", t) for t in tools], tool_choice=tool_choice, **kw)

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        choice = kw.get("tool_choice")
        self.calls.append({"tool_choice": choice, "messages": list(messages), "tools": kw.get("tools")})
        n = len(self.calls)
        if isinstance(choice, str) and choice not in ("auto", "none", "any", "required"):
            human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
            msg = AIMessage("", tool_calls=[{"name": choice, "args": {"query": human.content}, "id": f"c{n}"}])
        elif self.script:
            step = self.script.pop(0)
            msg = (AIMessage("", tool_calls=[{"name": step["tool"], "args": step["args"], "id": f"c{n}"}])
                   if isinstance(step, dict) else AIMessage(step))
        else:
            msg = AIMessage("ok")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def cfg(user: str | None, thread: str = "t1") -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread}
    if user:
        conf["user_id"] = user
    return {"configurable": conf}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One store for the module (opening one costs ~1 s); each test has its own users in it."""
    with Memory(path=tmp_path_factory.mktemp("lgagents") / "store", embedder="none") as m:
        yield m


@pytest.fixture
def alice() -> str:
    return f"alice-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def bob() -> str:
    return f"bob-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------- ForceMemorySearchFirst + tools
def test_first_model_call_of_each_run_is_pinned_to_memory_search(mem: Memory, alice: str, bob: str) -> None:
    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    mem.add("Bob prefers green tea too", scope=Scope(user=bob))
    model = ScriptedModel(calls=[])
    agent = create_agent(model, memory_tools(mem, scope=WHO), middleware=[ForceMemorySearchFirst()],
                         checkpointer=InMemorySaver())
    out = agent.invoke(user("which green tea do I like?"), cfg(alice))
    assert [c["tool_choice"] for c in model.calls] == ["memory_search", None]
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert "Alice prefers green tea" in result.content and "Bob" not in result.content
    assert "Alice prefers green tea" in model.calls[1]["messages"][-1].content  # the model read the result
    model.calls.clear()
    agent.invoke(user("and what about tea tomorrow?"), cfg(alice))  # next run on the same thread: pinned again
    assert [c["tool_choice"] for c in model.calls] == ["memory_search", None]


def test_force_is_a_no_op_without_the_memory_search_tool() -> None:
    model = ScriptedModel(calls=[])
    create_agent(model, [], middleware=[ForceMemorySearchFirst()]).invoke(user("hi"))
    assert [c["tool_choice"] for c in model.calls] == [None]


def test_search_without_a_scope_says_it_did_not_run(mem: Memory, alice: str, bob: str) -> None:
    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    model = ScriptedModel(calls=[])
    agent = create_agent(model, memory_tools(mem, scope=WHO), middleware=[ForceMemorySearchFirst()])
    out = agent.invoke(user("what tea do I like?"), cfg(user=None))
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert result.content.startswith("memory search did not run: ")
    out = create_agent(ScriptedModel(calls=[]), memory_tools(None, scope=WHO), middleware=[ForceMemorySearchFirst()]).invoke(
        user("what tea?"), cfg(alice))  # no memory and no RememStore attached
    assert next(m for m in out["messages"] if isinstance(m, ToolMessage)).content.startswith(
        "memory search did not run: ")


def test_a_tenant_fixed_in_the_resolver_is_not_moved_by_the_run_config(mem: Memory, alice: str, bob: str) -> None:
    """On a hosted LangGraph server the clients write ``configurable``: a tenant the developer fixed stays."""
    mem.add("Globex's launch code is PELICAN", scope=Scope(tenant="globex", user=alice))
    mem.add("Acme ships on Fridays", scope=Scope(tenant="acme", user=alice))
    model = ScriptedModel(calls=[])
    agent = create_agent(model, memory_tools(mem, scope=ScopeResolver(tenant="acme")),
                         middleware=[ForceMemorySearchFirst()])
    run = cfg(alice)
    run["configurable"]["tenant"] = "globex"  # a client asking for another tenant
    out = agent.invoke(user("what do we ship, and what is the launch code?"), run)
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage)).content
    assert "PELICAN" not in result
    assert ScopeResolver(tenant="acme")(run) == Scope(tenant="acme", user=alice)
    assert ScopeResolver()(run) == Scope(tenant="globex", user=alice)  # unset: read from the run, as documented


def test_the_user_a_server_auth_decided_cannot_be_overridden_by_the_clients_context(alice: str, bob: str) -> None:
    """Review: the context (sent by the client) was read before ``configurable`` for every key, the server's too."""
    resolver = ScopeResolver(tenant="acme", user_keys=("langgraph_auth_user_id",))
    run = {"configurable": {"langgraph_auth_user_id": alice, "thread_id": "t1"}}
    assert resolver(run, {"langgraph_auth_user_id": bob}) == Scope(tenant="acme", user=alice)
    assert resolver({"configurable": {}}, {"langgraph_auth_user_id": bob}) is None  # no auth: no user, no memory
    assert ScopeResolver(tenant="acme")(run, {"user_id": bob}) == Scope(tenant="acme", user=bob)  # the app's keys


def test_memory_save_tool_stores_in_the_runtime_scope(mem: Memory, alice: str, bob: str) -> None:
    model = ScriptedModel(calls=[], script=[{"tool": "memory_save", "args": {"text": "Alice's cat is called Miso",
                                                                              "kind": "fact"}}, "saved"])
    create_agent(model, memory_tools(mem, scope=WHO)).invoke(user("remember my cat's name is Miso"), cfg(alice))
    recs = mem.list(scope=Scope(user=alice))
    assert [(r.text, r.kind) for r in recs] == [("Alice's cat is called Miso", "fact")]
    assert mem.list(scope=Scope(user=bob)) == []


def test_tools_fall_back_to_the_graph_remem_store(mem: Memory, alice: str, bob: str) -> None:
    from remem.integrations.langgraph import RememStore

    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    agent = create_agent(ScriptedModel(calls=[]), memory_tools(scope=WHO), middleware=[ForceMemorySearchFirst()],
                         store=RememStore(mem))
    out = agent.invoke(user("green tea"), cfg(alice))
    assert "Alice prefers green tea" in next(m for m in out["messages"] if isinstance(m, ToolMessage)).content


# ---------------------------------------------------------------------- MemoryMiddleware
def test_middleware_recalls_into_the_request_and_captures_new_messages_once(mem: Memory, alice: str, bob: str) -> None:
    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    mem.add("Bob prefers black coffee", scope=Scope(user=bob))
    cap = RecordingCapture()
    model = ScriptedModel(calls=[])
    mw = MemoryMiddleware(mem, scope=WHO, capture_executor=cap, tools=False)
    agent = create_agent(model, [], system_prompt="You are helpful.", middleware=[mw],
                         checkpointer=InMemorySaver())
    out = agent.invoke(user("what tea should I order?"), cfg(alice))

    sent = model.calls[0]["messages"]
    assert isinstance(sent[0], SystemMessage)
    assert sent[0].content.startswith("You are helpful.") and "Alice prefers green tea" in sent[0].content
    assert "Bob" not in sent[0].content
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])  # recall is never persisted

    assert len(cap.submitted) == 1
    msgs, scope, session = cap.submitted[0]
    assert [(m["role"], m["content"]) for m in msgs] == [("user", "what tea should I order?"), ("assistant", "ok")]
    assert scope == Scope(user=alice) and session == "t1"

    agent.invoke(user("thanks!"), cfg(alice))
    msgs, _, _ = cap.submitted[1]
    assert [(m["role"], m["content"]) for m in msgs] == [("user", "thanks!"), ("assistant", "ok")]  # only new ones


def test_middleware_without_user_skips_recall_and_capture(mem: Memory, alice: str, bob: str) -> None:
    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    cap = RecordingCapture()
    model = ScriptedModel(calls=[])
    create_agent(model, [], middleware=[MemoryMiddleware(mem, scope=WHO, capture_executor=cap, tools=False)]).invoke(
        user("what tea?"), cfg(user=None))
    assert not any(isinstance(m, SystemMessage) for m in model.calls[0]["messages"])
    assert cap.submitted == []


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # langchain's ToolRuntime
def test_middleware_registers_tools_and_reads_scope_from_runtime_context(mem: Memory, alice: str, bob: str) -> None:
    class Ctx(TypedDict):
        user_id: str

    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    cap = RecordingCapture()
    model = ScriptedModel(calls=[])
    agent = create_agent(model, [], middleware=[MemoryMiddleware(mem, scope=WHO, capture_executor=cap),
                                                ForceMemorySearchFirst()], context_schema=Ctx)
    out = agent.invoke(user("green tea?"), context={"user_id": alice})
    assert set(model.calls[0]["tools"]) == {"memory_search", "memory_save"}
    assert [c["tool_choice"] for c in model.calls] == ["memory_search", None]
    assert "Alice prefers green tea" in model.calls[0]["messages"][0].content
    assert "Alice prefers green tea" in next(m for m in out["messages"] if isinstance(m, ToolMessage)).content
    msgs, scope, _ = cap.submitted[0]
    assert scope == Scope(user=alice) and all(m.get("name") != "memory_search" for m in msgs)  # tool output not re-captured


async def test_middleware_async_agent(mem: Memory, alice: str, bob: str) -> None:
    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    cap = RecordingCapture()
    model = ScriptedModel(calls=[])
    agent = create_agent(model, [], middleware=[MemoryMiddleware(mem, scope=WHO, capture_executor=cap),
                                                ForceMemorySearchFirst()], checkpointer=InMemorySaver())
    out = await agent.ainvoke(user("green tea?"), cfg(alice))
    assert [c["tool_choice"] for c in model.calls] == ["memory_search", None]
    assert "Alice prefers green tea" in model.calls[0]["messages"][0].content
    assert isinstance(out["messages"][-1], AIMessage) and len(cap.submitted) == 1


# ---------------------------------------------------------------------- nodes
class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    memories: str


def _chat_graph(mem: Memory, model: ScriptedModel, cap: RecordingCapture, **recall_kw: Any) -> Any:
    def chat(state: ChatState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(ChatState)
    g.add_node("recall", recall_node(mem, scope=WHO, **recall_kw))
    g.add_node("chat", chat)
    g.add_node("capture", capture_node(mem, scope=WHO, capture_executor=cap))
    g.add_edge(START, "recall")
    g.add_edge("recall", "chat")
    g.add_edge("chat", "capture")
    g.add_edge("capture", END)
    return g.compile(checkpointer=InMemorySaver())


def test_recall_node_system_message_and_capture_node(mem: Memory, alice: str, bob: str) -> None:
    mem.add("Alice prefers green tea", scope=Scope(user=alice))
    mem.add("Alice's flight to Lisbon is on Friday", scope=Scope(user=alice))
    cap = RecordingCapture()
    model = ScriptedModel(calls=[])
    graph = _chat_graph(mem, model, cap)
    graph.invoke(user("what tea do I like?"), cfg(alice))
    seen = model.calls[0]["messages"]
    recall = [m for m in seen if isinstance(m, SystemMessage)]
    assert len(recall) == 1 and "Alice prefers green tea" in recall[0].content
    graph.invoke(user("when is my flight to Lisbon?"), cfg(alice))
    state = graph.get_state(cfg(alice)).values
    recalls = [m for m in state["messages"] if isinstance(m, SystemMessage)]
    assert len(recalls) == 1 and "Lisbon" in recalls[0].content  # the previous recall was replaced
    assert [[(m["role"], m["content"]) for m in msgs] for msgs, _, _ in cap.submitted] == [
        [("user", "what tea do I like?"), ("assistant", "ok")],
        [("user", "when is my flight to Lisbon?"), ("assistant", "ok")]]  # recall messages never captured
    assert all(scope == Scope(user=alice) and session == "t1" for _, scope, session in cap.submitted)


def test_recall_node_state_mode_and_token_budget(mem: Memory, alice: str, bob: str) -> None:
    for i in range(30):
        mem.add(f"Alice tea note {i}: she tried oolong blend number {i} and rated it {i % 5}", scope=Scope(user=alice))
    cap = RecordingCapture()
    model = ScriptedModel(calls=[])
    graph = _chat_graph(mem, model, cap, mode="state", token_budget=80)
    out = graph.invoke(user("which oolong tea blend?"), cfg(alice))
    assert "oolong" in out["memories"]
    from remem.core.recall.tokens import count_tokens
    assert count_tokens(out["memories"]) <= 80
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])
    out = graph.invoke(user("anything?"), cfg(user=None, thread="t2"))
    assert out["memories"] == ""  # no user: no recall, no error
