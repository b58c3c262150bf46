"""The one scope rule, checked at every adapter entry point on the real embedded store.

``scope=`` is a Scope, a mapping, a callable (given the framework's per-call context) or None (= the global
space); each entry point reads and writes exactly that scope, and an unknown keyword is rejected.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Callable

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("llama_index.core")
pytest.importorskip("pydantic_ai")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from remem import Memory, Scope  # noqa: E402
from remem.core.tooling import BackgroundCapture  # noqa: E402
from remem.integrations import langgraph as lg  # noqa: E402
from remem.integrations import llamaindex as li  # noqa: E402
from remem.integrations import pydantic_ai as pa  # noqa: E402
from test_langgraph_agents import ScriptedModel  # noqa: E402

A = Scope(tenant="a", user="u")
B = Scope(tenant="b", user="u")
GLOBAL = Scope()
COLOURS = {A: "teal", B: "mauve", GLOBAL: "ochre"}

# How each framework's callable receives its per-call context.
ARITY: dict[str, Callable[[Scope], Callable[..., Any]]] = {
    "langgraph": lambda s: (lambda config, context: s),
    "pydantic_ai": lambda s: (lambda ctx: s),
    "llamaindex": lambda s: (lambda: s),
}
FORMS = ["Scope", "mapping", "callable", "None"]


def spec_for(form: str, framework: str) -> tuple[Any, Scope]:
    """(what is passed as scope=, the scope the call must then use)."""
    if form == "Scope":
        return A, A
    if form == "mapping":
        return {"tenant": "a", "user": "u"}, A
    if form == "callable":
        return ARITY[framework](A), A
    return None, GLOBAL


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with Memory(path=tmp_path_factory.mktemp("contract") / "store", embedder="none") as m:
        for scope, colour in COLOURS.items():
            m.add(f"The favourite colour is {colour}", scope=scope, kind="preference")
        yield m


def assert_reads(text: str, expected: Scope) -> None:
    for scope, colour in COLOURS.items():
        assert (colour in text) == (scope == expected), (scope, text)


def assert_wrote(mem: Memory, token: str, expected: Scope) -> None:
    for scope in COLOURS:
        found = [r for r in mem.list(scope=scope, limit=200) if token in r.text]
        assert bool(found) == (scope == expected), (scope, found)


QUESTION = "what is the favourite colour"


# ---------------------------------------------------------------------- readers: entry point -> recalled text
def lg_recall_node(mem: Memory, spec: Any) -> str:
    node = lg.recall_node(mem, scope=spec, mode="state")
    return node.invoke({"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t"}})["memories"]


def lg_memory_tools(mem: Memory, spec: Any) -> str:
    agent = create_agent(ScriptedModel(calls=[]), lg.memory_tools(mem, scope=spec),
                         middleware=[lg.ForceMemorySearchFirst()])
    out = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, {"configurable": {"thread_id": "t"}})
    return next(m.content for m in out["messages"] if getattr(m, "type", "") == "tool")


def lg_middleware(mem: Memory, spec: Any) -> str:
    model = ScriptedModel(calls=[])
    create_agent(model, [], middleware=[lg.MemoryMiddleware(mem, scope=spec, tools=False, capture=False)]).invoke(
        {"messages": [{"role": "user", "content": QUESTION}]}, {"configurable": {"thread_id": "t"}})
    return "\n".join(str(m.content) for m in model.calls[0]["messages"])


def li_memory_tools(mem: Memory, spec: Any) -> str:
    return li.memory_tools(mem, spec)[0].call(query=QUESTION).content


def li_memory_agent(mem: Memory, spec: Any) -> str:
    agent = li.memory_agent(MockFunctionCallingLLM(), mem, spec)
    search = next(t for t in agent.tools if t.metadata.name == li.SEARCH_TOOL)
    return search.call(query=QUESTION).content


def li_retriever(mem: Memory, spec: Any) -> str:
    return "\n".join(n.node.get_content() for n in li.RememRetriever(mem, spec).retrieve(QUESTION))


def li_block(mem: Memory, spec: Any) -> str:
    block = li.RememMemoryBlock(memory=mem, scope=spec)
    return asyncio.run(block.aget(messages=[ChatMessage(role="user", content=QUESTION)])) or ""


def _pa_model(first: ToolCallPart | None, seen: list[Any]) -> FunctionModel:
    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        if first is not None and len(messages) == 1:
            return ModelResponse(parts=[first])
        return ModelResponse(parts=[TextPart("Noted.")])
    return FunctionModel(fn)


def pa_toolset(mem: Memory, spec: Any) -> str:
    seen: list[Any] = []
    agent = Agent(_pa_model(ToolCallPart("memory_search", {"query": QUESTION}), seen),
                  toolsets=[pa.memory_toolset(mem, scope=spec)], capabilities=[pa.ForceMemorySearchFirst()])
    agent.run_sync(QUESTION)
    return str(seen[1][-1].parts[0].content)


def pa_recall(mem: Memory, spec: Any) -> str:
    seen: list[Any] = []
    Agent(_pa_model(None, seen), capabilities=[pa.RecallMemories(mem, scope=spec)]).run_sync(QUESTION)
    request = seen[0][-1]
    return (request.instructions or "") if isinstance(request, ModelRequest) else ""


READERS = {"langgraph": [lg_recall_node, lg_memory_tools, lg_middleware],
           "llamaindex": [li_memory_tools, li_memory_agent, li_retriever, li_block],
           "pydantic_ai": [pa_toolset, pa_recall]}


# ---------------------------------------------------------------------- writers: entry point stores `token`
def _exchange(token: str) -> list[Any]:
    return [HumanMessage(f"My locker code word is {token}."), AIMessage("Noted, I will remember that.")]


def lg_capture_node(mem: Memory, spec: Any, token: str) -> None:
    cap = BackgroundCapture()
    lg.capture_node(mem, scope=spec, capture_executor=cap).invoke({"messages": _exchange(token)},
                                                                 {"configurable": {"thread_id": token}})
    cap.flush()


def lg_saver(mem: Memory, spec: Any, token: str) -> None:
    cap = BackgroundCapture()
    g = StateGraph(MessagesState)
    g.add_node("answer", lambda state: {"messages": [AIMessage("Noted, I will remember that.")]})
    g.add_edge(START, "answer")
    graph = g.compile(checkpointer=lg.MemoryCaptureSaver(InMemorySaver(), mem, scope=spec, capture_executor=cap))
    graph.invoke({"messages": [HumanMessage(f"My locker code word is {token}.")]},
                 {"configurable": {"thread_id": token}})
    cap.flush()


def lg_middleware_capture(mem: Memory, spec: Any, token: str) -> None:
    cap = BackgroundCapture()
    create_agent(ScriptedModel(calls=[], script=["Noted, I will remember that."]), [],
                 middleware=[lg.MemoryMiddleware(mem, scope=spec, tools=False, recall=False,
                                                 capture_executor=cap)]).invoke(
        {"messages": [{"role": "user", "content": f"My locker code word is {token}."}]},
        {"configurable": {"thread_id": token}})
    cap.flush()


def lg_tools_save(mem: Memory, spec: Any, token: str) -> None:
    model = ScriptedModel(calls=[], script=[{"tool": "memory_save", "args": {"text": f"Locker word {token}"}}])
    create_agent(model, lg.memory_tools(mem, scope=spec)).invoke(
        {"messages": [{"role": "user", "content": "save it"}]}, {"configurable": {"thread_id": token}})


def li_tools_save(mem: Memory, spec: Any, token: str) -> None:
    li.memory_tools(mem, spec)[1].call(text=f"Locker word {token}")


def li_block_capture(mem: Memory, spec: Any, token: str) -> None:
    block = li.RememMemoryBlock(memory=mem, scope=spec, capture=BackgroundCapture())
    asyncio.run(block.acapture([ChatMessage(role="user", content=f"My locker code word is {token}."),
                                ChatMessage(role="assistant", content="Noted.")], session_id=token))
    block.flush()


def pa_toolset_save(mem: Memory, spec: Any, token: str) -> None:
    Agent(_pa_model(ToolCallPart("memory_save", {"text": f"Locker word {token}"}), []),
          toolsets=[pa.memory_toolset(mem, scope=spec)]).run_sync("save it")


def pa_capture(mem: Memory, spec: Any, token: str) -> None:
    cap = BackgroundCapture()
    Agent(_pa_model(None, []), capabilities=[pa.CaptureMemories(mem, scope=spec, capture=cap)]).run_sync(
        f"My locker code word is {token}.")
    cap.flush()


WRITERS = {"langgraph": [lg_capture_node, lg_saver, lg_middleware_capture, lg_tools_save],
           "llamaindex": [li_tools_save, li_block_capture],
           "pydantic_ai": [pa_toolset_save, pa_capture]}


def _cases(table: dict[str, list[Any]]) -> list[Any]:
    return [pytest.param(fw, fn, form, id=f"{fn.__name__}-{form}") for fw, fns in table.items() for fn in fns
            for form in FORMS]


@pytest.mark.parametrize("framework, read, form", _cases(READERS))
def test_entry_point_reads_exactly_its_scope(mem: Memory, framework: str, read: Any, form: str) -> None:
    spec, expected = spec_for(form, framework)
    assert_reads(read(mem, spec), expected)


@pytest.mark.parametrize("framework, write, form", _cases(WRITERS))
def test_entry_point_writes_exactly_its_scope(mem: Memory, framework: str, write: Any, form: str) -> None:
    spec, expected = spec_for(form, framework)
    token = f"zq{uuid.uuid4().hex[:10]}"
    write(mem, spec, token)
    assert_wrote(mem, token, expected)


# ---------------------------------------------------------------------- a callable finding no scope: did not run
def test_callable_returning_none_means_the_memory_step_does_not_run(mem: Memory) -> None:
    assert lg_recall_node(mem, lambda config, context: None) == ""
    assert lg_memory_tools(mem, lg.ScopeResolver()).startswith("memory search did not run")  # no user in config
    assert li_memory_tools(mem, lambda: None).startswith("memory search did not run")
    assert li_retriever(mem, lambda: None) == "" and li_block(mem, lambda: None) == ""
    assert pa_toolset(mem, pa.from_deps).startswith("memory search did not run")  # deps carry no scope


def test_from_deps_and_scope_resolver_read_the_run_context(mem: Memory) -> None:
    seen: list[Any] = []
    agent = Agent(_pa_model(ToolCallPart("memory_search", {"query": QUESTION}), seen),
                  toolsets=[pa.memory_toolset(mem, scope=pa.from_deps)])
    agent.run_sync(QUESTION, deps={"memory_scope": B})
    assert_reads(str(seen[1][-1].parts[0].content), B)
    node = lg.recall_node(mem, scope=lg.ScopeResolver(), mode="state")
    text = node.invoke({"messages": [HumanMessage(QUESTION)]},
                       {"configurable": {"tenant_id": "b", "user_id": "u", "thread_id": "t"}})["memories"]
    assert_reads(text, B)


def test_langgraph_resolve_scope_keeps_a_mappings_tenant() -> None:
    assert lg.resolve_scope({"tenant": "a", "user": "u"}, {"configurable": {"user_id": "x"}}) == A
    assert lg.resolve_scope(None, {"configurable": {"user_id": "x"}}) == GLOBAL


# ---------------------------------------------------------------------- unknown keywords are rejected
CONSTRUCTORS: list[tuple[str, Callable[[Memory], Any]]] = [
    ("RememStore", lambda m: lg.RememStore(m, bogus=1)),
    ("recall_node", lambda m: lg.recall_node(m, bogus=1)),
    ("capture_node", lambda m: lg.capture_node(m, bogus=1)),
    ("MemoryCaptureSaver", lambda m: lg.MemoryCaptureSaver(InMemorySaver(), m, bogus=1)),
    ("MemoryMiddleware", lambda m: lg.MemoryMiddleware(m, bogus=1)),
    ("lg.ForceMemorySearchFirst", lambda m: lg.ForceMemorySearchFirst(bogus=1)),
    ("lg.memory_tools", lambda m: lg.memory_tools(m, bogus=1)),
    ("lg.memory_tools-tenant", lambda m: lg.memory_tools(m, tenant="a")),  # removed: use ScopeResolver(tenant=)
    ("li.memory_tools", lambda m: li.memory_tools(m, A, bogus=1)),
    ("memory_agent", lambda m: li.memory_agent(MockFunctionCallingLLM(), m, A, bogus=1)),
    ("RememRetriever", lambda m: li.RememRetriever(m, A, bogus=1)),
    ("RememMemoryBlock", lambda m: li.RememMemoryBlock(memory=m, usr="u")),
    ("memory_toolset", lambda m: pa.memory_toolset(m, bogus=1)),
    ("RecallMemories", lambda m: pa.RecallMemories(m, bogus=1)),
    ("CaptureMemories", lambda m: pa.CaptureMemories(m, bogus=1)),
    ("pa.ForceMemorySearchFirst", lambda m: pa.ForceMemorySearchFirst(bogus=1)),
]


@pytest.mark.parametrize("build", [pytest.param(b, id=name) for name, b in CONSTRUCTORS])
def test_unknown_keyword_is_rejected(mem: Memory, build: Callable[[Memory], Any]) -> None:
    with pytest.raises((TypeError, ValidationError)):
        build(mem)


def test_memory_block_takes_scope_and_refuses_both_forms(mem: Memory) -> None:
    assert li.RememMemoryBlock(memory=mem, scope=A).current_scope() == A
    assert li.RememMemoryBlock(memory=mem, tenant="a", user="u").current_scope() == A
    with pytest.raises(ValidationError):
        li.RememMemoryBlock(memory=mem, scope=A, user="u")
