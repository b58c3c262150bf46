"""A small wrapper over any OpenAI-compatible chat endpoint: one JSON answer per call, token usage counted.

Distillation needs exactly one thing from an LLM: "here are messages and a JSON schema, give me an object".
This module does that with the official ``openai`` client (sync and async), asks for ``json_schema``
structured output and falls back to ``json_object`` on servers that reject it, and turns every failure into a
:class:`~remem.core.types.ProviderError` with a kind (quota, credential, rate limit, connection, bad response)
so callers can queue the work instead of losing it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .embedders import classify_openai_error
from ..types import ProviderError

DEFAULT_LLM_MODEL = "gpt-4o-mini"
_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)
_OFF = {"", "none", "off", "keyless", "0", "false"}


@dataclass
class Usage:
    """Tokens an LLM reported for one or more calls (what memory costs)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    def add(self, other: "Usage") -> "Usage":
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        return self

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "calls": self.calls}


def llm_settings_from_env(env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """``{model, base_url, api_key}`` when the environment configures a distillation LLM, else None.

    An LLM is used when ``REMEM_LLM_MODEL`` is set (``none``/``off`` disables it) or when ``REMEM_LLM_API_KEY``
    is set (model defaults to ``gpt-4o-mini``). ``OPENAI_API_KEY`` alone does *not* turn it on: a key in the
    environment for other tools should not make every capture start spending tokens.
    """
    env = os.environ if env is None else env
    model = (env.get("REMEM_LLM_MODEL") or "").strip()
    own_key = (env.get("REMEM_LLM_API_KEY") or "").strip()
    if model.lower() in _OFF - {""} or (not model and not own_key):
        return None
    return {
        "model": model or DEFAULT_LLM_MODEL,
        "base_url": (env.get("REMEM_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or "").strip() or None,
        "api_key": own_key or (env.get("OPENAI_API_KEY") or "").strip() or None,
    }


def parse_json_object(content: str | None) -> dict[str, Any]:
    """The JSON object in a model's reply (tolerates a code fence); ``bad_response`` when there is none."""
    if not content or not content.strip():
        raise ProviderError("bad_response", "the model returned no content")
    text = content.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        try:
            data = json.loads(text[start:end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            data = None
    if not isinstance(data, dict):
        raise ProviderError("bad_response", f"the model did not return a JSON object: {content[:200]!r}")
    return data


class ChatLLM:
    """JSON-answering client for an OpenAI-compatible ``/chat/completions`` endpoint (sync + async)."""

    def __init__(self, model: str = DEFAULT_LLM_MODEL, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2, temperature: float | None = 0.0) -> None:
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self._client_args: dict[str, Any] = {"api_key": api_key or "unset", "base_url": base_url,
                                             "timeout": timeout, "max_retries": max_retries}
        self._client: Any = None
        self._aclient: Any = None
        self._schema_ok = True  # flips off when the server rejects json_schema response formats
        self._temperature_ok = True

    # ------------------------------------------------------------------ clients (created lazily: cheap to build)
    def _sync(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(**self._client_args)
        return self._client

    def _async(self) -> Any:
        if self._aclient is None:
            import openai

            self._aclient = openai.AsyncOpenAI(**self._client_args)
        return self._aclient

    # ------------------------------------------------------------------ requests
    def _request(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any], name: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self._schema_ok:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": name, "strict": True, "schema": dict(schema)}}
        else:
            kwargs["response_format"] = {"type": "json_object"}
        if self.temperature is not None and self._temperature_ok:
            kwargs["temperature"] = self.temperature
        return kwargs

    def _retry_without(self, exc: BaseException) -> bool:
        """Adapt once to servers that reject ``json_schema`` or ``temperature`` (HTTP 400); True = retry."""
        import openai

        if not isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError)):
            return False
        msg = str(exc).lower()
        if self._schema_ok and ("response_format" in msg or "json_schema" in msg):
            self._schema_ok = False
            return True
        if self._temperature_ok and "temperature" in msg:
            self._temperature_ok = False
            return True
        return False

    @staticmethod
    def _result(resp: Any) -> tuple[dict[str, Any], Usage]:
        usage = Usage(calls=1)
        if getattr(resp, "usage", None) is not None:
            usage.prompt_tokens = int(resp.usage.prompt_tokens or 0)
            usage.completion_tokens = int(resp.usage.completion_tokens or 0)
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise ProviderError("bad_response", "the response has no choices")
        msg = choices[0].message
        if getattr(msg, "refusal", None):
            raise ProviderError("bad_response", f"the model refused: {msg.refusal}")
        return parse_json_object(msg.content), usage

    def complete_json(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any],
                      name: str = "answer") -> tuple[dict[str, Any], Usage]:
        """One chat call that must answer with a JSON object; raises :class:`ProviderError` on any failure."""
        for _ in range(3):
            try:
                resp = self._sync().chat.completions.create(**self._request(messages, schema, name))
            except ProviderError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                if self._retry_without(exc):
                    continue
                raise classify_openai_error(exc) from exc
            return self._result(resp)
        raise ProviderError("bad_response", "the endpoint rejected every request format")

    async def acomplete_json(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any],
                             name: str = "answer") -> tuple[dict[str, Any], Usage]:
        for _ in range(3):
            try:
                resp = await self._async().chat.completions.create(**self._request(messages, schema, name))
            except ProviderError:
                raise
            except Exception as exc:  # noqa: BLE001
                if self._retry_without(exc):
                    continue
                raise classify_openai_error(exc) from exc
            return self._result(resp)
        raise ProviderError("bad_response", "the endpoint rejected every request format")

    def __repr__(self) -> str:
        return f"ChatLLM(model={self.model!r}, base_url={self.base_url!r})"


__all__ = ["DEFAULT_LLM_MODEL", "ChatLLM", "Usage", "llm_settings_from_env", "parse_json_object"]
