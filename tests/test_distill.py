"""Distillation end to end: conversations in, memories out, on a real embedded store.

The LLM path runs the real ``openai`` client against ``tests/openai_server.py`` (a scripted OpenAI-compatible
server on 127.0.0.1), so request shapes, structured outputs, usage and error handling are the real ones.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

from openai_server import OpenAIServer, ScriptedError
from remem import Memory, Scope
from remem.core.distill.pipeline import (KeylessDistiller, LLMDistiller, RememberResult, aremember, audit, check_admission,
                                admit, conversation_turns, normalize_messages, render_transcript,
                                resolve_distiller, to_plain_messages, usage_totals)
from remem.core.providers.llm import llm_settings_from_env
from remem.core.distill.drain import drain_pending, pending_count
from remem.core.distill.pending import PendingQueue, queue_for
from remem.core.recall.tokens import count_tokens
from written import data_of

SCOPE = Scope(tenant="acme", user="dana")
SECRET = "sk-proj-Xq7vT2mLp9RwZ4kB8nYc3HdF6jGs1AeU5oIi0VbNtKrMx"
GH_SECRET = "ghp_R8xk2LmQ9vTz4WcY7bNp3HdJ6fGs1AeU5oIi"

CODING_CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful coding assistant. Always answer concisely."},
    {"role": "user", "content": "Hi! My name is Dana and I work at Acme Robotics on the fleet API. "
                                "I prefer pytest over unittest and I always use type hints. The tests in "
                                "tests/test_fleet.py fail with ModuleNotFoundError after I upgraded to Python "
                                f"3.12, can you fix it? My OpenAI key is {SECRET}"},
    {"role": "assistant", "content": "Sure, I'll take a look at the failing tests.", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "bash", "arguments": json.dumps({"command": "pytest -q tests/test_fleet.py"})}}]},
    {"role": "tool", "tool_call_id": "call_1", "content":
        "Traceback (most recent call last):\n  File \"/repo/tests/test_fleet.py\", line 3, in <module>\n"
        "    from fleet import util\n  File \"/repo/fleet/util.py\", line 1, in <module>\n    import distutils\n"
        "ModuleNotFoundError: No module named 'distutils'\n1 error in 0.12s"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "The problem was that distutils was removed in Python 3.12, and fleet/util.py "
                                 "still imports it."},
        {"type": "tool_use", "id": "tu_1", "name": "edit_file",
         "input": {"path": "fleet/util.py", "old": "from distutils.version import LooseVersion",
                   "new": "from packaging.version import Version"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "ok"}]},
    {"role": "assistant", "content": "I replaced distutils with packaging.version in fleet/util.py. Let's use "
                                     "the packaging library from now on because distutils is gone in 3.12. "
                                     "All 42 tests pass now."},
    {"role": "user", "content": "Great, thanks!"},
    {"role": "assistant", "content": "You're welcome!"},
]


@pytest.fixture
def llm(srv: OpenAIServer) -> LLMDistiller:
    return LLMDistiller(model="test-mini", base_url=srv.base_url, api_key="test-key", max_retries=0)


def all_text(mem: Memory, scope: Scope = SCOPE) -> str:
    return "\n".join(json.dumps(r.as_dict()) for r in mem.iter_records(scope))


def extraction(*memories: tuple[str, str], summary: str = "Dana fixed the distutils import.") -> dict[str, Any]:
    return {"memories": [{"text": t, "kind": k, "tags": [], "importance": 6,
                          "entities": [], "relations": []} for t, k in memories],
            "summary": summary}


# ====================================================================== keyless


def test_keyless_distils_a_coding_session_into_useful_memories(mem: Memory) -> None:
    res = mem.remember(CODING_CONVERSATION, scope=SCOPE, session="s1")
    assert isinstance(res, RememberResult) and not res.queued and res.distiller == "keyless"
    by_kind: dict[str, list[str]] = {}
    for rec in res.added:
        by_kind.setdefault(rec.kind, []).append(rec.text)
        assert rec.metadata["session"] == "s1" and rec.scope == SCOPE
    assert "User prefers pytest over unittest." in by_kind["preference"]
    assert "User always uses type hints." in by_kind["preference"]
    assert "User's name is Dana." in by_kind["fact"]
    assert any("Acme Robotics" in t for t in by_kind["fact"])
    lesson = next(t for t in by_kind["lesson"] if "distutils" in t)
    assert "ModuleNotFoundError: No module named 'distutils'" in lesson  # the error line rides along
    assert any("because distutils is gone" in t for t in by_kind["decision"])  # the reason is kept
    texts = " ".join(r.text for r in res.added)
    for noise in ("You're welcome", "Great, thanks", "Sure, I'll", "helpful coding assistant", "Traceback"):
        assert noise not in texts
    summary = res.summary
    assert summary is not None and summary.kind == "summary" and summary.metadata["session"] == "s1"
    assert "can you fix it" in summary.text and "fleet/util.py" in summary.text
    assert "pytest -q tests/test_fleet.py" in summary.text and "ModuleNotFoundError" in summary.text
    assert summary.metadata["files"] == ["tests/test_fleet.py", "fleet/util.py"]
    assert summary.metadata["tools"] == ["bash", "edit_file"]
    # redaction first: the key never reaches the store, and the result says what was removed
    assert res.redactions and SECRET not in all_text(mem)
    hits = mem.search("why did the fleet tests fail?", scope=SCOPE, limit=3)
    assert any("distutils" in h.record.text for h in hits)  # the answer, not only the question
    assert "distutils was removed in Python 3.12" in mem.context("why did the fleet tests fail?", scope=SCOPE)


def test_a_chat_session_summary_quotes_what_was_said_not_the_greeting(mem: Memory) -> None:
    """People greet each other by name: "Hey Gina!" opened LoCoMo's session summaries ("The user said: Hey
    Gina! Then: Hey Jon!"), quoting nothing. The summary starts at what was said."""
    said = [{"role": "user", "name": "Jon", "content": "Hey Gina! I had to shut down my bank account for my biz."},
            {"role": "user", "name": "Gina", "content": "Hey Jon! Sorry to hear that. How are you handling it?"}]
    res = mem.remember(said, scope=SCOPE, session="chat-1", distiller="keyless")
    assert res.summary is not None and "Hey" not in res.summary.text
    assert "shut down my bank account" in res.summary.text


def test_a_framework_named_like_a_file_is_no_file_of_the_session(mem: Memory) -> None:
    said = [{"role": "user", "content": "The storefront is Next.js 15 and the admin is Vue.js. Can you fix the "
                                        "redirect in next.config.js?"}]
    res = mem.remember(said, scope=SCOPE, session="files-1", distiller="keyless")
    assert res.summary is not None and res.summary.metadata["files"] == ["next.config.js"]


def test_session_summary_is_updated_not_duplicated(mem: Memory) -> None:
    first = mem.remember(CODING_CONVERSATION, scope=SCOPE, session="s1")
    again = mem.remember(CODING_CONVERSATION, scope=SCOPE, session="s1")  # nothing new: nothing written
    assert again.added == [] and again.merged == [] and again.summary.id == first.summary.id
    more = CODING_CONVERSATION + [
        {"role": "user", "content": "Also, I live in Lisbon. Can you add a CI job?"},
        {"role": "assistant", "content": "I added .github/workflows/ci.yml running pytest on every push."}]
    grown = mem.remember(more, scope=SCOPE, session="s1")
    assert [r.text for r in grown.added] == ["User lives in Lisbon."]  # only the new turns are distilled
    assert grown.summary.id == first.summary.id
    assert "Can you add a CI job?" in grown.summary.text and ".github/workflows/ci.yml" in grown.summary.text
    # a capture of only the next messages (no prefix) still extends the same summary
    tail = mem.remember([{"role": "user", "content": "Please bump ruff to 0.6 as well."}], scope=SCOPE,
                        session="s1")
    assert tail.summary.id == first.summary.id
    assert "can you fix it" in tail.summary.text and "bump ruff to 0.6" in tail.summary.text
    assert len(mem.list(scope=SCOPE, kind="summary")) == 1
    other = mem.remember([{"role": "user", "content": "How do I rotate the fleet API logs?"}], scope=SCOPE,
                         session="s2")
    assert other.summary.id != first.summary.id and len(mem.list(scope=SCOPE, kind="summary")) == 2
    with ThreadPoolExecutor(4) as pool:  # concurrent captures of one session still make one summary
        list(pool.map(lambda i: mem.remember(f"Please add retry logic to worker {i}.", scope=SCOPE, session="s3"),
                      range(4)))
    assert len(mem.list(scope=SCOPE, kind="summary", where={"meta.session": "s3"})) == 1


def test_a_memory_said_again_in_another_session_is_one_memory_with_both_sources(mem: Memory) -> None:
    """The same preference said on Monday and on Friday is one memory (it was two: the session each came from
    kept them apart); the two messages stay two episodes, and each session keeps its own summary."""
    said = "We always use ruff for linting and never push to main."
    for session in ("monday", "friday"):
        mem.remember([{"role": "user", "content": said, "id": f"{session}-1"}], scope=SCOPE, session=session)
    records = mem.list(scope=SCOPE, limit=50)
    memories = [r for r in records if r.kind not in ("episode", "summary")]
    assert len(memories) == 1 and set(memories[0].sources) == {"monday-1", "friday-1"}
    assert memories[0].merged_count == 1
    assert sorted(r.metadata["session"] for r in records if r.kind == "episode") == ["friday", "monday"]
    assert sorted(r.metadata["session"] for r in records if r.kind == "summary") == ["friday", "monday"]


def test_message_shapes_and_plain_strings(mem: Memory) -> None:
    turns = normalize_messages(to_plain_messages(CODING_CONVERSATION))
    roles = [t.role for t in turns]
    assert roles[:4] == ["system", "user", "assistant", "tool_call"]
    assert turns[4].role == "tool_result" and turns[4].name == "bash" and "distutils" in turns[4].text
    use = next(t for t in turns if t.role == "tool_call" and t.name == "edit_file")
    assert use.args["path"] == "fleet/util.py"
    result = next(t for t in turns if t.role == "tool_result" and t.name == "edit_file")
    assert result.text == "ok"
    # what remem itself put in the prompt (recalled memories, memory tools) is never re-learned
    recalled = mem.context("x", scope=SCOPE) or ("Relevant memories (most relevant first; dates are when each "
                                                 "was recorded or became true):\n- [2026-01-02 · fact] User "
                                                 "likes Go.")
    injected = [{"role": "user", "content": recalled + "\nI prefer Rust for CLIs."},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "m", "type": "function", "function": {
                    "name": "memory_search", "arguments": '{"query": "I prefer Go"}'}}]}]
    kept = conversation_turns(injected)
    assert [(t.role, t.text) for t in kept] == [("user", "I prefer Rust for CLIs.")]
    transcript = to_plain_messages("User: I prefer dark mode everywhere.\nAssistant: Noted!")
    assert [m["role"] for m in transcript] == ["user", "assistant"]
    res = mem.remember("I never deploy on Fridays because our on-call is thin.", scope=SCOPE)
    assert [(r.kind, r.text) for r in res.added] == [
        ("preference", "User never deploys on Fridays because our on-call is thin.")]
    assert res.session.startswith("auto-") and res.summary is not None
    assert mem.remember("", scope=SCOPE).added == []
    private = mem.remember("My email is dana.k@acme-robotics.io and I prefer Vim keybindings.", scope=SCOPE,
                           session="pii", pii=True)
    assert private.redactions.get("email") == 1 and "acme-robotics.io" not in all_text(mem)
    assert "User prefers Vim keybindings." in [r.text for r in private.added]


@pytest.mark.parametrize("text,reason", [
    ("", "empty"), ("   ", "empty"), ("ok", "pleasantry"), ("Thanks so much!", "pleasantry"),
    ("Hi there!", "pleasantry"), ("great, thank you 🙏", "pleasantry"), ("done", "pleasantry"),
    ("You are a helpful assistant that answers in French.", "system_prompt"),
    ("Sure, I'll update the config file for you now.", "restated_instruction"),
    ("You asked me to rename the module and fix the imports.", "restated_instruction"),
    ("Now let me run the tests to check.", "restated_instruction"),   # narrating between tool calls
    ("Next, I'm going to read the conftest.", "restated_instruction"),
    ("Here's the updated config for the worker.", "restated_instruction"),
    ('{"status": "ok", "items": [1, 2, 3], "next": null}', "json_blob"),
    ('Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    x()\n'
     '  File "b.py", line 2, in x\nNameError: name y is not defined', "stack_trace"),
    ("2026-01-01 10:00:01 INFO starting\n2026-01-01 10:00:02 INFO loading\n2026-01-01 10:00:03 WARN slow\n"
     "2026-01-01 10:00:04 INFO ready", "log_output"),
    ("x" * 2500, "too_long"), ("[REDACTED:github_token]", "only_redacted"),
    ("User's key is [REDACTED:openai_api_key].", "only_redacted"), ("x=1; y=2; z=x*y+3; print(z**2 - 4/2) # ok??", "no_words"),
    ("yes", "pleasantry"), ("Uses", "too_short"),
    ("Hey Gina!", "pleasantry"), ("Thanks so much, Caroline!", "pleasantry"), ("Bye Nate!", "pleasantry"),
])
def test_admission_gate_refuses_noise_with_a_reason(text: str, reason: str) -> None:
    verdict = check_admission(text)
    assert not verdict.ok and verdict.reason == reason
    assert admit(text) is False


@pytest.mark.parametrize("text", [
    "User prefers pytest over unittest.", "Chose Postgres over MySQL because of JSONB support.",
    "The deploy failed because DATABASE_URL was unset; fixed by adding it to .env.", "User's name is Dana.",
    "Thanks to the new cache, p95 latency dropped from 900 ms to 120 ms.", "User lives in Lisbon.",
    "Deploys failed because the CI secret [REDACTED:github_token] had expired; rotating it fixed them.",
    "Here's the problem: the webhook handler never verifies the Stripe signature.",  # a finding, not a preamble
    "ok, Redis.", "Thanks! Use Redis.", "Hey Claude, the build is broken", "Bye Nate, see you at the Berlin offsite",
])
def test_admission_gate_keeps_real_memories(text: str) -> None:
    assert check_admission(text).ok and admit(text)


def test_a_long_run_of_pleasantries_is_judged_at_once() -> None:
    """"yes please yes please ... and Gina x1": each "yes please" reads as one phrase or two, and a regex with
    both as alternatives tried 2^n ways (30 s at 231 characters, one message stalling the service)."""
    assert check_admission("yes please " * 30 + "and Gina x1").ok
    assert not admit("thanks so much, " * 10 + "Caroline!")  # a long thanks to one person is still one


def test_transcript_is_token_budgeted_keeping_head_and_tail_of_tool_output() -> None:
    log_lines = [f"line {i}: building module_{i}" for i in range(3000)]
    msgs = [{"role": "user", "content": "Build the project please."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"make"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "\n".join(log_lines) + "\nerror: linker failed"},
            *[{"role": "user" if i % 2 else "assistant", "content": f"turn {i} " + "words " * 300}
              for i in range(40)],
            {"role": "assistant", "content": "Done: the linker needed -lm."}]
    text = render_transcript(normalize_messages(msgs), max_tokens=2000)
    assert count_tokens(text) <= 2000
    assert "line 0: building" in text and "error: linker failed" in text and "line 1500" not in text
    assert text.startswith("user: Build the project") and text.endswith("Done: the linker needed -lm.")
    assert "turns omitted" in text


# ====================================================================== LLM path


def _reconcile_by_text(plan: dict[str, tuple[str, str]], seen: list[str]) -> Any:
    """A reconcile reply keyed by the existing memory's text: {candidate text: (action, existing text)}."""
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        seen.append(prompt)
        short = dict((text, sid) for sid, text in re.findall(r"^(m\d+) \[[^\]]+\] (.+)$", prompt, re.M))
        decisions = []
        for idx, text in re.findall(r"^(\d+) \[[^\]]+\] (.+?)  \(similar", prompt, re.M):
            action, target_text = plan.get(text, ("add", ""))
            merged = "User deploys with Docker Compose on a Hetzner VPS." if action == "merge" else ""
            decisions.append({"candidate": int(idx), "action": action, "target": short.get(target_text, ""),
                              "text": merged, "reason": "scripted"})
        return {"decisions": decisions}
    return reply


def test_llm_reconcile_add_merge_supersede_drop_end_to_end(mem: Memory, srv: OpenAIServer,
                                                           llm: LLMDistiller) -> None:
    vim = mem.add("User's favourite editor is Vim.", scope=SCOPE, kind="preference")
    compose = mem.add("User deploys with Docker Compose.", scope=SCOPE, kind="fact")
    rex = mem.add("User's dog is named Rex.", scope=SCOPE, kind="fact")
    before_switch = _dt.datetime.now(_dt.timezone.utc)
    srv.reply(extraction(("User switched their favourite editor from Vim to Helix.", "preference"),
                         ("User deploys with Docker Compose on a Hetzner VPS.", "fact"),
                         ("User has a dog named Rex.", "fact"),
                         ("Fleet API tests run with pytest -q.", "fact")))
    prompts: list[str] = []
    srv.reply(_reconcile_by_text({
        "User switched their favourite editor from Vim to Helix.": ("supersede", vim.text),
        "User deploys with Docker Compose on a Hetzner VPS.": ("merge", compose.text),
        "User has a dog named Rex.": ("drop", rex.text)}, prompts))
    res = mem.remember(CODING_CONVERSATION, scope=SCOPE, session="s1", distiller=llm)

    assert srv.count("chat") == 2 and len(prompts) == 1  # extraction + ONE batched reconcile call
    assert prompts[0].count("(similar") == 3  # only candidates with similar memories went to call 2
    assert "Fleet API tests" not in prompts[0]
    new_editor = next(r for r in res.added if "Helix" in r.text)
    assert res.superseded == [(vim.id, new_editor.id)]
    assert [r.id for r in res.merged] == [compose.id]
    assert mem.get(compose.id, scope=compose.scope).text == "User deploys with Docker Compose on a Hetzner VPS."
    assert res.dropped == 1 and not any("Rex" in r.text for r in res.added)
    assert any(r.text == "Fleet API tests run with pytest -q." for r in res.added)
    # supersede keeps history: now the new preference, before the switch the old one
    now_hits = mem.search("favourite editor", scope=SCOPE)
    assert now_hits[0].record.id == new_editor.id and vim.id not in [h.record.id for h in now_hits]
    old_hits = mem.search("favourite editor", scope=SCOPE, as_of=before_switch)
    assert old_hits[0].record.id == vim.id
    assert res.summary is not None and res.summary.text == "Dana fixed the distutils import."
    assert res.usage["calls"] == 2 and res.usage["prompt_tokens"] > 0 and res.usage["completion_tokens"] > 0
    totals = usage_totals(mem)
    assert totals["captures"] == 1 and totals["calls"] == 2
    assert totals["prompt_tokens"] == res.usage["prompt_tokens"]
    assert totals["by_model"]["test-mini"]["completion_tokens"] == res.usage["completion_tokens"]


def test_llm_reconcile_keeps_provenance_and_event_time(mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    vim = mem.add("User's favourite editor is Vim.", scope=SCOPE, kind="preference", sources=["old-1"])
    compose = mem.add("User deploys with Docker Compose.", scope=SCOPE, kind="fact", sources=["old-2"])
    said = [{"role": "user", "id": "u1", "timestamp": "2024-03-04T10:00:00Z",
             "content": "I switched my favourite editor from Vim to Helix last week."},
            {"role": "user", "id": "u2", "timestamp": "2024-03-04T10:02:00Z",
             "content": "We deploy with Docker Compose on a Hetzner VPS now."}]
    srv.reply(extraction(("User switched their favourite editor from Vim to Helix.", "preference"),
                         ("User deploys with Docker Compose on a Hetzner VPS.", "fact")))
    srv.reply(_reconcile_by_text({"User switched their favourite editor from Vim to Helix.": ("supersede", vim.text),
                                  "User deploys with Docker Compose on a Hetzner VPS.": ("merge", compose.text)}, []))
    res = mem.remember(said, scope=SCOPE, session="s2", distiller=llm)
    new = next(r for r in res.added if "Helix" in r.text)
    assert res.superseded == [(vim.id, new.id)]
    assert new.sources == ("u1",) and new.occurred_at == _dt.datetime(2024, 3, 4, 10, 0, tzinfo=_dt.timezone.utc)
    merged = mem.get(compose.id, scope=compose.scope)
    assert [r.id for r in res.merged] == [compose.id] and merged.sources == ("old-2", "u2")


def test_llm_request_uses_structured_output_and_never_sees_secrets(mem: Memory, srv: OpenAIServer,
                                                                   llm: LLMDistiller) -> None:
    msgs = CODING_CONVERSATION + [
        {"role": "user", "content": "The deploy token is in .env, here:"},
        {"role": "tool", "tool_call_id": "x", "content": f"GITHUB_TOKEN={GH_SECRET}\nDEBUG=1"}]
    # a careless model echoes a secret-shaped string back: it is redacted before storage too
    srv.reply(extraction((f"User's GitHub token is {GH_SECRET}.", "fact"), ("User prefers pytest.", "preference"),
                         summary=f"Token {GH_SECRET} was shared."))
    res = mem.remember(msgs, scope=SCOPE, session="s1", distiller=llm)
    body = srv.requests("chat")[0]
    assert body["model"] == "test-mini" and body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert "helpful coding assistant" not in json.dumps(body)  # the agent's system prompt is not sent
    sent = srv.received_text()
    assert SECRET not in sent and GH_SECRET not in sent and "[REDACTED:" in sent
    stored = all_text(mem)
    assert SECRET not in stored and GH_SECRET not in stored
    assert sum(res.redactions.values()) >= 4


def test_llm_summary_is_updated_on_a_second_capture(mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    srv.reply(extraction(summary="Dana fixed the distutils import."))
    first = mem.remember(CODING_CONVERSATION, scope=SCOPE, session="s9", distiller=llm)
    more = CODING_CONVERSATION + [{"role": "user", "content": "Now add a CI job for it."},
                                  {"role": "assistant", "content": "Added .github/workflows/ci.yml."}]
    srv.reply(extraction(summary="Dana fixed the distutils import, then added CI."))
    second = mem.remember(more, scope=SCOPE, session="s9", distiller=llm)
    prompt = srv.requests("chat")[-1]["messages"][-1]["content"]
    assert "Previous summary of this session" in prompt and "Dana fixed the distutils import." in prompt
    assert "Now add a CI job" in prompt and "ModuleNotFoundError" not in prompt  # only the new turns are sent
    assert second.summary.id == first.summary.id
    assert mem.get(first.summary.id, scope=SCOPE).text == "Dana fixed the distutils import, then added CI."
    assert len(mem.list(scope=SCOPE, kind="summary")) == 1
    third = mem.remember(more, scope=SCOPE, session="s9", distiller=llm)  # nothing new: no LLM call at all
    assert third.usage["calls"] == 0 and srv.count("chat") == 2


def test_a_session_label_or_a_provider_error_holding_a_secret_is_queued_and_recorded_redacted(
        mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    """Review: the caller's session label reached usage.jsonl and the queue as given, and so did a provider's
    error text (an endpoint that echoes the key it was sent)."""
    ok = mem.remember(CODING_CONVERSATION[:2], scope=SCOPE, session=f"ci-{GH_SECRET}", distiller=llm)
    srv.fail("chat", status=401, message=f"Incorrect API key provided: {SECRET}")
    down = mem.remember(CODING_CONVERSATION[2:4], scope=SCOPE, session=f"ci-{GH_SECRET}", distiller=llm)
    assert ok.session == down.session == "ci-[REDACTED:github_token]" and down.queued
    assert SECRET not in down.error and "[REDACTED:" in down.error
    entry = queue_for(mem).peek()[0]
    assert SECRET not in json.dumps(entry.data) and GH_SECRET not in json.dumps(entry.data)
    written = [data_of(p) for p in Path(mem.stats().location).rglob("*") if p.is_file()]  # usage.jsonl too
    assert written and not [b for b in written if GH_SECRET.encode() in b or SECRET.encode() in b]


def test_llm_failure_queues_the_capture_and_drain_stores_it(mem: Memory, srv: OpenAIServer,
                                                            llm: LLMDistiller) -> None:
    srv.fail("chat", status=429, code="insufficient_quota")
    # the queue is a file: what goes with the messages is redacted too (metadata, source, tags, message ids)
    res = mem.remember([*CODING_CONVERSATION, {"role": "user", "id": SECRET, "content": "ok"}], scope=SCOPE,
                       session="q1", distiller=llm, metadata={"ticket": f"key {SECRET}"}, source=f"ci {GH_SECRET}",
                       tags=[f"t {GH_SECRET}"])
    assert res.queued and res.error.startswith("quota_exhausted") and res.added == []
    assert res.summary is not None and res.summary.metadata["provisional"] is True  # something stored at once
    assert "can you fix it" in res.summary.text
    assert pending_count(mem) == 1
    entry = queue_for(mem).peek()[0]
    assert entry.data["session"] == "q1" and entry.data["error_kind"] == "quota_exhausted"
    assert SECRET not in json.dumps(entry.data) and GH_SECRET not in json.dumps(entry.data)  # redacted only
    assert "[REDACTED:" in entry.data["metadata"]["ticket"] and "[REDACTED:" in entry.data["source"]
    for status, code, kind in [(401, "invalid_api_key", "invalid_credential"), (500, None, "bad_response")]:
        srv.fail("chat", status=status, code=code)
        other = mem.remember(f"I prefer status {status} pages to be plain.", scope=SCOPE, session=f"q{status}",
                             distiller=llm)
        assert other.queued and other.error.startswith(kind)
    assert pending_count(mem) == 3
    in_flight = queue_for(mem).claim(queue_for(mem).peek()[0].id)  # a retry is distilling it right now
    assert in_flight is not None and len(queue_for(mem).peek()) == 2 and pending_count(mem) == 3
    queue_for(mem).release(in_flight)

    srv.fail("chat", status=429)  # still down: drain stops, the entry stays with its attempt counted
    assert drain_pending(mem, distiller=llm) == 0 and queue_for(mem).peek()[0].attempts == 2
    assert [e.attempts for e in queue_for(mem).peek()] == [2, 0, 0]

    srv.reply(extraction(("User prefers pytest over unittest.", "preference"), summary="Fixed distutils."))
    assert drain_pending(mem, distiller=llm) == 3  # later entries get the default (empty) extraction
    assert pending_count(mem) == 0
    prefs = mem.list(scope=SCOPE, kind="preference")
    assert [p.text for p in prefs] == ["User prefers pytest over unittest."]
    summaries = mem.list(scope=SCOPE, kind="summary", where={"meta.session": "q1"})
    assert len(summaries) == 1 and summaries[0].id == res.summary.id
    assert summaries[0].text == "Fixed distutils." and summaries[0].metadata["provisional"] is False
    # an entry the LLM keeps failing on is finally distilled keyless: the queue never clogs
    queue_for(mem).put({"messages": [{"role": "user", "content": "I prefer short commit messages."}],
                        "scope": SCOPE.as_dict(), "session": "stuck", "attempts": 5})
    calls = srv.count("chat")
    assert drain_pending(mem, distiller=llm) == 1 and srv.count("chat") == calls
    assert "User prefers short commit messages." in [p.text for p in mem.list(scope=SCOPE, kind="preference")]


def test_reconcile_failure_still_keeps_the_candidates(mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    mem.add("User prefers pytest.", scope=SCOPE, kind="preference")
    srv.reply(extraction(("User prefers pytest with the -x flag.", "preference")),
              ScriptedError(429, "rate_limit_exceeded"))
    res = mem.remember("I like pytest -x.", scope=SCOPE, distiller=llm)
    assert not res.queued and res.error.startswith("rate_limited")
    assert [r.text for r in res.added] == ["User prefers pytest with the -x flag."]


def test_json_schema_fallback_for_servers_without_structured_outputs(mem: Memory, srv: OpenAIServer,
                                                                     llm: LLMDistiller) -> None:
    def picky(body: dict[str, Any]) -> Any:
        if body.get("response_format", {}).get("type") == "json_schema":
            return ScriptedError(400, None, "response_format json_schema is not supported by this model")
        return "```json\n" + json.dumps(extraction(("User runs Arch Linux.", "fact"))) + "\n```"
    srv.reply(picky, picky)
    res = mem.remember("I run Arch Linux on my laptop.", scope=SCOPE, distiller=llm)
    assert [r.text for r in res.added] == ["User runs Arch Linux."]
    assert [b["response_format"]["type"] for b in srv.requests("chat")] == ["json_schema", "json_object"]


async def test_aremember_uses_the_async_client(mem: Memory, srv: OpenAIServer, llm: LLMDistiller) -> None:
    srv.reply(extraction(("User prefers tabs over spaces.", "preference")))
    res = await aremember(mem, "I prefer tabs over spaces.", scope=SCOPE, session="a1", distiller=llm)
    assert [r.text for r in res.added] == ["User prefers tabs over spaces."] and res.usage["calls"] == 1
    keyless = await aremember(mem, "I prefer dark roast coffee.", scope=SCOPE, session="a2")
    assert [r.text for r in keyless.added] == ["User prefers dark roast coffee."]


def test_distiller_resolution_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("REMEM_LLM_MODEL", "REMEM_LLM_API_KEY", "REMEM_LLM_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert isinstance(resolve_distiller(), KeylessDistiller)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-tool")
    assert isinstance(resolve_distiller(), KeylessDistiller)  # a stray OpenAI key does not start spending
    monkeypatch.setenv("REMEM_LLM_API_KEY", "k")
    assert llm_settings_from_env() == {"model": "gpt-4o-mini", "base_url": None, "api_key": "k"}
    monkeypatch.setenv("REMEM_LLM_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    d = resolve_distiller()
    assert isinstance(d, LLMDistiller) and d.model == "qwen2.5:7b"
    assert d.llm.base_url == "http://localhost:11434/v1"
    monkeypatch.setenv("REMEM_LLM_MODEL", "off")
    assert isinstance(resolve_distiller(), KeylessDistiller)
    assert isinstance(resolve_distiller("keyless"), KeylessDistiller)


# ====================================================================== audit, queue, test server


def test_audit_reports_duplicates_junk_and_stale(mem: Memory) -> None:
    a = mem.add("User prefers pytest over unittest.", scope=SCOPE, kind="preference")
    b = mem.add("user prefers pytest over unittest", scope=SCOPE, kind="preference", dedupe=False)
    c = mem.add("User really prefers pytest over unittest.", scope=SCOPE, kind="preference", dedupe=False)
    v16 = mem.add("Pinned numpy to 1.26 for the fleet API.", scope=SCOPE, kind="decision")
    mem.add("Pinned numpy to 2.0 for the fleet API.", scope=SCOPE, kind="decision", dedupe=False)
    junk = mem.add("Thanks!", scope=SCOPE)
    blob = mem.add('{"status": "ok", "items": [1, 2, 3]}', scope=SCOPE)
    old = mem.add("User once tried the Zig compiler.", scope=SCOPE, kind="event", importance=4,
                  created_at=_dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(days=400))
    report = audit(mem, SCOPE)
    assert report.total == 8
    assert [sorted(g) for g in report.duplicates] == [sorted([a.id, b.id, c.id])]  # 1.26 vs 2.0 differ
    assert v16.id not in sum(report.duplicates, [])
    assert sorted(report.junk) == sorted([(junk.id, "pleasantry"), (blob.id, "json_blob")])
    assert report.stale == [old.id]
    summary = report.as_dict()
    assert summary["duplicates"] == 2 and summary["junk"] == 2 and summary["stale"] == 1
    assert summary["junk_reasons"] == {"pleasantry": 1, "json_blob": 1}
    assert audit(mem, Scope(tenant="other")).total == 0


def test_pending_queue_is_durable_and_claims_once(tmp_path: Any) -> None:
    q = PendingQueue(tmp_path / "pending")
    first = q.put({"messages": [{"role": "user", "content": "a"}]})
    q.put({"messages": []})
    assert len(PendingQueue(tmp_path / "pending")) == 2  # survives a new instance (another process)
    entry = q.claim(first)
    assert entry is not None and q.claim(first) is None and len(q) == 1
    q.release(entry, "still down")
    assert q.peek()[0].attempts == 1 and q.peek()[0].data["error"] == "still down"
    for e in list(q.claimed()):
        q.done(e)
    assert len(q) == 0 and not list((tmp_path / "pending").glob("*.json"))


def test_openai_server_serves_embeddings_and_errors(srv: OpenAIServer) -> None:
    from remem.core.providers.embedders import OpenAIEmbedder
    from remem.core.types import ProviderError

    emb = OpenAIEmbedder("text-embedding-3-small", base_url=srv.base_url, api_key="k", max_retries=0)
    v1, v2, v3 = emb.embed_documents(["green tea please", "green tea please", "kubernetes cluster"])
    assert len(v1) == 32 and v1 == v2 and v1 != v3 and emb.dim == 32
    assert abs(sum(x * x for x in v1) - 1.0) < 1e-6
    srv.fail("embeddings", status=429, code="insufficient_quota")
    with pytest.raises(ProviderError) as err:
        emb.embed_query("x")
    assert err.value.kind == "quota_exhausted"
    client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=2)
    srv.fail("chat", status=500, times=2)  # the client's own retries get through (retry-after-ms keeps it fast)
    resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert resp.choices[0].message.content == "ok" and srv.count("chat") == 3
    assert srv.count("embeddings") == 2 and srv.headers("chat")[0]["authorization"] == "Bearer k"


def test_server_mode_keeps_the_queue_and_ledger_in_qdrant_not_on_the_app_machine(
        srv: OpenAIServer, llm: LLMDistiller, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two app servers on one Qdrant: a capture queued by one during an LLM outage is drained by the other, and
    neither writes a queue or ledger file of its own (a container that dies loses nothing)."""
    from remem.core.distill.pending import CollectionQueue
    from remem.core.store.backends.qdrant import QdrantClientBackend

    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "app-home"))
    cluster = QdrantClientBackend(":memory:")
    app_a = Memory(backend=cluster, embedder="none")
    srv.fail("chat", status=429, code="insufficient_quota")
    res = app_a.remember(CODING_CONVERSATION, scope=SCOPE, session="srv1", distiller=llm)
    assert res.queued and isinstance(queue_for(app_a), CollectionQueue) and pending_count(app_a) == 1
    app_b = Memory(backend=cluster, embedder="none")  # another app server, same cluster
    assert pending_count(app_b) == 1
    srv.reply(extraction(("User prefers pytest over unittest.", "preference"), summary="Fixed distutils."))
    assert drain_pending(app_b, distiller=llm) == 1 and pending_count(app_a) == 0
    assert [p.text for p in app_a.list(scope=SCOPE, kind="preference")] == ["User prefers pytest over unittest."]
    assert app_a.usage()["calls"] >= 1 and app_a.usage() == app_b.usage()  # one ledger, in the collection
    home = tmp_path / "app-home"
    assert not home.exists() or not [p for p in home.rglob("*") if p.is_file()]
    app_b.close()


def test_remember_reads_role_content_pairs_and_says_when_nothing_is_readable(mem: Memory) -> None:
    """A new user's review: ``("user", "...")`` pairs (LangChain's message-like form) and ``[{"role": "user"}]``
    were stored as nothing, with no error."""
    res = mem.remember([("user", "We deploy the orders service on Tuesdays."), ("assistant", "Got it.")],
                       scope=SCOPE, session="pairs")
    assert [e.text for e in res.episodes] == ["We deploy the orders service on Tuesdays."]
    for unreadable in ([{"role": "user"}], [{"role": "user", "content": None}], [42]):
        with pytest.raises(ValueError, match="user message with no content"):
            mem.remember(unreadable, scope=SCOPE, session="empty")
    # one empty message among others is skipped (and logged): the rest of the capture is kept
    res = mem.remember([{"role": "user"}, {"role": "user", "content": "Staging runs Postgres 16."}], scope=SCOPE,
                       session="mixed")
    assert [e.text for e in res.episodes] == ["Staging runs Postgres 16."]
