"""``remem-hook``: the one entry point Claude Code runs for every remem hook (and the /remem:memory command).

    remem-hook UserPromptSubmit|SessionStart|Stop|PreCompact|SessionEnd   < hook JSON on stdin
    remem-hook drain                     hand spooled captures to remem (started detached by capture hooks)
    remem-hook memory last|search|save|forget|list ...   the /remem:memory command's backend
    remem-hook mcp                       the remem MCP server, scoped to this project

A hook never breaks the session: whatever goes wrong (malformed stdin, missing transcript, unreadable store,
full disk, timeouts) it exits 0 with one line on stderr and a log line under ``$REMEM_HOME/logs``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Sequence

from remem.core.config import PRIVATE_UMASK

from .common import HookInput, log, project_tenant, warn

MAX_STDIN_BYTES = 4_000_000
EVENTS = ("UserPromptSubmit", "SessionStart", "Stop", "PreCompact", "SessionEnd")
_BY_LOWER = {e.lower(): e for e in EVENTS}


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None or stream.isatty():
        return ""
    data = stream.buffer.read(MAX_STDIN_BYTES) if hasattr(stream, "buffer") else stream.read(MAX_STDIN_BYTES)
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def run_hook(event_arg: str | None, background: bool = False) -> int:
    """One hook event in this process: stdin in, :func:`answer` out, then the deferred bookkeeping."""
    out = answer(event_arg, _read_stdin(), background)
    if out:
        sys.stdout.write(out)
    sys.stdout.flush()
    from . import after

    after.run()
    return 0


def answer(event_arg: str | None, raw: str, background: bool = False) -> str:
    """What a hook event prints for Claude Code (a JSON line, or nothing), from the hook's stdin text. Never
    raises. The same in the hook's own process and in the service (:mod:`remem.hooks.served`).

    ``background`` (``--background``: the launcher ran it detached, Claude Code is not waiting for it) leaves
    out the routine "done" log line: writing it means loading the redactor, CPU the session's start-up needs
    more (a failure is still logged)."""
    event = _BY_LOWER.get((event_arg or "").lower())
    inp = HookInput.parse(raw, event=event)
    event = _BY_LOWER.get(inp.event.lower(), inp.event) if inp.event else ""
    if not raw.strip():
        warn(event or "hook", "empty stdin; nothing to do")
        return ""
    if not inp.raw:
        warn(event or "hook", "stdin is not a JSON object with the hook's fields (an empty one, or no JSON at "
                              "all); nothing to do")
        return ""
    out = ""
    try:
        _take_up_pending(event)
        if event == "UserPromptSubmit":
            from .recall import recall

            text, message = recall(inp)
            message = "\n".join(m for m in (setup_notice(), message) if m)
            text = _without(text, message)
            payload: dict = {}
            if text:
                payload["hookSpecificOutput"] = {"hookEventName": "UserPromptSubmit", "additionalContext": text}
            if message:
                payload["systemMessage"] = message  # for the person: Claude Code shows it to the user only
            if payload:
                out = _json_line(payload)
        elif event == "SessionStart":
            from .session_start import session_start

            text = session_start(inp)
            if text:
                out = _json_line({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})
        elif event in ("Stop", "PreCompact", "SessionEnd"):
            from .capture import capture

            result = capture(inp)
            if result.get("status") != "nothing new" or result.get("note") or result.get("drainer"):
                # (the routine "nothing new", e.g. SessionEnd after the Stop that captured the turn, writes
                # nothing at all: no redactor to load in a process that has nothing to redact)
                log(event.lower(), result.get("status", ""), **{k: v for k, v in result.items() if k != "status"})
        else:
            warn(event or "hook", f"unknown hook event {event or '(none)'!r}; nothing to do")
    except Exception as exc:  # noqa: BLE001 - the session goes on without memory
        warn(event, f"{type(exc).__name__}: {str(exc)[:300]}")
    if event == "UserPromptSubmit" or (event == "SessionStart" and not background):
        from . import after
        from .common import elapsed

        # its ms: this hook's whole time until its answer is out (bench_claude_code reads it)
        after.defer(log, event.lower(), "done", ms=round(elapsed() * 1000, 1))
    return out


def _take_up_pending(event: str) -> None:
    """Turns kept while remem set itself up (:mod:`remem.hooks.pending`): a capture takes them up first, in
    order; a prompt or a session start after its answer is out (never on the prompt's path)."""
    from . import pending

    if not pending.waiting():
        return
    if event in ("Stop", "PreCompact", "SessionEnd"):
        pending.take_up()
    else:
        from .after import defer

        defer(pending.take_up)


def setup_notice() -> str:
    """Once after the plugin's own setup finished: say so to the person (:func:`remem.hooks.bootstrap.ready_notice`)."""
    from pathlib import Path

    from .callenv import getenv

    data = (getenv("CLAUDE_PLUGIN_DATA") or "").strip()
    if not data:
        return ""
    try:
        from .bootstrap import ready_notice

        return ready_notice(Path(data))
    except Exception:  # noqa: BLE001 - a notice is never worth a broken prompt
        return ""


def _without(context: str, message: str) -> str:
    """The model's context without what is meant for the person only (an offer, a setup notice)."""
    for line in message.splitlines():
        if line and line in context:
            context = context.replace(line, "")
    return context.strip() and context.strip("\n")


def _json_line(payload: dict) -> str:
    return json.dumps(payload, ensure_ascii=False) + "\n"


def run_mcp(argv: Sequence[str]) -> int:
    """The remem MCP server with this project's tenant, so explicit tools and hooks share one memory.

    Served through the fast stdio front (:mod:`remem.mcp_stdio`): Claude Code holds the session's first request
    until the server has listed its tools, and the front does that without importing the MCP SDK. (The plugin's
    launcher starts that front as a script, ``python -S mcp_stdio.py --serve``, which comes back here through
    :func:`mcp_server` only when a tool is called.)"""
    if argv:  # extra options: the full command line
        from remem.cli import main as cli_main

        tenant = project_tenant()
        return cli_main(["mcp", *(["--project", tenant] if tenant is not None else ["--global"]), *argv])
    from remem.mcp_stdio import serve

    return serve(mcp_server)


def mcp_server() -> object:
    """The SDK server scoped to this project's tenant."""
    from remem.mcp_server import build_server, server_scope

    tenant = project_tenant()
    return build_server(scope=server_scope(project=tenant, global_space=tenant is None))


def dispatch(argv: Sequence[str]) -> int:
    cmd = argv[0] if argv else ""
    if os.environ.get("REMEM_HOOK_DETACHED") == "1":
        try:  # the launcher let Claude Code go on: outlive it, whatever it does to its process group
            os.setsid()
        except OSError:
            pass
    if cmd == "drain":
        from .capture import drain

        try:
            drain()
        except Exception as exc:  # noqa: BLE001
            log("drain", f"{type(exc).__name__}: {exc}")
        return 0
    if cmd == "memory":
        from .memory_cmd import main as memory_main, split_arguments

        return memory_main(split_arguments(list(argv[1:])))
    if cmd == "pending":
        from .pending import take_up

        take_up()
        return 0
    if cmd == "mcp":
        return run_mcp(argv[1:])
    return run_hook(cmd or None, background="--background" in argv[1:])


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point. As a program it ends with ``os._exit`` so an abandoned (timed-out)
    worker thread or a slow interpreter teardown cannot keep Claude Code waiting."""
    as_program = argv is None
    args = list(sys.argv[1:] if argv is None else argv)
    if as_program:
        os.umask(PRIVATE_UMASK)  # our own process: state, spool, logs and an in-process store are private
    try:
        code = dispatch(args)
    except BaseException as exc:  # noqa: BLE001 - even SystemExit/KeyboardInterrupt: exit 0 for hooks
        if args and args[0] in ("memory", "mcp"):
            raise
        warn("hook", f"{type(exc).__name__}: {str(exc)[:300]}")
        code = 0
    if as_program and not (args and args[0] in ("memory", "mcp")):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
