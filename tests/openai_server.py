"""A scripted OpenAI-compatible HTTP server for tests (stdlib only: ``http.server`` + a thread).

Real clients (``openai.OpenAI``, ``AsyncOpenAI``, anything speaking the REST API) talk to it over 127.0.0.1:

    with OpenAIServer(embedding_dim=64) as srv:
        srv.reply({"memories": [], "summary": "..."})          # next chat reply (dict -> JSON content)
        srv.reply(lambda req: {...})                             # or computed from the request body
        srv.fail("chat", status=429, code="insufficient_quota")  # next chat request fails like OpenAI does
        client = openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        ...
        srv.count("chat"), srv.requests("chat")[-1]["messages"]

Endpoints: ``POST /v1/chat/completions`` (``response_format`` json_schema/json_object honoured: with no scripted
reply it answers the schema's minimal valid object; a scripted dict reply is checked against the schema's
required keys), ``POST /v1/embeddings`` (deterministic hashed bag-of-words vectors, L2-normalised, dimension
``embedding_dim`` or the request's ``dimensions``), ``GET /v1/models``. Usage tokens are reported (about one token
per four characters, or the ``usage`` a test scripts). Error replies carry ``retry-after-ms: 1`` so a client's
own retries stay fast.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

_WORD_RE = re.compile(r"[a-z0-9]+")

ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request_error"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_exceeded", "rate_limit_exceeded"),
    500: ("server_error", "server_error"),
    503: ("server_error", "overloaded"),
}


@dataclass
class ScriptedError:
    """An error reply: HTTP ``status`` with OpenAI's error body (``code`` e.g. ``insufficient_quota``)."""

    status: int = 500
    code: str | None = None
    message: str | None = None

    def body(self) -> dict[str, Any]:
        etype, default_code = ERROR_TYPES.get(self.status, ("server_error", "server_error"))
        code = self.code or default_code
        if code == "insufficient_quota":
            etype = "insufficient_quota"
        message = self.message or {
            "insufficient_quota": "You exceeded your current quota, please check your plan and billing details.",
            "invalid_api_key": "Incorrect API key provided.",
        }.get(code, f"scripted error {self.status}")
        return {"error": {"message": message, "type": etype, "param": None, "code": code}}


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words vector: texts sharing words are close (cosine), others near-orthogonal."""
    vec = [0.0] * dim
    for word in _WORD_RE.findall(text.lower()):
        h = hashlib.blake2b(word.encode(), digest_size=8).digest()
        idx = int.from_bytes(h[:4], "big") % dim
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


def approx_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return max(1, len(text) // 4)


def minimal_instance(schema: Mapping[str, Any]) -> Any:
    """The smallest value a JSON schema accepts (empty arrays, empty strings, first enum value, 0, False)."""
    if "enum" in schema:
        return schema["enum"][0]
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ == "object":
        props = schema.get("properties") or {}
        return {k: minimal_instance(props.get(k, {})) for k in schema.get("required", list(props))}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False, "null": None}.get(typ, None)


def schema_errors(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Light structural check (types, required keys, enums): enough to catch a test scripting a wrong shape."""
    errs: list[str] = []
    typ = schema.get("type")
    types = typ if isinstance(typ, list) else [typ] if typ else []
    pytypes = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
               "boolean": bool, "null": type(None)}
    if types and not any(isinstance(value, pytypes[t]) for t in types if t in pytypes):
        return [f"{path}: expected {typ}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required", []):
            if key not in value:
                errs.append(f"{path}: missing {key!r}")
        for key, sub in props.items():
            if key in value:
                errs.extend(schema_errors(value[key], sub, f"{path}.{key}"))
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            errs.extend(schema_errors(item, schema["items"], f"{path}[{i}]"))
    return errs


Reply = Any  # dict (JSON content) | str (raw content) | ScriptedError | callable(request_body) -> one of these


class OpenAIServer:
    """Threaded fake of the OpenAI REST API on an ephemeral 127.0.0.1 port; use as a context manager."""

    def __init__(self, *, embedding_dim: int = 64, model: str = "test-model",
                 chat_handler: Callable[[dict[str, Any]], Reply] | None = None, latency: float = 0.0) -> None:
        self.embedding_dim = embedding_dim
        self.model = model
        self.chat_handler = chat_handler
        self.latency = latency
        self._replies: deque[Reply] = deque()
        self._failures: dict[str, deque[ScriptedError]] = {"chat": deque(), "embeddings": deque()}
        self._requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "OpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model",
                                                                 "created": 0, "owned_by": "test"}]})
                else:
                    self._send(404, ScriptedError(404, "not_found", f"no route {self.path}").body())

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, ScriptedError(400, None, "body is not JSON").body())
                    return
                path = self.path.split("?", 1)[0].rstrip("/")
                kind = "chat" if path.endswith("/chat/completions") else \
                    "embeddings" if path.endswith("/embeddings") else None
                if kind is None:
                    self._send(404, ScriptedError(404, "not_found", f"no route {self.path}").body())
                    return
                server._record(kind, body, dict(self.headers))
                if server.latency:
                    time.sleep(server.latency)
                status, payload = server._handle(kind, body)
                self._send(status, payload)

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status >= 400:
                    self.send_header("retry-after-ms", "1")
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    # ------------------------------------------------------------------ scripting
    def reply(self, *replies: Reply) -> "OpenAIServer":
        """Queue chat replies, used in order (then ``chat_handler``, then a minimal schema-valid answer)."""
        with self._lock:
            self._replies.extend(replies)
        return self

    def fail(self, endpoint: str = "chat", *, status: int = 500, code: str | None = None,
             message: str | None = None, times: int = 1) -> "OpenAIServer":
        """The next ``times`` requests to ``endpoint`` (``chat`` or ``embeddings``) fail with this error."""
        with self._lock:
            for _ in range(times):
                self._failures[endpoint].append(ScriptedError(status, code, message))
        return self

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            for q in self._failures.values():
                q.clear()
            self._requests.clear()

    # ------------------------------------------------------------------ inspection
    def _record(self, kind: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self._requests.append((kind, body, headers))

    def requests(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        """Request bodies received (optionally for one endpoint), oldest first."""
        with self._lock:
            return [b for k, b, _ in self._requests if endpoint is None or k == endpoint]

    def headers(self, endpoint: str | None = None) -> list[dict[str, str]]:
        with self._lock:
            return [h for k, _, h in self._requests if endpoint is None or k == endpoint]

    def count(self, endpoint: str | None = None) -> int:
        return len(self.requests(endpoint))

    def received_text(self) -> str:
        """Every request body as one string: for "the server never saw this secret" assertions."""
        with self._lock:
            return "\n".join(json.dumps(b, ensure_ascii=False) for _, b, _ in self._requests)

    # ------------------------------------------------------------------ handlers
    def _handle(self, kind: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            failure = self._failures[kind].popleft() if self._failures[kind] else None
        if failure is not None:
            return failure.status, failure.body()
        if kind == "embeddings":
            return self._embeddings(body)
        return self._chat(body)

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, Any]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            return 400, ScriptedError(400, None, "input must be a non-empty string or array").body()
        dim = int(body.get("dimensions") or self.embedding_dim)
        data = [{"object": "embedding", "index": i, "embedding": hashed_embedding(str(t), dim)}
                for i, t in enumerate(inputs)]
        tokens = sum(approx_tokens(str(t)) for t in inputs)
        return 200, {"object": "list", "data": data, "model": body.get("model", self.model),
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any]:
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return 400, ScriptedError(400, None, "messages must be a non-empty array").body()
        with self._lock:
            reply: Reply = self._replies.popleft() if self._replies else None
        if reply is None and self.chat_handler is not None:
            reply = self.chat_handler
        if callable(reply) and not isinstance(reply, ScriptedError):
            reply = reply(body)
        if isinstance(reply, ScriptedError):
            return reply.status, reply.body()
        usage = None
        if isinstance(reply, tuple):  # (content, {"prompt_tokens": .., "completion_tokens": ..})
            reply, usage = reply
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
        if reply is None:
            reply = minimal_instance(schema) if schema else ({} if fmt.get("type") == "json_object" else "ok")
        if isinstance(reply, (dict, list)):
            if schema is not None and isinstance(reply, dict):
                errs = schema_errors(reply, schema)
                if errs:
                    return 500, ScriptedError(500, "scripted_reply_invalid",
                                              "scripted reply does not match the request schema: "
                                              + "; ".join(errs[:5])).body()
            content = json.dumps(reply)
        else:
            content = str(reply)
        prompt_tokens = (usage or {}).get("prompt_tokens", approx_tokens(body["messages"]))
        completion_tokens = (usage or {}).get("completion_tokens", approx_tokens(content))
        return 200, {
            "id": f"chatcmpl-{len(self._requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": None}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


__all__ = ["OpenAIServer", "ScriptedError", "approx_tokens", "hashed_embedding", "minimal_instance",
           "schema_errors"]
