"""Distillation with the Claude the user already has: a headless ``claude -p`` call per capture, no API key.

Opt-in with ``REMEM_DISTILLER=claude-code`` (or ``distiller="claude-code"``). It is the LLM distiller
(:class:`~remem.core.distill.llm_distiller.LLMDistiller`: same prompts, same extraction and reconciliation
schemas, same parsing) with the OpenAI-compatible client replaced by the ``claude`` CLI:

    claude -p --model haiku --output-format json --json-schema SCHEMA --system-prompt ... --tools ""
           --strict-mcp-config --mcp-config '{"mcpServers":{}}' --no-session-persistence   < conversation

The child run never fires remem's own hooks or MCP server (``REMEM_HOOKS=0`` in its environment, no MCP
config, no tools) and leaves no transcript behind. Calls are counted against a daily budget
(``REMEM_CLAUDE_DISTILL_DAILY``, default 40, in ``$REMEM_HOME/distill/claude-code-budget.json``). On any failure,
a missing CLI, a timeout, a spent budget or a reply that is not the JSON asked for, the capture is distilled by
the keyless distiller instead, so nothing is lost and nothing waits in a queue.

Settings: ``REMEM_CLAUDE_BIN`` (default ``claude`` on PATH), ``REMEM_CLAUDE_DISTILL_MODEL`` (default ``haiku``),
``REMEM_CLAUDE_DISTILL_TIMEOUT`` (seconds, default 120), ``REMEM_CLAUDE_DISTILL_MAX_USD`` (per call, default
0.05), ``REMEM_CLAUDE_DISTILL_ARGS`` (extra CLI arguments, shell-quoted).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import remem_home
from ..providers.llm import Usage, parse_json_object
from ..types import ProviderError
from .candidates import Distillation
from .conversation import Turn
from .keyless import KeylessDistiller
from .llm_distiller import LLMDistiller

log = logging.getLogger("remem.distill")

DEFAULT_MODEL = "haiku"
DEFAULT_DAILY_CALLS = 40
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_USD = "0.05"
BUDGET_FILE = "claude-code-budget.json"
_BUDGET_LOCK = threading.Lock()


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


class DailyBudget:
    """How many ``claude -p`` calls are left today (one small 0600 file; a lock across processes)."""

    def __init__(self, limit: int, path: Path | None = None) -> None:
        self.limit = limit
        self.path = path or remem_home() / "distill" / BUDGET_FILE

    def take(self) -> bool:
        """Count one call if the budget allows it; False when today's calls are spent."""
        today = _dt.date.today().isoformat()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with _BUDGET_LOCK, open(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600), "r+", encoding="utf-8") as fh:
            try:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            except (ImportError, OSError):
                pass
            try:
                data = json.loads(fh.read() or "{}")
            except ValueError:
                data = {}
            used = int(data.get("calls", 0)) if data.get("date") == today else 0
            if used >= self.limit:
                return False
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps({"date": today, "calls": used + 1}))
            return True


class ClaudeCodeLLM:
    """``complete_json`` (the one thing distillation asks of an LLM) answered by a headless ``claude -p``."""

    def __init__(self, model: str = DEFAULT_MODEL, *, executable: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 daily_calls: int = DEFAULT_DAILY_CALLS, max_usd: str = DEFAULT_MAX_USD,
                 extra_args: Sequence[str] = (), budget: DailyBudget | None = None) -> None:
        self.model = model
        self.executable = executable
        self.timeout = timeout
        self.max_usd = max_usd
        self.extra_args = list(extra_args)
        self.budget = budget or DailyBudget(daily_calls)
        self.base_url = "claude-code"

    def command(self, system: str, schema: Mapping[str, Any]) -> list[str]:
        exe = self.executable or shutil.which("claude")
        if not exe:
            raise ProviderError("connection", "the claude CLI is not on PATH (set REMEM_CLAUDE_BIN)")
        return [exe, "-p", "--model", self.model, "--output-format", "json", "--json-schema", json.dumps(schema),
                "--system-prompt", system, "--tools", "", "--strict-mcp-config", "--mcp-config",
                '{"mcpServers":{}}', "--no-session-persistence", "--max-budget-usd", str(self.max_usd),
                *self.extra_args]

    def complete_json(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any],
                      name: str = "answer") -> tuple[dict[str, Any], Usage]:
        system = "\n\n".join(str(m["content"]) for m in messages if m.get("role") == "system")
        prompt = "\n\n".join(str(m["content"]) for m in messages if m.get("role") != "system")
        cmd = self.command(system, schema)
        if not self.budget.take():
            raise ProviderError("quota", f"today's {self.budget.limit} claude -p distillation calls are spent")
        env = {**os.environ, "REMEM_HOOKS": "0"}  # the child must never run remem's hooks or MCP server
        try:
            proc = subprocess.run(cmd, input=prompt, capture_output=True, text=True, timeout=self.timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise ProviderError("connection", f"claude -p did not answer within {self.timeout:g}s") from exc
        except OSError as exc:
            raise ProviderError("connection", f"could not run claude: {exc}") from exc
        return self.parse(proc.stdout, proc.returncode, proc.stderr)

    @staticmethod
    def parse(stdout: str, returncode: int = 0, stderr: str = "") -> tuple[dict[str, Any], Usage]:
        """The structured output of a ``--output-format json`` run, and its token usage."""
        try:
            result = json.loads(stdout) if stdout.strip() else None
        except ValueError:
            result = None
        if not isinstance(result, dict):
            raise ProviderError("bad_response", f"claude -p exited {returncode} without a JSON result: "
                                                f"{(stderr or stdout)[-300:]!r}")
        raw_usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        usage = Usage(prompt_tokens=int(raw_usage.get("input_tokens") or 0),
                      completion_tokens=int(raw_usage.get("output_tokens") or 0), calls=1)
        if result.get("is_error"):
            raise ProviderError("bad_response", f"claude -p failed: {str(result.get('result'))[:300]}")
        data = result.get("structured_output")
        if not isinstance(data, dict):
            data = parse_json_object(result.get("result") if isinstance(result.get("result"), str) else None)
        return data, usage

    async def acomplete_json(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any],
                             name: str = "answer") -> tuple[dict[str, Any], Usage]:
        return await asyncio.to_thread(self.complete_json, messages, schema, name)


class ClaudeCodeDistiller(LLMDistiller):
    """The LLM distiller over ``claude -p``; falls back to the keyless distiller whenever a call fails."""

    def __init__(self, model: str | None = None, *, executable: str | None = None, timeout: float | None = None,
                 daily_calls: int | None = None, max_usd: str | None = None, extra_args: Sequence[str] | None = None,
                 max_input_tokens: int = 6000, max_memories: int = 20, neighbours: int = 3) -> None:
        """Every setting not given comes from the environment (see the module docstring), then the defaults."""
        env = os.environ
        llm = ClaudeCodeLLM(
            model or env.get("REMEM_CLAUDE_DISTILL_MODEL") or DEFAULT_MODEL,
            executable=executable or env.get("REMEM_CLAUDE_BIN") or None,
            timeout=timeout if timeout is not None else _env_number("REMEM_CLAUDE_DISTILL_TIMEOUT", DEFAULT_TIMEOUT),
            daily_calls=daily_calls if daily_calls is not None else
            int(_env_number("REMEM_CLAUDE_DISTILL_DAILY", DEFAULT_DAILY_CALLS)),
            max_usd=max_usd or env.get("REMEM_CLAUDE_DISTILL_MAX_USD") or DEFAULT_MAX_USD,
            extra_args=extra_args if extra_args is not None else shlex.split(env.get("REMEM_CLAUDE_DISTILL_ARGS", "")))
        super().__init__(llm=llm,  # type: ignore[arg-type]
                         max_input_tokens=max_input_tokens, max_memories=max_memories, neighbours=neighbours)
        self.name = f"claude-code:{llm.model}"
        self.keyless = KeylessDistiller()

    @classmethod
    def from_env(cls, **kwargs: Any) -> "ClaudeCodeDistiller":  # type: ignore[override]
        return cls(**kwargs)

    def _fallback(self, turns: Sequence[Turn], exc: BaseException) -> Distillation:
        """The keyless distillation of the same turns; the pipeline writes the session summary (keyless too)."""
        log.warning("claude -p distillation failed (%s); distilling keyless instead", exc)
        dist = self.keyless.distill(list(turns))
        for cand in dist.candidates:
            cand.metadata = {**cand.metadata, "fallback": "keyless"}
        return Distillation(candidates=dist.candidates, summary=None)

    def extract(self, turns: Sequence[Turn], previous_summary: str | None = None) -> Distillation:
        try:
            return super().extract(turns, previous_summary)
        except Exception as exc:  # noqa: BLE001 - any failure: the keyless distiller, never a lost capture
            return self._fallback(turns, exc)

    async def aextract(self, turns: Sequence[Turn], previous_summary: str | None = None) -> Distillation:
        try:
            return await super().aextract(turns, previous_summary)
        except Exception as exc:  # noqa: BLE001
            return self._fallback(turns, exc)

    def __repr__(self) -> str:
        return f"ClaudeCodeDistiller(model={self.model!r})"


def wants_claude_code(value: str | None = None) -> bool:
    """Whether ``value`` (default ``REMEM_DISTILLER``) asks for this distiller."""
    value = (os.environ.get("REMEM_DISTILLER", "") if value is None else value).strip().lower()
    return value in ("claude-code", "claude_code", "claude")


__all__ = ["ClaudeCodeDistiller", "ClaudeCodeLLM", "DailyBudget", "wants_claude_code"]
