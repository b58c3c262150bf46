"""The stdio MCP server's fast start: answer the handshake at once, load the SDK server only when it is needed.

Claude Code waits for its MCP servers before the first request of a session, and importing the MCP SDK alone
takes most of a second. Yet what it asks first (``initialize``, ``tools/list``, ``prompts/list``, ...) has a fixed
answer. This front answers those from ``data/mcp_manifest.json`` (recorded from the real SDK server, see
:func:`record_manifest`) using nothing but the standard library, and hands the connection to the real server
(:func:`remem.mcp_server.build_server`) on the first message it cannot answer itself, typically the first tool
call. The handoff replays the handshake into the SDK server and drops its replies to what was answered already,
so the client sees one continuous session. The SDK is imported in a background thread once the handshake is
done, at low priority, so a tool call rarely waits for it.

The manifest carries a fingerprint of the files that define the tools; when it does not match (an edited tool,
a remem without the manifest) the front steps aside and the SDK server answers everything.

Run as a script from the plugin folder (``python3 mcp_stdio.py --setup`` / ``--off``) it needs nothing but the
standard library: while remem sets itself up, or when remem is switched off (``REMEM_HOOKS=0``), the plugin's
server still connects and answers (tool calls get a clear error), because Claude Code stops trying a stdio
server whose connection failed for a while, even after the cause is gone.
"""

from __future__ import annotations

import _thread
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable

# Until the handshake is answered this module imports nothing that imports much: json, threading, pathlib and
# typing would together double the time to the first answer (python -S: about 12 ms without them, 35 with).
ROOT = os.path.dirname(os.path.realpath(__file__))
MANIFEST = os.path.join(ROOT, "data", "mcp_manifest.json")
FINGERPRINT_FILES = ("mcp_server.py", "core/tooling.py", "__init__.py")
LISTINGS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
WARM_DELAY = 3.0  # seconds after the handshake before the SDK is imported in the background (a short
# `claude -p` is over by then and never pays for it; a session that lives on gets fast tool calls)


def _json_codec() -> tuple[Callable[[str], Any], Callable[[Any], str]]:
    """(loads, dumps) on the C accelerator of ``json`` (the module itself pulls in ``re`` and ``enum``); the
    module where that accelerator is missing or differs."""
    try:
        import _json

        class _Rules:  # what the C scanner reads off a json.JSONDecoder
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int

            @staticmethod
            def parse_constant(name: str) -> float:
                return float(name.replace("Infinity", "inf"))

        scan = _json.make_scanner(_Rules())
        encode = _json.make_encoder(None, _unencodable, _json.encode_basestring, None, ":", ",", False, False,
                                    True)
        blank = " \t\n\r"

        def loads(text: str) -> Any:
            start = len(text) - len(text.lstrip(blank))
            try:
                obj, end = scan(text, start)
            except StopIteration as exc:
                raise ValueError(f"not JSON at {exc.value}") from None
            if text[end:].strip(blank):
                raise ValueError(f"extra data at {end}")
            return obj

        def dumps(obj: Any) -> str:
            return "".join(encode(obj, 0))

        assert loads(dumps({"a": [1, 2.5, "é", None, True]})) == {"a": [1, 2.5, "é", None, True]}
        return loads, dumps
    except Exception:  # noqa: BLE001 - another Python: the module, at its price
        import json

        return json.loads, lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _sha256() -> Any:
    """The built-in SHA-256 (``hashlib`` loads OpenSSL first, a few ms of the handshake)."""
    for name in ("_sha2", "_sha256"):  # Python 3.12+, 3.10-3.11
        try:
            return __import__(name).sha256()
        except (ImportError, AttributeError):
            continue
    import hashlib

    return hashlib.sha256()


def _unencodable(obj: Any) -> Any:
    raise TypeError(f"{type(obj).__name__} is not JSON")


_loads, _dumps = _json_codec()


def fingerprint(root: str | os.PathLike[str] = ROOT) -> str:
    """What the recorded answers depend on: the tool definitions (``build_server`` in mcp_server.py, the shared
    descriptions in core/tooling.py) and remem's version; not the HTTP transport or anything else."""
    h = _sha256()
    for name in FINGERPRINT_FILES:
        with open(os.path.join(root, name), "rb") as fh:
            data = fh.read()
        if name == "mcp_server.py":
            data = _top_level_block(data, b"def build_server(")
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:24]


def _top_level_block(source: bytes, start: bytes) -> bytes:
    """From the top-level statement beginning with ``start`` to the next top-level one (or the end)."""
    i = source.find(b"\n" + start)
    if i < 0:
        return source
    j = i + 1
    while True:
        j = source.find(b"\n", j + 1)
        if j < 0 or (j + 1 < len(source) and source[j + 1:j + 2] not in b" \n\t)" and source[j + 1:j + 2] != b""):
            return source[i:j if j >= 0 else len(source)]


def load_manifest(path: str | os.PathLike[str] = MANIFEST) -> dict[str, Any] | None:
    """The recorded answers, or None when they are missing or were recorded from other tool definitions."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = _loads(fh.read())
        if data.get("fingerprint") == fingerprint() and isinstance(data.get("versions"), dict):
            return data
    except (OSError, ValueError, AttributeError):
        pass
    return None


# ---------------------------------------------------------------------------------------------- the front
class Front:
    """Reads JSON-RPC lines from fd 0 and answers the fixed ones from the manifest until it must hand off."""

    def __init__(self, manifest: dict[str, Any], build: Callable[[], Any] | None,
                 unavailable: str = "") -> None:
        self.manifest = manifest
        self.build = build
        self.unavailable = unavailable  # with no build: why tool calls cannot run
        self.version: str | None = None
        self.replay: list[bytes] = []          # the handshake, to replay into the SDK server
        self.answered: set[Any] = set()        # ids the SDK server must not answer again
        self.buffer = b""
        self._server: Any = None
        self._ready = _thread.allocate_lock()  # held until the SDK server is built (or failed)
        self._ready.acquire()
        self._error: BaseException | None = None
        self._warming = False
        self._now = _thread.allocate_lock()  # released when a message needs the server: the warm-up stops waiting
        self._now.acquire()

    # -- lines in, lines out
    def _readline(self) -> bytes | None:
        while b"\n" not in self.buffer:
            chunk = os.read(0, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    @staticmethod
    def _send(payload: dict[str, Any]) -> None:
        data = (_dumps(payload) + "\n").encode()
        while data:
            data = data[os.write(1, data):]

    def _answers(self) -> dict[str, Any] | None:
        versions = self.manifest["versions"]
        return versions.get(self.version or "") or versions.get(self.manifest.get("counter_offer", ""))

    def _negotiate(self, requested: Any) -> str:
        if requested in self.manifest["versions"] or (self.manifest.get("any_version") and isinstance(requested, str)):
            return requested
        return self.manifest["counter_offer"]

    @classmethod
    def _fail(cls, mid: Any, code: int, message: str) -> bool:
        cls._send({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}})
        return True

    def handle(self, line: bytes) -> bool:
        """Answer ``line`` if it is part of the fixed handshake; False means: hand off, starting with it.
        Malformed messages get a JSON-RPC error, never an exception: the client must keep its server."""
        try:
            msg = _loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
            return self.build is None and self._fail(None, -32700, "Parse error: not a JSON line")
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return self.build is None and self._fail(None, -32600, "Invalid Request: not a JSON-RPC 2.0 message")
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params")
        if mid is not None and (isinstance(mid, bool) or not isinstance(mid, (str, int, float))):
            return self._fail(None, -32600, "Invalid Request: an id must be a string or a number")
        if not isinstance(method, str):  # a response to nothing the front asked, or no method at all
            return self.build is None
        if mid is not None and params is not None and not isinstance(params, dict):
            return self._fail(mid, -32602, f"Invalid params: {method} takes an object")
        params = params or {}
        if method == "initialize" and mid is not None and self.version is None:
            problem = _initialize_problem(params)
            if problem:
                return self._fail(mid, -32602, f"Invalid params: {problem}")
            self.version = self._negotiate(params["protocolVersion"])
            result = dict(self._answers()["initialize"])  # type: ignore[index]
            result["protocolVersion"] = self.version
            self.replay.append(line)
            self.answered.add(mid)
            self._send({"jsonrpc": "2.0", "id": mid, "result": result})
            return True
        if self.version is None:
            if self.build is None and mid is not None:  # e.g. a newer client's server/discover probe
                return self._fail(mid, -32601, f"{method} is not supported here; use initialize")
            return self.build is None
        if method == "notifications/initialized" and mid is None:
            self.replay.append(line)
            self._warm_later()
            return True
        if method == "ping" and mid is not None:
            self._send({"jsonrpc": "2.0", "id": mid, "result": {}})
            return True
        answers = self._answers() or {}
        cursor = params.get("cursor")
        if method in LISTINGS and mid is not None and cursor is not None and not isinstance(cursor, str):
            return self._fail(mid, -32602, "Invalid params: cursor must be a string")
        if method in LISTINGS and method in answers and mid is not None and not cursor:
            self._send({"jsonrpc": "2.0", "id": mid, "result": answers[method]})
            return True
        if self.build is None:  # nothing to hand off to: say why, and stay connected
            if method == "tools/call" and mid is not None:
                self._send({"jsonrpc": "2.0", "id": mid, "result": {
                    "content": [{"type": "text", "text": self.unavailable}], "isError": True}})
            elif mid is not None:
                self._fail(mid, -32601, self.unavailable)
            return True
        return False

    # -- the real server
    def _warm_later(self) -> None:
        if self._warming:
            return
        self._warming = True
        _thread.start_new_thread(self._warm, (WARM_DELAY,))

    def _warm(self, delay: float = 0.0) -> None:
        """Import the SDK and build the server in the background, at low priority (Linux: per thread)."""
        try:
            if delay:
                self._now.acquire(True, delay)
            if hasattr(os, "setpriority") and hasattr(_thread, "get_native_id"):
                try:
                    os.setpriority(os.PRIO_PROCESS, _thread.get_native_id(), 10)
                except OSError:
                    pass
            if self._server is None:
                self._server = self.build()
        except BaseException as exc:  # noqa: BLE001 - reported at handoff
            self._error = exc
        finally:
            self._ready.release()

    def serve(self) -> int:
        while True:
            line = self._readline()
            if line is None:
                return 0  # the client went away during the handshake
            if not line.strip() or self.handle(line):
                continue
            if self.hand_off(line):
                return 0
            self.handle(line)  # the SDK server could not be built: answered here, with why

    def hand_off(self, pending: bytes) -> bool:
        """Give the connection to the SDK server: fd 0 becomes a pipe fed with the handshake, this message and
        the rest of the real stdin; fd 1 a pipe whose replies to the replayed handshake are dropped. False: the
        server could not be built; the front stays, and tool calls get the reason instead of a dead server."""
        if self._server is None and not self._warming:
            self._warming = True
            self._warm()
        if self._now.locked():  # a warm-up still in its delay: start now, this message waits for it
            self._now.release()
        with self._ready:  # until the warm-up thread has built it
            pass
        if self._error is not None:
            error = self._error
            sys.stderr.write(f"remem mcp: the MCP server could not start: {type(error).__name__}: {error}\n")
            self.build = None
            self.unavailable = (f"remem's MCP server could not start ({type(error).__name__}: "
                                f"{str(error).splitlines()[0][:300] if str(error) else ''}); see its stderr log.")
            return False
        real_in, real_out = os.dup(0), os.dup(1)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.close(in_r)
        os.close(out_w)
        head = b"".join(self.replay) + pending + self.buffer
        import threading

        threading.Thread(target=_pump_in, args=(head, real_in, in_w), daemon=True, name="mcp-in").start()
        threading.Thread(target=_filter_out, args=(out_r, real_out, set(self.answered)), daemon=True,
                         name="mcp-out").start()
        self._server.run()
        return True


def _initialize_problem(params: dict[str, Any]) -> str:
    """What makes ``initialize`` params unacceptable to the SDK server (its -32602 cases), or ''."""
    if not isinstance(params.get("protocolVersion"), str):
        return "initialize needs a protocolVersion string"
    if not isinstance(params.get("capabilities"), dict):
        return "initialize needs a capabilities object"
    info = params.get("clientInfo")
    if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return "initialize needs a clientInfo object with a name and a version"
    return ""


def _pump_in(head: bytes, src: int, dest: int) -> None:
    try:
        _write_all(dest, head)
        while True:
            chunk = os.read(src, 65536)
            if not chunk:
                break
            _write_all(dest, chunk)
    except OSError:
        pass
    finally:
        os.close(dest)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _filter_out(src: int, dest: int, answered: set[Any]) -> None:
    """Copy the SDK server's lines to the real stdout, minus its replies to requests the front answered."""
    buffer = b""
    try:
        while True:
            chunk = os.read(src, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                if answered and _is_reply_to(line, answered):
                    continue
                _write_all(dest, line + b"\n")
    except OSError:
        pass


def _is_reply_to(line: bytes, answered: set[Any]) -> bool:
    try:
        msg = _loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    if not isinstance(msg, dict):
        return False
    mid = msg.get("id")
    if "method" not in msg and isinstance(mid, (str, int, float)) and mid in answered:
        answered.discard(mid)
        return True
    return False


def _exit_at_once(signum: int, frame: Any) -> None:
    os._exit(0)


def bare_manifest(tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Answers for a server with no remem behind it (set-up or off): the handshake and the given tools."""
    init = {"capabilities": {"tools": {"listChanged": False}}, "serverInfo": {"name": "remem", "version": "setup"}}
    answers = {"initialize": init, "tools/list": {"tools": tools or []}}
    return {"versions": {"2025-11-25": answers}, "counter_offer": "2025-11-25", "any_version": True}


def serve(build: Callable[[], Any]) -> int:
    """Serve MCP on stdio: the fast front when the manifest fits, else the SDK server from the start.

    SIGINT/SIGTERM end the process at once: that is how Claude Code closes a stdio server, and it waits for
    the server's exit before it exits itself (a server that lingers adds to every ``claude -p`` turn)."""
    import _signal  # the C module: ``signal`` imports enum

    for sig in (_signal.SIGINT, _signal.SIGTERM):
        try:
            _signal.signal(sig, _exit_at_once)
        except (ValueError, OSError):  # not the main thread, or no such signal here
            pass
    manifest = load_manifest()
    if manifest is None:
        sys.stderr.write("remem mcp: no matching data/mcp_manifest.json; starting the full server\n")
        build().run()
        return 0
    return Front(manifest, build).serve()


# ---------------------------------------------------------------------------------------------- recording
def record_manifest(path: str | os.PathLike[str] = MANIFEST, timeout: float = 60.0) -> dict[str, Any]:
    """Ask the real SDK server (over stdio, in a subprocess) every fixed answer, once per handshake version."""
    import json
    from pathlib import Path

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    code = ("import sys; from remem.mcp_server import build_server, Scope; "
            "build_server(scope=Scope(tenant='manifest')).run()")
    versions: dict[str, Any] = {}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": version, "capabilities": {},
                             "clientInfo": {"name": "remem-manifest", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        lines += [{"jsonrpc": "2.0", "id": 2 + i, "method": m} for i, m in enumerate(LISTINGS)]
        replies = _ask(code, lines, timeout)
        if 1 not in replies or "result" not in replies[1]:
            raise RuntimeError(f"the MCP server did not answer initialize: {replies.get(1)}")
        answers = {"initialize": replies[1]["result"]}
        for i, method in enumerate(LISTINGS):
            if "result" in replies.get(2 + i, {}):
                answers[method] = replies[2 + i]["result"]
        versions[version] = answers
    data = {"fingerprint": fingerprint(), "counter_offer": LATEST_HANDSHAKE_VERSION, "versions": versions}
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", "utf-8")
    return data


def _ask(code: str, lines: list[dict[str, Any]], timeout: float) -> dict[Any, dict[str, Any]]:
    """Send ``lines`` to a server started by ``code`` and collect one reply per request id (then close)."""
    import json
    import subprocess
    import time

    wanted = {m["id"] for m in lines if "id" in m}
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, "REMEM_HOOKS": "0"})
    replies: dict[Any, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(x) + "\n" for x in lines))
        proc.stdin.flush()
        while wanted - set(replies) and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            msg = json.loads(line)
            if "id" in msg and "method" not in msg:
                replies[msg["id"]] = msg
    finally:
        proc.kill()
        proc.wait()
    return replies


SETUP_MESSAGE = ("remem is still setting up its Python environment (see the message at the start of this session); "
                 "its memory tools work in the next session.")
OFF_MESSAGE = "remem is switched off for this process (REMEM_HOOKS=0)."


def installed_server() -> Any:
    """The installed remem's MCP server for this project, for ``--serve``: the script started without
    site-packages (``python -S``: nothing to scan before the handshake), so they are loaded only now, with this
    folder (the plugin, not a package) off the import path."""
    import site

    here = os.path.realpath(ROOT)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    if sys.flags.no_site:
        site.main()
    try:
        from remem.hooks.main import mcp_server
    except ImportError:  # an installed remem from before this entry point
        from remem.hooks.common import project_tenant
        from remem.mcp_server import build_server, server_scope

        return build_server(scope=server_scope(project=project_tenant()))
    return mcp_server()


def main(argv: list[str] | None = None) -> int:
    """``--serve``: the plugin's server (the installed remem behind this front); ``--setup``: the tools are
    listed but answer that remem is being set up; ``--off``: no tools; ``--record``: re-record
    data/mcp_manifest.json after editing a tool."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--serve" in args:
        return serve(installed_server)
    if "--record" in args:
        record_manifest()
        print(f"wrote {MANIFEST}")
        return 0
    if "--off" in args:
        manifest, message = bare_manifest(), OFF_MESSAGE
    else:
        recorded = load_manifest()
        tools = recorded["versions"][recorded["counter_offer"]]["tools/list"]["tools"] if recorded else []
        manifest, message = bare_manifest(tools), SETUP_MESSAGE
    try:
        return Front(manifest, None, message).serve()
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
