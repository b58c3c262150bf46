"""A scripted Anthropic Messages API on 127.0.0.1 for driving the real ``claude`` CLI offline (stdlib only).

Claude Code (``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``) sends its whole request here, so a test can read what
the hooks injected into the model's context, and the reply can be plain text or a ``tool_use`` block that makes
Claude Code call a tool (our MCP tools among them):

    with AnthropicServer() as api:
        api.reply(text("noted"))                                        # next main-loop reply
        api.reply(tool_use("mcp__plugin_remem_remem__memory_save", {"text": "..."}), text("saved"))
        api.on(lambda req: ... or None)                                 # computed replies (None: fall through)
        api.requests()                                                  # every /v1/messages body received

Replies stream as SSE (``message_start``, ``content_block_start``, ``content_block_delta``,
``content_block_stop``, ``message_delta``, ``message_stop``) when the request asks for ``stream``, else one JSON
message. A request with no scripted reply gets ``"ok"``. Side requests Claude Code makes without tools (titles,
summaries) are answered with ``"ok"`` too and never consume the script.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from collections import deque
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

Block = dict[str, Any]
Responder = Callable[[dict[str, Any]], "list[Block] | None"]


def find_claude() -> str | None:
    """The real ``claude`` CLI: $REMEM_CLAUDE_BIN, ``claude`` on PATH, or where ``.ci/run`` installs it
    (``npm install --prefix ${REMEM_CI_CACHE:-~/.cache/remem-ci}/claude-code @anthropic-ai/claude-code``)."""
    cache = Path(os.environ.get("REMEM_CI_CACHE") or Path.home() / ".cache" / "remem-ci")
    for candidate in (os.environ.get("REMEM_CLAUDE_BIN"), shutil.which("claude"),
                      str(cache / "claude-code" / "node_modules" / ".bin" / "claude")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, arguments: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": arguments}


def request_text(body: dict[str, Any]) -> str:
    """Everything in a request a model would read (system prompt and every message), as one string."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("text", "content"):
                if key in value:
                    walk(value[key])

    walk(body.get("system"))
    walk(body.get("messages"))
    return "\n".join(parts)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of the tool_result blocks in the request's last user message."""
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user" or not isinstance(messages[-1].get("content"), list):
        return []
    out = []
    for block in messages[-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, list):
                content = "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
            out.append(str(content or ""))
    return out


def is_main_loop(body: dict[str, Any]) -> bool:
    """The agent's own turn (it offers tools), not a side request such as a title or a summary."""
    return bool(body.get("tools"))


class AnthropicServer:
    """Threaded fake of ``POST /v1/messages`` on an ephemeral port; use as a context manager."""

    def __init__(self, model: str = "claude-test") -> None:
        self.model = model
        self._script: deque[list[Block]] = deque()
        self._responders: list[Responder] = []
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ scripting
    def reply(self, *blocks: Block) -> None:
        """Queue one reply (its content blocks) for the next main-loop request."""
        with self._lock:
            self._script.append(list(blocks))

    def on(self, responder: Responder) -> None:
        """A computed reply, tried before the script; returning None falls through."""
        with self._lock:
            self._responders.append(responder)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._responders.clear()
            self._requests.clear()

    def requests(self, main_only: bool = True) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self._requests if not main_only or is_main_loop(r)]

    def _answer(self, body: dict[str, Any]) -> list[Block]:
        with self._lock:
            self._requests.append(body)
            responders = list(self._responders)
        for responder in responders:
            blocks = responder(body)
            if blocks is not None:
                return blocks
        if is_main_loop(body):
            with self._lock:
                if self._script:
                    return self._script.popleft()
        return [text("ok")]

    # ------------------------------------------------------------------ wire format
    def _message(self, blocks: list[Block], body: dict[str, Any]) -> dict[str, Any]:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                "model": body.get("model") or self.model, "content": blocks, "stop_reason": stop,
                "stop_sequence": None, "usage": {"input_tokens": max(1, len(request_text(body)) // 4),
                                                 "output_tokens": 5}}

    def _events(self, message: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
        start = {**message, "content": [], "stop_reason": None,
                 "usage": {**message["usage"], "output_tokens": 1}}
        yield "message_start", {"type": "message_start", "message": start}
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                yield "content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}}
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": block["text"]}}
            else:
                yield "content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {**block, "input": {}}}
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": json.dumps(block["input"])}}
            yield "content_block_stop", {"type": "content_block_stop", "index": i}
        yield "message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                "usage": {"output_tokens": message["usage"]["output_tokens"]}}
        yield "message_stop", {"type": "message_stop"}

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "AnthropicServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - connectivity probes
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0].rstrip("/")
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": max(1, len(request_text(body)) // 4)})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                message = server._message(server._answer(body), body)
                if not body.get("stream"):
                    self._json(200, message)
                    return
                chunks = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                                  for name, data in server._events(message))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(chunks)))
                self.end_headers()
                self.wfile.write(chunks)

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="anthropic-test-server", daemon=True).start()
        return self

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "AnthropicServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


__all__ = ["AnthropicServer", "find_claude", "is_main_loop", "request_text", "text", "tool_results", "tool_use"]
