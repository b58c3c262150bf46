"""remem.integrations.llamaindex on real LlamaIndex agents and the real remem core (embedded store, BM25).

The LLM is LlamaIndex's own offline ``MockFunctionCallingLLM``, minimally subclassed so a test can script its
replies (tool calls included) and record exactly what it was sent, with which ``tool_choice``.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, Callable, List

import pytest

pytest.importorskip("llama_index.core")
warnings.filterwarnings("ignore", category=DeprecationWarning)

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ToolCallBlock  # noqa: E402
from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM  # noqa: E402
from llama_index.core.memory import Memory as ChatMemory  # noqa: E402
from llama_index.core.storage.chat_store.sql import MessageStatus  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import MetadataMode  # noqa: E402
from llama_index.core.tools import RetrieverTool  # noqa: E402

from remem.core.recall.fencing import fenced_lines
from remem import AsyncMemory, Memory, Scope  # noqa: E402
from remem.core.recall.tokens import count_tokens  # noqa: E402
from remem.core.tooling import BackgroundCapture  # noqa: E402
from remem.integrations.llamaindex import (RememMemoryBlock, RememRetriever, memory_agent,  # noqa: E402
                                           memory_tools, remember_turn, run_and_remember)

ALICE = Scope(tenant="acme", user="alice")
BOB = Scope(tenant="acme", user="bob")


class ScriptedLLM(MockFunctionCallingLLM):
    """MockFunctionCallingLLM that passes ``tool_choice`` through to its response generator (the stock mock
    drops it) and records every call as (tool_choice, [(role, text)])."""

    def __init__(self, script: Callable[..., ChatMessage], **kw: Any) -> None:
        calls: list[tuple[Any, list[tuple[str, str]]]] = []

        def gen(messages: List[ChatMessage], tools: Any = None, tool_choice: Any = None, **_: Any) -> ChatMessage:
            calls.append((tool_choice, [(m.role.value, m.content or "") for m in messages]))
            return script(messages, tool_choice=tool_choice, n=len(calls))

        super().__init__(response_generator=gen, **kw)
        self._calls = calls

    @property
    def calls(self) -> list[tuple[Any, list[tuple[str, str]]]]:
        return self._calls

    def _prepare_chat_with_tools(self, tools: Any, user_msg: Any = None, chat_history: Any = None,
                                 verbose: bool = False, allow_parallel_tool_calls: bool = False,
                                 tool_required: bool = False, **kwargs: Any) -> dict:
        prepared = super()._prepare_chat_with_tools(tools, user_msg, chat_history)
        prepared["tool_choice"] = kwargs.get("tool_choice")
        return prepared


def reply(text: str) -> Callable[..., ChatMessage]:
    return lambda messages, **_: ChatMessage(role="assistant", content=text)


def tool_call(name: str, **kwargs: Any) -> ChatMessage:
    return ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id=f"call-{name}", tool_name=name,
                                                               tool_kwargs=kwargs)])


class CountingCapture(BackgroundCapture):
    """The real background capture, also recording what each submit sent (to prove nothing is sent twice)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[list[dict[str, Any]]] = []

    def submit(self, memory: Any, messages: Any, scope: Scope, session: str | None = None) -> Any:
        self.sent.append(list(messages))
        return super().submit(memory, messages, scope, session)


def seed(mem: Memory) -> dict[str, Any]:
    return {
        "tea": mem.add("Alice prefers oolong tea, never sweetened", scope=ALICE, kind="preference",
                       tags=["drinks"], metadata={"origin": "onboarding"}),
        "db": mem.add("Alice decided to use Postgres for the billing service", scope=ALICE, kind="decision"),
        "bob": mem.add("Bob prefers espresso tea blends", scope=BOB, kind="preference"),
    }


# ---------------------------------------------------------------------- retriever
def test_retriever_nodes_carry_memory_id_text_and_metadata_sync_and_async(mem: Memory) -> None:
    recs = seed(mem)
    retriever = RememRetriever(mem, ALICE, limit=3)
    nodes = retriever.retrieve("which tea does alice drink")
    assert nodes and nodes[0].node.node_id == recs["tea"].id
    top = nodes[0]
    assert top.node.get_content() == recs["tea"].text and top.score is not None and top.score > 0
    meta = top.node.metadata
    assert meta["kind"] == "preference" and meta["tags"] == ["drinks"] and meta["origin"] == "onboarding"
    assert (meta["tenant"], meta["user"]) == ("acme", "alice") and meta["memory_id"] == recs["tea"].id
    assert meta["date"] == recs["tea"].created_at.strftime("%Y-%m-%d") and meta["created_at"]
    assert recs["bob"].id not in {n.node.node_id for n in nodes}  # scope is a hard boundary

    anodes = asyncio.run(RememRetriever(AsyncMemory(memory=mem), ALICE).aretrieve("which tea does alice drink"))
    assert [n.node.node_id for n in anodes][:1] == [recs["tea"].id]


def test_retriever_node_of_a_passage_holds_its_messages_in_order_and_their_sources(mem: Memory) -> None:
    at = "2024-06-01T09:00:00Z"
    res = mem.remember([{"role": "user", "content": "My sister Priya is getting married in Lisbon next June.",
                         "id": "u1", "timestamp": at},
                        {"role": "assistant", "content": "Congratulations! Are you going to the wedding?",
                         "id": "a1", "timestamp": at}], scope=ALICE, session="s1")
    top = RememRetriever(mem, ALICE, limit=3, kind="episode").retrieve("Priya's wedding in Lisbon")[0]
    text = top.node.get_content()
    assert text.index("Priya is getting married") < text.index("Congratulations")
    assert top.node.metadata["sources"] == ["u1", "a1"]
    assert top.node.metadata["date"] == "2024-06-01"  # when it was said (the LLM sees it), not when stored
    assert top.node.metadata["occurred_at"].startswith("2024-06-01T09:00:00")
    assert top.node.metadata["passage_ids"] == [e.id for e in res.episodes]
    assert "u1" not in top.node.get_content(metadata_mode=MetadataMode.LLM).replace(text, "")  # ids stay out


def test_retriever_in_query_engine_and_as_tool_shows_llm_text_kind_and_date_only(mem: Memory) -> None:
    recs = seed(mem)
    retriever = RememRetriever(mem, ALICE, limit=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())  # MockLLM echoes the prompt it got
    response = engine.query("what tea does alice like?")
    prompt = str(response)
    assert recs["tea"].text in prompt and "kind: preference" in prompt
    assert recs["tea"].id not in prompt and "tenant" not in prompt  # ids/scope stay out of the LLM prompt
    assert recs["tea"].id in {n.node.node_id for n in response.source_nodes}

    tool = RetrieverTool.from_defaults(retriever, name="recall", description="recall memories")
    assert recs["tea"].text in tool.call(input="oolong").content


def test_retriever_degrades_to_no_nodes_when_the_store_fails(mem: Memory) -> None:
    seed(mem)
    retriever = RememRetriever(mem, ALICE)
    mem.close()
    assert retriever.retrieve("tea") == []
    assert asyncio.run(retriever.aretrieve("tea")) == []


# ---------------------------------------------------------------------- memory block: recall
async def test_block_recall_lands_in_the_system_message_scoped_to_the_user(mem: Memory) -> None:
    recs = seed(mem)
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice")
    chat = ChatMemory.from_defaults(session_id="s1", memory_blocks=[block])
    llm = ScriptedLLM(reply("Oolong, unsweetened."))
    agent = FunctionAgent(llm=llm, tools=[], system_prompt="You are helpful.")

    await agent.run(user_msg="Which tea should you make me?", memory=chat)

    seen = llm.calls[0][1]
    system = "\n".join(text for role, text in seen if role == "system")
    assert "<long_term_memory>" in system and recs["tea"].text in system
    assert recs["bob"].text not in system
    assert seen[-1] == ("user", "Which tea should you make me?")


def test_block_recall_respects_its_token_budget_and_truncates_by_line(mem: Memory) -> None:
    for i in range(30):
        mem.add(f"Alice tea note {i}: she tried blend number {i} and rated it {i % 5} stars", scope=ALICE)
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", token_budget=150)
    text = asyncio.run(block.aget([ChatMessage(role="user", content="alice tea blend")], session_id="s"))
    assert text and 100 < count_tokens(text) <= 150  # filled up to, never past, the budget
    shorter = asyncio.run(block.atruncate(text, 40))
    kept = fenced_lines(shorter or "")  # the least relevant lines go; the fence stays whole
    assert shorter and count_tokens(shorter) <= count_tokens(text) - 40 and shorter.endswith("</remem-memories>")
    assert kept and kept == fenced_lines(text)[:len(kept)]
    assert asyncio.run(block.atruncate(text, 10_000)) is None  # the header alone is dropped


async def test_block_recall_failure_is_an_empty_block_not_a_crash(mem: Memory) -> None:
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice")
    mem.close()
    chat = ChatMemory.from_defaults(session_id="s1", memory_blocks=[block])
    llm = ScriptedLLM(reply("still answering"))
    result = await FunctionAgent(llm=llm, tools=[]).run(user_msg="hello", memory=chat)
    assert str(result) == "still answering"


# ---------------------------------------------------------------------- capture
async def test_plain_llamaindex_never_captures_a_short_chat_but_run_and_remember_does(mem: Memory) -> None:
    capture = CountingCapture()
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", capture=capture)
    chat = ChatMemory.from_defaults(session_id="s1", memory_blocks=[block])
    agent = FunctionAgent(llm=ScriptedLLM(reply("Noted.")), tools=[])

    await agent.run(user_msg="I moved to Lisbon last month.", memory=chat)
    await block.aflush()
    assert capture.sent == [] and mem.list(scope=ALICE) == []  # LlamaIndex flushes only past ~21k tokens

    await run_and_remember(agent, "I prefer window seats on long flights.", memory=chat)
    await block.aflush()
    assert capture.sent == [[{"role": "user", "content": "I moved to Lisbon last month."},
                             {"role": "assistant", "content": "Noted."},
                             {"role": "user", "content": "I prefer window seats on long flights."},
                             {"role": "assistant", "content": "Noted."}]]  # the session so far, catch-up included
    stored = mem.list(scope=ALICE)
    assert any("window seat" in r.text for r in stored) and any("Lisbon" in r.text for r in stored)
    assert all(r.scope == ALICE and r.metadata.get("session") == "s1" for r in stored)


async def test_a_later_session_recalls_what_an_earlier_one_captured(mem: Memory) -> None:
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", capture=CountingCapture())
    agent = FunctionAgent(llm=ScriptedLLM(reply("Noted.")), tools=[])
    first = ChatMemory.from_defaults(session_id="monday", memory_blocks=[block])
    await run_and_remember(agent, "I am allergic to peanuts, so never suggest satay.", memory=first)
    await block.aflush()

    llm = ScriptedLLM(reply("How about a salad?"))
    second = ChatMemory.from_defaults(session_id="friday", memory_blocks=[block])
    await FunctionAgent(llm=llm, tools=[]).run(user_msg="Suggest a lunch for me, no peanuts please", memory=second)
    system = "\n".join(text for role, text in llm.calls[0][1] if role == "system")
    assert "allergic to peanuts" in system

    # monday's own summary and words are not recalled back into monday (its chat history already holds them)
    summaries = [r.text for r in mem.list(scope=ALICE, kind="summary")]
    said = [r.text for r in mem.list(scope=ALICE, kind="episode")]
    assert summaries and any(t in system for t in summaries + said)  # ...while friday does see it
    recall = await block.aget([ChatMessage(role="user", content="allergic peanuts satay")], session_id="monday")
    assert said and not any(t in recall for t in summaries + said)


async def test_session_scoped_block_recalls_only_what_this_session_captured(mem: Memory) -> None:
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", capture=CountingCapture())
    for sid, tea in [("a", "oolong"), ("b", "rooibos")]:
        await block.acapture([ChatMessage(role="user", content=f"I prefer {tea} tea in the afternoon."),
                              ChatMessage(role="assistant", content="Noted.")], session_id=sid)
    await block.aflush()
    question = [ChatMessage(role="user", content="which afternoon tea do I prefer")]

    wide = await block.aget(question, session_id="b")
    assert "oolong" in wide and "rooibos" in wide  # default: everything the user told any session
    scoped = RememMemoryBlock(memory=mem, tenant="acme", user="alice", session_scoped=True)
    narrow = await scoped.aget(question, session_id="b")
    assert "rooibos" in narrow and "oolong" not in narrow


async def test_remember_turn_keeps_streaming_and_does_not_capture_tool_output(mem: Memory) -> None:
    seed(mem)
    capture = CountingCapture()
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", capture=capture)
    chat = ChatMemory.from_defaults(session_id="s2", memory_blocks=[block])

    def script(messages: List[ChatMessage], tool_choice: Any = None, n: int = 0) -> ChatMessage:
        if tool_choice:
            return tool_call("memory_search", query="tea preference")
        return ChatMessage(role="assistant", content="Got it, green tea from now on.")

    agent = memory_agent(ScriptedLLM(script), mem, ALICE)
    handler = agent.run(user_msg="I switched to green tea this week.", memory=chat)
    task = remember_turn(handler)  # the memory is found in the run's context
    kinds = [type(ev).__name__ async for ev in handler.stream_events()]
    await handler
    await task
    await block.aflush()

    assert "ToolCallResult" in kinds and "AgentStream" in kinds
    assert capture.sent == [[{"role": "user", "content": "I switched to green tea this week."},
                             {"role": "assistant", "content": "Got it, green tea from now on."}]]
    # the tool result (Alice's recalled oolong memory) was not re-fed as a new memory
    assert len([r for r in mem.list(scope=ALICE) if "oolong" in r.text.lower()]) == 1
    assert any("green tea" in r.text for r in mem.list(scope=ALICE) if r.metadata.get("session") == "s2")


async def test_fifo_flush_is_not_captured_twice_when_turns_are_captured(mem: Memory) -> None:
    capture = CountingCapture()
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", capture=capture)
    chat = ChatMemory.from_defaults(session_id="s3", memory_blocks=[block], token_limit=120,
                                    chat_history_token_ratio=0.5, token_flush_size=20)
    agent = FunctionAgent(llm=ScriptedLLM(reply("Noted.")), tools=[])
    turns = [f"I decided that project {name} will use {db} for storage."
             for name, db in [("Heron", "Postgres"), ("Osprey", "SQLite"), ("Kestrel", "DuckDB"),
                              ("Merlin", "Redis"), ("Condor", "Cassandra")]]
    for t in turns:
        await run_and_remember(agent, t, memory=chat)
    await block.aflush()

    assert len(await chat.aget_all(status=MessageStatus.ARCHIVED)) > 0  # the FIFO really flushed
    assert len(capture.sent) == len(turns)  # one capture per turn, none from the flushes
    assert [m["content"] for m in capture.sent[-1] if m["role"] == "user"] == turns  # archived turns included
    texts = [r.text for r in mem.list(scope=ALICE) if r.kind not in ("summary", "episode")]
    said = [r.text for r in mem.list(scope=ALICE, kind="episode")]
    for name in ("Heron", "Osprey", "Kestrel", "Merlin", "Condor"):
        assert len([t for t in texts if name in t]) == 1, texts  # every decision stored exactly once
        assert len([t for t in said if name in t]) == 1, said  # and what was said kept once


async def test_fifo_flush_alone_is_captured_for_users_who_do_not_hook_turns(mem: Memory) -> None:
    capture = CountingCapture()
    block = RememMemoryBlock(memory=mem, tenant="acme", user="alice", capture=capture)
    chat = ChatMemory.from_defaults(session_id="s4", memory_blocks=[block], token_limit=120,
                                    chat_history_token_ratio=0.5, token_flush_size=20)
    agent = FunctionAgent(llm=ScriptedLLM(reply("Noted.")), tools=[])
    first = "I decided that project Heron will use Postgres for storage."
    await agent.run(user_msg=first, memory=chat)
    for i in range(4):
        await agent.run(user_msg=f"Another long message number {i} that pushes the short-term queue over.",
                        memory=chat)
    await block.aflush()
    assert capture.sent and capture.sent[0][0] == {"role": "user", "content": first}
    assert any("Heron" in r.text for r in mem.list(scope=ALICE))


# ---------------------------------------------------------------------- tools and the search-first agent
async def test_agent_authors_its_recall_query_on_the_first_step_then_saves(mem: Memory) -> None:
    recs = seed(mem)

    def script(messages: List[ChatMessage], tool_choice: Any = None, n: int = 0) -> ChatMessage:
        if n == 1:
            return tool_call("memory_search", query="oolong tea preference")
        if n == 2:
            # a model often sends one tag as a string: it is one tag, not its letters
            return tool_call("memory_save", text="Alice wants her tea at 80 degrees C", kind="preference", tags="tea")
        return ChatMessage(role="assistant", content="Oolong at 80 C, unsweetened.")

    llm = ScriptedLLM(script)
    agent = memory_agent(llm, mem, ALICE, system_prompt="sys")
    result = await agent.run(user_msg="Make my usual tea, at 80 degrees C please.")

    assert [choice for choice, _ in llm.calls] == ["memory_search", None, None]
    tool_out = [text for role, text in llm.calls[1][1] if role == "tool"]
    assert tool_out and recs["tea"].text in tool_out[0] and recs["tea"].id in tool_out[0]
    assert recs["bob"].text not in tool_out[0]
    saved = [r for r in mem.list(scope=ALICE) if "80 degrees" in r.text]
    assert len(saved) == 1 and saved[0].kind == "preference" and saved[0].source == "agent-tool"
    assert saved[0].tags == ("tea",)
    assert str(result) == "Oolong at 80 C, unsweetened."


async def test_tools_without_scope_say_they_did_not_run(mem: Memory) -> None:
    search, save = memory_tools(mem, lambda: None)  # a resolver that finds no scope for this call
    assert [search.metadata.name, save.metadata.name] == ["memory_search", "memory_save"]
    out = (await search.acall(query="tea")).content
    assert out.startswith("memory search did not run: no memory scope")
    assert save.call(text="Alice likes tea").content.startswith("memory save did not run")
    assert mem.list(scope=Scope()) == [] and mem.list(scope=ALICE) == []


def test_tool_reports_a_broken_store_instead_of_an_empty_memory(mem: Memory) -> None:
    search, _ = memory_tools(mem, ALICE)
    mem.close()
    assert search.call(query="tea").content == "memory search did not run: this Memory is closed"
