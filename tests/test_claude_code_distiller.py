"""REMEM_DISTILLER=claude-code: captures distilled by a headless ``claude -p`` (the real CLI) against a fake
Anthropic API on 127.0.0.1, into a real store. The fake sees the request, answers with the StructuredOutput
tool call Claude Code's ``--json-schema`` asks for, or with something that is not JSON at all.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from anthropic_server import AnthropicServer, find_claude, request_text, text, tool_use
from remem import Scope
from remem.core.distill.claude_code import ClaudeCodeDistiller

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = find_claude()
pytestmark = pytest.mark.skipif(CLAUDE is None, reason="the claude CLI is not installed (.ci/run installs it with "
                                "npm; or set REMEM_CLAUDE_BIN)")
CONVERSATION = [
    {"role": "user", "content": "Which package manager should this repo use? I really prefer uv over poetry."},
    {"role": "assistant", "content": "Decision: the repo switches from poetry to uv, because uv resolves in "
                                     "seconds and you prefer it. I converted pyproject.toml and removed poetry.lock."},
]
EXTRACTED = {"memories": [{"text": "User prefers uv over poetry for Python dependency management",
                           "kind": "preference", "tags": ["python", "tooling"], "importance": 8,
                           "entities": [], "relations": []},
                          {"text": "The repo switched from poetry to uv because uv resolves in seconds",
                           "kind": "decision", "tags": ["python"], "importance": 7,
                           "entities": [], "relations": []}],
             "summary": "The user chose uv over poetry; pyproject.toml was converted and poetry.lock removed."}


@pytest.fixture(scope="module")
def api() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        yield server


@pytest.fixture
def claude_env(api: AnthropicServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AnthropicServer:
    """The environment the child ``claude -p`` inherits: the fake API, a temporary HOME, our REMEM_HOME."""
    api.reset()
    (tmp_path / "home").mkdir()
    for key, value in {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "test", "HOME": str(tmp_path / "home"),
                       "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "REMEM_HOME": str(tmp_path / "remem-home"),
                       "REMEM_CLAUDE_BIN": str(CLAUDE)}.items():
        monkeypatch.setenv(key, value)
    for key in ("REMEM_DISTILLER", "REMEM_CLAUDE_DISTILL_ARGS", "REMEM_CLAUDE_DISTILL_DAILY"):
        monkeypatch.delenv(key, raising=False)
    return api


def structured(reply: dict[str, Any]):  # noqa: ANN201
    """Answer the distillation request with the StructuredOutput tool call, then a closing text."""
    def respond(req: dict[str, Any]) -> list[dict[str, Any]] | None:
        tools = [t.get("name") for t in req.get("tools") or []]
        last = req["messages"][-1]
        answered = isinstance(last.get("content"), list) and any(
            b.get("type") == "tool_result" for b in last["content"] if isinstance(b, dict))
        if "StructuredOutput" in tools and not answered:
            return [tool_use("StructuredOutput", reply)]
        return [text("done")] if answered else None
    return respond


def distil_requests(api: AnthropicServer) -> list[dict[str, Any]]:
    return [r for r in api.requests(main_only=False)
            if any(t.get("name") == "StructuredOutput" for t in r.get("tools") or [])]


def test_the_reply_becomes_memories(claude_env: AnthropicServer, mem: Any) -> None:
    claude_env.on(structured(EXTRACTED))
    result = mem.remember(CONVERSATION, scope=Scope(tenant="proj"), session="s1", distiller=ClaudeCodeDistiller())
    reqs = distil_requests(claude_env)
    assert reqs, "claude -p made no distillation request"
    req = reqs[0]
    assert "haiku" in req["model"]                                   # the small model
    schema = next(t for t in req["tools"] if t["name"] == "StructuredOutput")["input_schema"]
    assert set(schema["required"]) == {"memories", "summary"}        # the extraction schema, as --json-schema
    sent = request_text(req)
    assert "I really prefer uv over poetry" in sent and "long-term memory" in sent
    assert not [t for t in req["tools"] if t["name"] != "StructuredOutput"]   # no tools, no MCP servers
    texts = {r.text: r for r in mem.list(scope=Scope(tenant="proj"), limit=20)}
    assert "User prefers uv over poetry for Python dependency management" in texts
    pref = texts["User prefers uv over poetry for Python dependency management"]
    assert pref.kind == "preference" and pref.metadata["distiller"] == "claude-code:haiku"
    assert result.summary is not None and "uv over poetry" in result.summary.text
    assert result.usage["calls"] >= 1 and not result.queued


def test_a_malformed_reply_loses_nothing(claude_env: AnthropicServer, mem: Any) -> None:
    claude_env.on(lambda req: [text("Sure! Here are some memories: uv, poetry. (not JSON)")])
    result = mem.remember(CONVERSATION, scope=Scope(tenant="proj"), session="s2", distiller=ClaudeCodeDistiller())
    assert distil_requests(claude_env)                                # it was asked
    stored = mem.list(scope=Scope(tenant="proj"), limit=20)
    text_all = "\n".join(r.text for r in stored)
    assert "uv" in text_all and "poetry" in text_all                  # the keyless distiller took over
    assert any(r.kind == "summary" for r in stored) and not result.queued
    assert any(r.metadata.get("fallback") == "keyless" for r in stored if r.kind != "summary")


def test_the_daily_budget_stops_calls_and_falls_back(claude_env: AnthropicServer, mem: Any) -> None:
    claude_env.on(structured(EXTRACTED))
    distiller = ClaudeCodeDistiller(daily_calls=1)
    mem.remember(CONVERSATION, scope=Scope(tenant="proj"), session="s3", distiller=distiller)
    asked = len(distil_requests(claude_env))
    mem.remember([{"role": "user", "content": "Also: we always run the test suite with pytest -x before pushing."}],
                 scope=Scope(tenant="proj"), session="s4", distiller=distiller)
    assert len(distil_requests(claude_env)) == asked                   # today's one call is spent
    assert any("pytest -x" in r.text for r in mem.list(scope=Scope(tenant="proj"), limit=20))
    budget = Path(os.environ["REMEM_HOME"]) / "distill" / "claude-code-budget.json"
    assert json.loads(budget.read_text())["calls"] == 1 and budget.stat().st_mode & 0o777 == 0o600


def test_the_child_run_never_fires_remem_hooks(claude_env: AnthropicServer, mem: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with the remem plugin loaded into the child (--plugin-dir), its hooks and MCP server stay silent."""
    monkeypatch.setenv("REMEM_CLAUDE_DISTILL_ARGS", f"--plugin-dir {ROOT}")
    monkeypatch.setenv("REMEM_PYTHON", sys.executable)
    claude_env.on(structured(EXTRACTED))
    mem.remember(CONVERSATION, scope=Scope(tenant="proj"), session="s5", distiller=ClaudeCodeDistiller.from_env())
    reqs = distil_requests(claude_env)
    assert reqs and all("remem recalled" not in request_text(r) for r in reqs)
    assert all(not t["name"].startswith("mcp__") for r in reqs for t in r["tools"])
    assert not (Path(os.environ["REMEM_HOME"]) / "logs" / "hooks.log").exists()


def test_the_drainer_batches_a_session_into_one_call(claude_env: AnthropicServer, tmp_path: Path,
                                                     store_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two Stops and a SessionEnd of one session: held until the session ends, then one `claude -p` call."""
    import subprocess

    home = Path(os.environ["REMEM_HOME"])
    home.mkdir(exist_ok=True)
    os.rename(store_factory("none"), home / "store")
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    claude_env.on(structured(EXTRACTED))
    env = {**os.environ, "REMEM_DISTILLER": "claude-code", "REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none",
           "REMEM_PYTHON": sys.executable, "REMEM_HOOK_DRAIN": "inline", "REMEM_HOOK_DETACH": "0"}

    def hook(event: str, final: str) -> None:
        payload = {"hook_event_name": event, "session_id": "batch-1", "transcript_path": "", "cwd": str(proj),
                   "last_assistant_message": final, "reason": "other"}
        subprocess.run([str(ROOT / "hooks" / "remem-hook"), event], input=json.dumps(payload), text=True, env=env,
                       capture_output=True, timeout=300, check=True)

    hook("Stop", "Decision: the repo switches from poetry to uv, because uv resolves in seconds.")
    hook("Stop", "I converted pyproject.toml and removed poetry.lock; the tests pass with uv run pytest.")
    assert len(list((home / "hooks" / "spool").glob("*.json"))) == 2   # held: the session goes on
    assert not distil_requests(claude_env)
    hook("SessionEnd", "")
    assert not list((home / "hooks" / "spool").glob("*.json"))
    reqs = distil_requests(claude_env)
    assert len(reqs) == 1                                                # one call for the whole session
    sent = request_text(reqs[0])
    assert "poetry to uv" in sent and "removed poetry.lock" in sent
