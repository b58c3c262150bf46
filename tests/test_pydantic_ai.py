"""remem.integrations.pydantic_ai on real Pydantic AI agents (TestModel / FunctionModel, no network) and a real
embedded store: the tools are scoped per run, recall reaches the model, capture stores the run's conversation
without holding up the result, and the first request of every run is pinned to memory_search."""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, models  # noqa: E402
from pydantic_ai.messages import (ImageUrl, ModelMessage, ModelRequest, ModelResponse, SystemPromptPart,  # noqa: E402
                                  TextPart, ThinkingPart, ToolCallPart, ToolReturnPart, UserPromptPart)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from conftest import DiskFullOnce  # noqa: E402
from remem import AsyncMemory, Memory, Scope  # noqa: E402
from remem.core.recall.rendering import HEADER  # noqa: E402
from remem.core.recall.tokens import count_tokens  # noqa: E402
from remem.core.tooling import (FORGET_DESCRIPTION, SAVE_DESCRIPTION, SEARCH_DESCRIPTION,  # noqa: E402
                                BackgroundCapture)
from remem.integrations.pydantic_ai import (CaptureMemories, ForceMemorySearchFirst, RecallMemories,  # noqa: E402
                                            RecalledMemoriesPart, from_deps, memory_toolset,
                                            to_openai_messages)

models.ALLOW_MODEL_REQUESTS = False

ALICE = Scope(tenant="acme", user="alice")
BOB = Scope(tenant="acme", user="bob")


@dataclass
class Deps:
    memory_scope: Scope | None


class Script:
    """A FunctionModel brain: replays scripted responses and records what each request looked like."""

    def __init__(self, *responses: ModelResponse) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []

    def record(self, messages: list[ModelMessage], info: AgentInfo) -> None:
        self.requests.append({
            "tool_choice": (info.model_settings or {}).get("tool_choice"),
            "instructions": messages[-1].instructions if isinstance(messages[-1], ModelRequest) else None,
            "tools": sorted(t.name for t in info.function_tools),
            "messages": list(messages),
        })

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.record(messages, info)
        step = len(self.requests) - 1
        return self.responses[step] if step < len(self.responses) else ModelResponse(parts=[TextPart("ok")])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo):  # FunctionModel stream_function
        resp = self(messages, info)
        for i, part in enumerate(resp.parts):
            if isinstance(part, ToolCallPart):
                yield {i: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}
            elif isinstance(part, TextPart):
                yield part.content

    def model(self) -> FunctionModel:
        return FunctionModel(self, stream_function=self.stream)


def call(tool: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def say(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def tool_returns(messages: list[ModelMessage], tool: str) -> list[str]:
    return [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart) and p.tool_name == tool]


class GatedCapture(BackgroundCapture):
    """A real BackgroundCapture that records what it was given and can hold ``remember`` until released."""

    def __init__(self, hold: bool = False) -> None:
        super().__init__()
        self.gate = threading.Event()
        if not hold:
            self.gate.set()
        self.calls: list[tuple[list[dict[str, Any]], Scope, str | None]] = []
        self.running = threading.Event()

    def submit(self, memory, messages, scope, session=None):  # type: ignore[no-untyped-def]
        self.calls.append((list(messages), scope, session))
        return super().submit(memory, messages, scope, session)

    def _run(self, memory, messages, scope, session):  # type: ignore[no-untyped-def,override]
        self.running.set()
        self.gate.wait(10)
        return BackgroundCapture._run(memory, messages, scope, session)


# --- tools ------------------------------------------------------------------------------------------------

def test_toolset_offers_three_typed_described_tools(mem: Memory) -> None:
    defs = {}

    def grab(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        defs.update({t.name: t for t in info.function_tools})
        return say("ok")

    Agent(FunctionModel(grab), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)]).run_sync("x", deps=Deps(ALICE))
    assert set(defs) == {"memory_search", "memory_save", "memory_forget"}
    assert defs["memory_search"].description == SEARCH_DESCRIPTION
    assert defs["memory_save"].description == SAVE_DESCRIPTION
    assert defs["memory_forget"].description == FORGET_DESCRIPTION
    search = defs["memory_search"].parameters_json_schema
    assert search["required"] == ["query"]
    assert search["properties"]["limit"]["maximum"] == 20
    assert "preference" in search["properties"]["kind"]["anyOf"][0]["enum"]
    save = defs["memory_save"].parameters_json_schema["properties"]
    assert (save["importance"]["minimum"], save["importance"]["maximum"]) == (1, 10)
    assert all(p.get("description") for p in save.values())
    assert defs["memory_forget"].parameters_json_schema["required"] == ["memory_id"]
    only_search = memory_toolset(mem, scope=from_deps, include_save=False, include_forget=False)
    assert set(only_search.tools) == {"memory_search"}


def test_search_is_scoped_by_the_runs_deps_and_never_global(mem: Memory) -> None:
    mem.add("Alice prefers green tea over coffee", scope=ALICE, kind="preference")
    mem.add("Bob drinks black coffee", scope=BOB, kind="preference")
    mem.add("Everyone at acme drinks tea on Fridays", scope=Scope(), kind="fact")  # global space
    script = Script(call("memory_search", query="tea coffee drink"), say("done"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)])

    alice = tool_returns(agent.run_sync("what do I drink?", deps=Deps(ALICE)).all_messages(), "memory_search")
    assert "green tea" in alice[0] and "Bob" not in alice[0] and "Fridays" not in alice[0]
    assert "(id: " in alice[0]  # ids are shown so the model can forget a memory

    script.requests.clear()
    bob = tool_returns(agent.run_sync("what do I drink?", deps=Deps(BOB)).all_messages(), "memory_search")
    assert "black coffee" in bob[0] and "Alice" not in bob[0]

    script.requests.clear()
    nobody = tool_returns(agent.run_sync("what do I drink?", deps=Deps(None)).all_messages(), "memory_search")
    assert nobody == ["memory search did not run: no memory scope is configured for this conversation"]

    script.requests.clear()  # deps without the protocol at all: still no memory, not the global space
    plain = Agent(script.model(), toolsets=[memory_toolset(mem, scope=from_deps)]).run_sync("what do I drink?", deps=object())
    assert tool_returns(plain.all_messages(), "memory_search")[0].startswith("memory search did not run")


def test_scope_can_be_a_callable_and_a_failing_one_means_no_memory(mem: Memory) -> None:
    mem.add("Carol's build server is ci-7", scope=Scope(tenant="acme", user="carol"), kind="fact")
    script = Script(call("memory_search", query="build server"), say("done"))
    toolset = memory_toolset(mem, scope=lambda ctx: Scope(tenant="acme", user=ctx.deps["uid"]))
    agent = Agent(script.model(), toolsets=[toolset])
    assert "ci-7" in tool_returns(agent.run_sync("q", deps={"uid": "carol"}).all_messages(), "memory_search")[0]
    script.requests.clear()
    broken = tool_returns(agent.run_sync("q", deps={}).all_messages(), "memory_search")[0]  # KeyError inside
    assert broken.startswith("memory search did not run")


def test_save_search_forget_round_trip_in_one_run(mem: Memory) -> None:
    script = Script(call("memory_save", text="Alice's laptop is a ThinkPad X1", kind="fact", tags=["hardware"],
                         importance=7), say("saved"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)])
    out = tool_returns(agent.run_sync("remember my laptop", deps=Deps(ALICE)).all_messages(), "memory_save")[0]
    [rec] = mem.list(scope=ALICE)
    assert out == f"Saved memory {rec.id}: {rec.text}"
    assert (rec.kind, rec.tags, rec.importance) == ("fact", ("hardware",), 7)
    assert mem.list(scope=BOB) == []

    # Bob cannot forget Alice's memory even with its id; Alice can.
    script2 = Script(call("memory_forget", memory_id=rec.id), say("ok"))
    agent2 = Agent(script2.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)])
    bob = tool_returns(agent2.run_sync("forget it", deps=Deps(BOB)).all_messages(), "memory_forget")[0]
    assert "nothing forgotten" in bob and len(mem.list(scope=ALICE)) == 1
    script2.requests.clear()
    alice = tool_returns(agent2.run_sync("forget it", deps=Deps(ALICE)).all_messages(), "memory_forget")[0]
    assert alice == f"Forgot memory {rec.id}." and mem.list(scope=ALICE) == []


def test_invalid_arguments_go_back_to_the_model_instead_of_storing(mem: Memory) -> None:
    script = Script(call("memory_save", text="Alice likes jazz", importance=42),
                    call("memory_save", text="Alice likes jazz", importance=6), say("ok"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)])
    agent.run_sync("I like jazz", deps=Deps(ALICE))
    [rec] = mem.list(scope=ALICE)
    assert rec.importance == 6


def test_testmodel_runs_every_tool_without_crashing(mem: Memory) -> None:
    agent = Agent(TestModel(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)])
    out = agent.run_sync("anything", deps=Deps(ALICE)).output
    assert '"memory_search":"No matching memories."' in out
    assert '"memory_save":"Saved memory ' in out
    assert '"memory_forget":"No memory ' in out


def test_async_memory_is_accepted(mem: Memory) -> None:
    mem.add("Alice's cat is called Miso", scope=ALICE, kind="fact")
    script = Script(call("memory_search", query="cat name"), say("done"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(AsyncMemory(memory=mem), scope=from_deps)],
                  capabilities=[RecallMemories(AsyncMemory(memory=mem), scope=from_deps)])
    result = agent.run_sync("what is my cat called?", deps=Deps(ALICE))
    assert "Miso" in tool_returns(result.all_messages(), "memory_search")[0]
    assert "Miso" in script.requests[0]["instructions"]


# --- ForceMemorySearchFirst -------------------------------------------------------------------------------

def test_first_request_of_every_run_is_pinned_to_memory_search(mem: Memory) -> None:
    script = Script(call("memory_search", query="x"), say("first"), call("memory_search", query="y"), say("second"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)],
                  capabilities=[ForceMemorySearchFirst()])
    first = agent.run_sync("hello", deps=Deps(ALICE))
    agent.run_sync("again", deps=Deps(ALICE), message_history=first.all_messages())
    assert [r["tool_choice"] for r in script.requests] == [["memory_search"], None, ["memory_search"], None]


def test_force_is_skipped_when_the_tool_is_missing_or_when_says_no(mem: Memory) -> None:
    script = Script(say("no tools"))
    Agent(script.model(), deps_type=Deps, capabilities=[ForceMemorySearchFirst()]).run_sync("hi", deps=Deps(ALICE))
    assert script.requests[0]["tool_choice"] is None and script.requests[0]["tools"] == []

    script = Script(say("unscoped"))
    force = ForceMemorySearchFirst(when=lambda ctx: ctx.deps.memory_scope is not None)
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)], capabilities=[force])
    agent.run_sync("hi", deps=Deps(None))
    assert script.requests[0]["tool_choice"] is None


# --- RecallMemories ---------------------------------------------------------------------------------------

def test_recall_puts_the_users_memories_in_every_request_of_the_run(mem: Memory) -> None:
    mem.add("Alice is allergic to peanuts", scope=ALICE, kind="fact")
    mem.add("Bob is allergic to shellfish", scope=BOB, kind="fact")
    script = Script(call("memory_search", query="allergy"), say("done"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)],
                  capabilities=[RecallMemories(mem, scope=from_deps), ForceMemorySearchFirst()])
    agent.run_sync("what am I allergic to?", deps=Deps(ALICE))
    assert len(script.requests) == 2
    for req in script.requests:
        assert "Alice is allergic to peanuts" in req["instructions"] and "shellfish" not in req["instructions"]
    # Nothing recalled went into the stored history as a message of its own.
    assert not any(isinstance(p, SystemPromptPart) for m in script.requests[1]["messages"] for p in m.parts)

    script.requests.clear()
    agent.run_sync("what am I allergic to?", deps=Deps(None))
    assert script.requests[0]["instructions"] is None  # no scope: nothing injected, run still works


def test_a_run_id_reused_for_another_user_after_a_failed_run_recalls_their_memories_not_the_first(
        mem: Memory) -> None:
    """Review: recall was cached by (run id, query); a run that failed kept it, and an app reusing the id (a
    request or retry id) gave the next user the first one's memories."""
    mem.add("Alice is allergic to penicillin", scope=ALICE, kind="fact")
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(getattr(messages[-1], "instructions", None) or "")
        if len(seen) == 1:
            raise RuntimeError("provider outage")
        return say("ok")

    agent = Agent(FunctionModel(model), deps_type=Deps, capabilities=[RecallMemories(mem, scope=from_deps)])
    with pytest.raises(RuntimeError):
        agent.run_sync("what am I allergic to?", deps=Deps(ALICE), run_id="req-1")
    agent.run_sync("what am I allergic to?", deps=Deps(BOB), run_id="req-1")
    assert "penicillin" in seen[0] and "penicillin" not in seen[1]


def test_recall_follows_the_prompt_and_stays_within_the_token_budget(mem: Memory) -> None:
    for i in range(30):
        mem.add(f"Alice's project note {i}: the deploy pipeline uses stage {i} with a long explanation "
                f"of why the rollout waits for the canary", scope=ALICE, kind="note")
    mem.add("Alice's favourite editor is Helix", scope=ALICE, kind="preference")
    script = Script()
    agent = Agent(script.model(), deps_type=Deps, capabilities=[RecallMemories(mem, scope=from_deps, token_budget=120)])
    agent.run_sync("tell me about the deploy pipeline rollout", deps=Deps(ALICE))
    first = script.requests[0]["instructions"]
    assert "deploy pipeline" in first and count_tokens(first) <= 120
    agent.run_sync("which editor do I like?", deps=Deps(ALICE))
    assert "Helix" in script.requests[1]["instructions"]


def test_recall_into_history_adds_one_marked_message_per_run(mem: Memory) -> None:
    mem.add("Alice works in the Berlin office", scope=ALICE, kind="fact")
    script = Script(call("memory_search", query="office"), say("Berlin"))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)],
                  capabilities=[RecallMemories(mem, scope=from_deps, placement="history")])
    result = agent.run_sync("where is my office?", deps=Deps(ALICE))
    recalled = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, RecalledMemoriesPart)]
    assert len(recalled) == 1 and "Berlin office" in recalled[0].content
    assert recalled[0].metadata == {"remem": "recall"}
    assert not [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, SystemPromptPart)]  # data, never in the application's voice
    assert script.requests[0]["instructions"] is None
    # Capture never feeds recalled memories back in.
    assert all("Berlin office" not in m["content"] for m in to_openai_messages(result.all_messages()))


# --- CaptureMemories --------------------------------------------------------------------------------------

def test_capture_sends_the_new_messages_without_delaying_the_result(mem: Memory) -> None:
    capture = GatedCapture(hold=True)
    script = Script(call("memory_search", query="tea"), say("Noted: you prefer green tea."))
    agent = Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)],
                  capabilities=[CaptureMemories(mem, scope=from_deps, capture=capture)])
    history = [ModelRequest(parts=[UserPromptPart("an older turn")]), ModelResponse(parts=[TextPart("old reply")])]
    started = time.perf_counter()
    result = agent.run_sync("I prefer green tea over coffee", deps=Deps(ALICE), message_history=history)
    assert result.output == "Noted: you prefer green tea."
    assert capture.running.wait(5)  # remember() is running now, blocked, while the result is already here
    assert time.perf_counter() - started < 5
    [(messages, scope, session)] = capture.calls
    assert scope == ALICE and session == result.conversation_id
    # Only this run's turns; memory-tool traffic and the older history are not sent again.
    assert untimed(messages) == [{"role": "user", "content": "I prefer green tea over coffee"},
                        {"role": "assistant", "content": "Noted: you prefer green tea."}]
    capture.gate.set()
    capture.flush(30)
    stored = mem.list(scope=ALICE)
    assert any(r.kind != "summary" and "green tea" in r.text.lower() for r in stored)
    assert mem.list(scope=BOB) == []


def test_a_run_whose_capture_failed_is_captured_with_the_conversations_next_run(mem: Memory) -> None:
    """Review: a failed remember() lost the run's messages for good (LangGraph's capture now sends them again)."""
    capture = BackgroundCapture()
    flaky = DiskFullOnce(mem)
    agent = Agent(FunctionModel(lambda messages, info: say("Noted.")), deps_type=Deps,
                  capabilities=[CaptureMemories(flaky, scope=from_deps, capture=capture)])
    first = agent.run_sync("I'm allergic to penicillin.", deps=Deps(ALICE))
    capture.flush(30)
    assert flaky.failed and not mem.list(scope=ALICE, kind="episode")
    agent.run_sync("I live in Porto.", deps=Deps(ALICE), message_history=first.all_messages())
    capture.flush(30)
    said = {r.text for r in mem.list(scope=ALICE, kind="episode")}
    assert {"I'm allergic to penicillin.", "I live in Porto."} <= said


def test_a_continued_conversation_keeps_one_summary(mem: Memory) -> None:
    capture = GatedCapture()
    script = Script(say("Noted."), say("Noted again."))
    agent = Agent(script.model(), deps_type=Deps, capabilities=[CaptureMemories(mem, scope=from_deps, capture=capture)])
    first = agent.run_sync("I prefer green tea over coffee", deps=Deps(ALICE))
    second = agent.run_sync("We decided to deploy on Fridays because traffic is low", deps=Deps(ALICE),
                            message_history=first.all_messages())
    capture.flush(30)
    assert capture.calls[0][2] == capture.calls[1][2] == first.conversation_id == second.conversation_id
    [summary] = mem.list(scope=ALICE, kind="summary")
    assert "tea" in summary.text.lower() and "friday" in summary.text.lower()


def test_capture_skips_runs_without_scope(mem: Memory) -> None:
    capture = GatedCapture()
    agent = Agent(Script(say("hi")).model(), deps_type=Deps, capabilities=[CaptureMemories(mem, scope=from_deps, capture=capture)])
    assert agent.run_sync("I prefer tea", deps=Deps(None)).output == "hi"
    assert capture.calls == []


def test_capture_failure_never_reaches_the_run(mem: Memory) -> None:
    class Broken:
        def remember(self, *a: Any, **k: Any) -> None:
            raise RuntimeError("store is gone")

    capture = GatedCapture()
    agent = Agent(Script(say("fine")).model(), deps_type=Deps,
                  capabilities=[CaptureMemories(Broken(), scope=from_deps, capture=capture)])
    assert agent.run_sync("I prefer tea", deps=Deps(ALICE)).output == "fine"
    capture.flush(10)
    assert len(capture.calls) == 1



@pytest.mark.parametrize("placement", ["instructions", "history"])
def test_the_recalled_block_is_never_captured_and_an_answer_quoting_it_is_kept_as_said(mem: Memory,
                                                                                        placement: str) -> None:
    """Recall and capture on one agent: what capture sends is the user's prompt and the answer, never the recall
    block (an instruction, or a marked system part in the history). An answer that repeats a recalled memory word
    for word is what the assistant said: it is kept as an episode, not stored as a new fact, and a later recall
    shows those words once, not once per copy."""
    fact = "Alice's standup is at 9:30 in the Berlin office"
    mem.add(fact, scope=ALICE, kind="fact")
    capture = GatedCapture()
    script = Script(say(fact))
    agent = Agent(script.model(), deps_type=Deps, capabilities=[
        RecallMemories(mem, scope=from_deps, placement=placement), CaptureMemories(mem, scope=from_deps, capture=capture)])
    result = agent.run_sync("when is my standup?", deps=Deps(ALICE))
    seen = f"{script.requests[0]['instructions']} {script.requests[0]['messages']}"
    assert HEADER in seen and fact in seen  # the model did get the recall block
    capture.flush(30)
    [(messages, _, _)] = capture.calls
    assert untimed(messages) == [{"role": "user", "content": "when is my standup?"},
                                 {"role": "assistant", "content": fact}]
    stored = mem.list(scope=ALICE)
    assert not any(HEADER in r.text or "· fact]" in r.text for r in stored)
    assert [r.text for r in stored if r.kind == "fact"] == [fact]
    assert [r for r in stored if r.kind == "episode" and r.text == fact]  # as said, by the assistant
    assert mem.context("when is my standup?", scope=ALICE).count("standup is at 9:30") == 1
    assert result.output == fact


# --- async and streaming ----------------------------------------------------------------------------------

def _full_agent(mem: Memory, script: Script, capture: BackgroundCapture) -> Agent[Deps, str]:
    return Agent(script.model(), deps_type=Deps, toolsets=[memory_toolset(mem, scope=from_deps)],
                 capabilities=[RecallMemories(mem, scope=from_deps), CaptureMemories(mem, scope=from_deps, capture=capture), ForceMemorySearchFirst()])


async def test_async_run_recalls_forces_and_captures(mem: Memory) -> None:
    mem.add("Alice's standup is at 9:30", scope=ALICE, kind="fact")
    capture = GatedCapture()
    script = Script(call("memory_search", query="standup"), say("Your standup is at 9:30."))
    result = await _full_agent(mem, script, capture).run("when is my standup?", deps=Deps(ALICE))
    assert result.output == "Your standup is at 9:30."
    assert [r["tool_choice"] for r in script.requests] == [["memory_search"], None]
    assert all("standup is at 9:30" in r["instructions"] for r in script.requests)
    assert "9:30" in tool_returns(result.all_messages(), "memory_search")[0]
    capture.flush(30)
    assert untimed(capture.calls[0][0][-1:]) == [{"role": "assistant", "content": "Your standup is at 9:30."}]


async def test_streaming_run_recalls_forces_and_captures(mem: Memory) -> None:
    mem.add("Alice's standup is at 9:30", scope=ALICE, kind="fact")
    capture = GatedCapture()
    script = Script(call("memory_search", query="standup"), say("Your standup is at 9:30."))
    async with _full_agent(mem, script, capture).run_stream("when is my standup?", deps=Deps(ALICE)) as stream:
        chunks = [c async for c in stream.stream_text(delta=True)]
    assert "".join(chunks) == "Your standup is at 9:30."
    assert [r["tool_choice"] for r in script.requests] == [["memory_search"], None]
    assert all("standup is at 9:30" in r["instructions"] for r in script.requests)
    capture.flush(30)
    assert [m["role"] for m in capture.calls[0][0]] == ["user", "assistant"]


def test_run_sync_with_everything(mem: Memory) -> None:
    mem.add("Alice's standup is at 9:30", scope=ALICE, kind="fact")
    capture = GatedCapture()
    script = Script(call("memory_search", query="standup"), say("At 9:30."))
    result = _full_agent(mem, script, capture).run_sync("when is my standup?", deps=Deps(ALICE))
    assert result.output == "At 9:30."
    assert [r["tool_choice"] for r in script.requests] == [["memory_search"], None]
    capture.flush(30)
    assert capture.calls and capture.calls[0][1] == ALICE


# --- converter --------------------------------------------------------------------------------------------

def untimed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without their ``timestamp`` (each user and assistant message has one: when it was said)."""
    assert all(dt.datetime.fromisoformat(m["timestamp"]) for m in messages if m["role"] in ("user", "assistant"))
    return [{k: v for k, v in m.items() if k != "timestamp"} for m in messages]


def test_converter_produces_openai_style_dicts() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("You are helpful."),
                            UserPromptPart(["Look at this", ImageUrl("https://example.com/cat.png")])]),
        ModelResponse(parts=[ThinkingPart("hmm"), TextPart("Checking."),
                             ToolCallPart("weather", {"city": "Oslo"}, tool_call_id="c1"),
                             ToolCallPart("memory_search", {"query": "cat"}, tool_call_id="c2")]),
        ModelRequest(parts=[ToolReturnPart("weather", {"temp": 3}, tool_call_id="c1"),
                            ToolReturnPart("memory_search", "- [2026] cat is Miso", tool_call_id="c2"),
                            SystemPromptPart("Relevant memories: ...", metadata={"remem": "recall"})]),
        ModelResponse(parts=[TextPart("It is 3 degrees in Oslo.")]),
    ]
    converted = to_openai_messages(messages)
    assert converted[0]["timestamp"] == messages[0].parts[1].timestamp.isoformat()  # said then, not captured
    assert untimed(converted) == [
        {"role": "user", "content": "Look at this\n[image]"},
        {"role": "assistant", "content": "Checking.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather",
                                                                       "arguments": '{"city":"Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": '{"temp":3}'},
        {"role": "assistant", "content": "It is 3 degrees in Oslo."},
    ]
    no_tools = to_openai_messages(messages, include_system=True, include_tools=False)
    assert untimed(no_tools) == [{"role": "system", "content": "You are helpful."},
                        {"role": "user", "content": "Look at this\n[image]"},
                        {"role": "assistant", "content": "Checking."},
                        {"role": "assistant", "content": "It is 3 degrees in Oslo."}]
