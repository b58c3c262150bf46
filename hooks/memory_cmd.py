"""The /remem:memory command's backend: ``remem-hook memory last|search|save|forget|list`` for this project.

It works without the MCP server (the slash command runs it through Bash) and shows what the UserPromptSubmit
hook injected for the last prompt, which only the hooks know.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import time
from typing import Sequence

from .common import env_flag, project_tenant, scope_label

USAGE = ("remem-hook memory {last | search QUERY | save TEXT [--kind K] | forget ID | list [N] | import | status | "
         "index PATH... | ask QUESTION}")


def _open():  # noqa: ANN202
    from .capture import open_memory

    return open_memory(time.monotonic() + 10)


def cmd_last(tenant: str | None) -> str:
    from .recall import last_recall

    data = last_recall(tenant)
    if not data:
        return f"No prompt in {scope_label(tenant)} has been through remem recall yet."
    when = _dt.datetime.fromtimestamp(float(data.get("at", 0))).strftime("%Y-%m-%d %H:%M:%S")
    head = (f"Last recall in {scope_label(tenant)} at {when} (session {data.get('session') or '?'}, "
            f"{data.get('ms', '?')} ms): status {data.get('status')}, {data.get('memories', 0)} memories injected.")
    body = data.get("context") or "(nothing was injected)"
    return f"{head}\n{body}"


def cmd_forget(mem, text: str, scope) -> str:  # noqa: ANN001
    """Forget by id; words that are no id of this project's: the memories they match, to choose an id from
    (nothing is forgotten on a guess)."""
    from remem.core.tooling import run_memory_forget, run_memory_search

    if " " not in text:
        try:
            if mem.get(text, scope=scope) is not None:
                return run_memory_forget(mem, text, scope)
        except Exception:  # noqa: BLE001 - not an id: search below
            pass
    found = run_memory_search(mem, text, scope, limit=5)
    return (f"No memory has the id {text!r}; nothing was forgotten. These match it; forget one with "
            f"/remem:memory forget <id>:\n{found}")


def cmd_status(tenant: str | None) -> str:
    """How remem runs here: the Python and remem, the store and its service, this project's tenant, the
    plugin's data folder and setup, and what is waiting to be captured."""
    import os
    import sys

    import remem

    from .callenv import getenv
    from .common import hooks_dir, remem_home, service_running, store_folder, uses_service
    from .pending import pending_dir

    data = (getenv("CLAUDE_PLUGIN_DATA") or "").strip()
    lines = [f"remem {getattr(remem, '__version__', '?')} on Python {sys.version.split()[0]} ({sys.executable})",
             f"memory scope: {scope_label(tenant)} (tenant {tenant!r})",
             f"store: {store_folder()}",
             "service: " + ("running" if service_running() else "not running (starts with the next prompt)")
             if uses_service() else "service: off (REMEM_SERVICE / REMEM_URL)",
             f"hook log: {remem_home() / 'logs' / 'hooks.log'}"]
    if data:
        from pathlib import Path

        from .common import read_json

        state = read_json(Path(data) / "setup.json")
        status = state.get("status", "?") if isinstance(state, dict) else "none"
        lines.append(f"plugin data: {data} (setup: {status}, log {os.path.join(data, 'setup.log')})")
    waiting = len(list(pending_dir().glob("*.json"))) if pending_dir().is_dir() else 0
    spooled = len(list((hooks_dir() / "spool").glob("*.json"))) if (hooks_dir() / "spool").is_dir() else 0
    lines.append(f"waiting to be captured: {waiting} session(s) from before setup, {spooled} spooled turn(s)")
    return "\n".join(lines)


def split_arguments(argv: list[str]) -> list[str]:
    """The /remem:memory command passes what the user typed as one string (``"$ARGUMENTS"``, so an apostrophe in
    "we don't use tabs" is no shell syntax error; a double quote in it cuts it in pieces): split it as a shell
    would, or at spaces when its quotes do not pair up. From a terminal (no ``REMEM_MEMORY_SLASH``) the
    arguments are taken as they are."""
    from .callenv import getenv

    if getenv("REMEM_MEMORY_SLASH") != "1":
        return argv
    import shlex

    text = " ".join(argv)
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="remem-hook memory", usage=USAGE)
    p.add_argument("action", choices=["last", "search", "save", "forget", "list", "import", "status", "index", "ask"],
                   nargs="?", default="last")
    p.add_argument("rest", nargs="*")
    p.add_argument("--kind", default="note")
    p.add_argument("--limit", type=int, default=8)
    args = p.parse_args(list(argv))
    tenant = project_tenant()
    text = " ".join(args.rest).strip()
    if args.action == "last":
        print(cmd_last(tenant))
        return 0
    if args.action == "import":  # every project's sessions, each into its own tenant (as `remem import claude-code`)
        from remem.cli import main as cli_main

        return cli_main(["import", "claude-code", *args.rest])
    if args.action == "status":
        print(cmd_status(tenant))
        return 0
    from remem import Scope
    from remem.core.tooling import run_memory_forget, run_memory_save, run_memory_search

    scope = Scope(tenant=tenant)
    if args.action in ("search", "save", "forget", "index", "ask") and not text:
        print(f"usage: {USAGE}")
        return 2
    from remem.core.types import RememError

    from .common import store_held_elsewhere

    if store_held_elsewhere():  # no service can start while it does: say so now, not after seconds of retries
        import sys

        print("remem: the memory store is open in another process (not the remem service); close it, or open it "
              "there with the default Memory() so processes share it", file=sys.stderr)
        return 1
    try:
        mem = _open()
    except RememError as exc:  # e.g. the store held by another process: say so, not a traceback
        import sys

        print(f"remem: the memory store is not available: {exc}", file=sys.stderr)
        return 1
    try:
        if args.action == "search":
            print(run_memory_search(mem, text, scope, limit=args.limit))
        elif args.action == "save":
            from remem.core.redact.redactor import configured

            print(run_memory_save(mem, configured(env_flag("REMEM_HOOK_PII", True)).redact(text).text, scope,
                                  kind=args.kind))
        elif args.action == "forget":
            print(cmd_forget(mem, text, scope))
        elif args.action == "index":  # the project's docs as document memories (re-runs write only what changed)
            from remem.core.recall.fencing import one_line  # a file's name is the repository's: one line each

            done = mem.index(args.rest, scope=scope)
            print(f"{done.files} files: {done.added} chunks added, {done.unchanged} unchanged, {done.removed} removed"
                  + "".join(f"\nskipped {one_line(path)}: {one_line(why)}" for path, why in done.skipped.items()))
        elif args.action == "ask":
            from remem.core.tooling import run_memory_answer

            print(run_memory_answer(mem, text, scope))
        else:
            limit = int(text) if text.isdigit() else args.limit
            from remem.core.tooling import format_hits
            from remem import SearchHit

            recs = mem.list(scope=scope, limit=limit)
            print(format_hits([SearchHit(record=r, relevance=0.0, score=0.0) for r in recs]) if recs
                  else f"No memories in {scope_label(tenant)} yet.")
    finally:
        mem.close()
    return 0
