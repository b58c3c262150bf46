"""remem as an MCP server (official ``mcp`` SDK v2): memory tools for any MCP client.

``remem mcp`` serves stdio (Claude Code, Claude Desktop, any MCP host); ``remem mcp --http`` serves Streamable
HTTP with bearer tokens. The store is opened through the local service like every other remem entry point, so
the server, hooks and the CLI share one store.

Scope never comes from the model: it is the server's configuration (``--tenant/--user/--project`` or
REMEM_TENANT/REMEM_USER/REMEM_PROJECT); the default tenant is the project (the git repository of the working
directory, shared by all its worktrees), else the global space: the same rule as the CLI and the hooks. Over
HTTP a client may pick a tenant with the ``X-Remem-Tenant`` header, and a token pinned to tenants may only use
those.

Tokens: REMEM_MCP_TOKENS or ``--tokens-file``; entries separated by commas or newlines, each ``TOKEN`` or
``TOKEN:tenant1|tenant2`` (pinned); ``#`` starts a comment in the file. HTTP always needs one (see
:mod:`remem.mcp_http`): without any configured, ``--http`` creates ``$REMEM_HOME/mcp-token``.
"""

import argparse
import asyncio
import json
import logging
import os
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Annotated, Any, Awaitable, Callable, Mapping

from .core.config import write_private
from .core.tooling import (FORGET_DESCRIPTION, SAVE_DESCRIPTION, SEARCH_DESCRIPTION, TurnTimeoutError, awithin_turn,
                           did_not_run, format_hits, record_line, turn_timeout)
from .core.tooling import ANSWER_DESCRIPTION, answer_timeout, format_answer  # memory_answer
from .core.tooling import ABOUT_DESCRIPTION, ENTITIES_DESCRIPTION, about_text, format_entities
from .core.recall.fencing import one_line
from .core.tooling import format_records, saved_note
from .core.types import NotFoundError, RememError, Scope, StoreLockedError
from .mcp_http import (AuthMiddleware, FailedAuth, Identity, Limits, Token, default_token, http_app, identity_of,
                       load_tokens, parse_tokens)

log = logging.getLogger("remem.mcp")

INSTRUCTIONS = (
    "Long-term memory shared across conversations. Search it (memory_search) before answering anything that "
    "may depend on the user, earlier work or past decisions; save durable facts, preferences, decisions and "
    "lessons (memory_save); when something saved stops being true use memory_supersede, not memory_forget."
)


# ---------------------------------------------------------------------------------------------- configuration
def project_root(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The tenant of the git repository ``cwd`` (default: the working directory) is in, shared by all its
    worktrees and subfolders (:func:`remem.core.scope.find_project`); None outside a repository."""
    from .core.scope import find_project

    project = find_project(cwd)
    return project.tenant if project is not None else None


def server_scope(tenant: str | None = None, user: str | None = None, project: str | None = None,
                 agent: str | None = None, *, global_space: bool = False) -> Scope:
    """The scope every tool call uses: remem's one default scope rule (:func:`remem.core.scope.default_scope`):
    ``--tenant``/``--project``, else ``--global``, else REMEM_TENANT/REMEM_PROJECT, else the project of the
    working directory, else the global space; user and agent from the flags or REMEM_USER/REMEM_AGENT."""
    from .core.scope import default_scope

    chosen = default_scope(tenant=tenant or project, user=user, agent=agent, global_space=global_space).scope
    assert isinstance(chosen, Scope)
    return chosen


# ---------------------------------------------------------------------------------------------- the server
def not_open(seconds: float) -> str:
    return (f"the memory store did not open within {seconds:g} s: its local service is not answering (hung, or "
            f"still starting); try again shortly")


def build_server(memory: Any = None, *, scope: Scope | None = None, tokens: Mapping[str, Token] | None = None,
                 limits: Limits | None = None, path: str | None = None, embedder: str | None = None,
                 name: str = "remem") -> Any:
    """An ``MCPServer`` with the memory tools. ``memory``: a Memory or AsyncMemory (default: ``Memory(path)``,
    through the local service). ``scope``: the configured scope (default :func:`server_scope`)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import AliasChoices, Field

    from . import __version__
    from .core.aio import AsyncMemory
    from .core.memory import Memory

    amem: AsyncMemory | None = None
    if isinstance(memory, AsyncMemory):
        amem = memory
    elif memory is not None:
        amem = AsyncMemory(memory=memory)
    base_scope = scope or server_scope()
    limits = limits or Limits()  # tokens are checked by AuthMiddleware (http_app), not by the tools
    lock = threading.Lock()
    opening: tuple[Future[AsyncMemory], float] | None = None  # Memory() under way in its thread, since when

    def open_in_thread() -> Future[AsyncMemory]:
        fut: Future[AsyncMemory] = Future()
        fut.set_running_or_notify_cancel()  # a waiter that gives up must not cancel the open

        def run() -> None:
            try:
                fut.set_result(AsyncMemory(memory=Memory(path, embedder=embedder)))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the store
                fut.set_exception(exc)
        threading.Thread(target=run, name="remem-mcp-open", daemon=True).start()
        return fut

    def still_opening() -> bool:
        with lock:
            return amem is None and opening is not None and not opening[0].done()

    async def store() -> AsyncMemory:
        """The store, opened in a thread: ``Memory()`` may wait its 30 s service timeout on a hung service,
        and on the event loop that would also block the turn bound. A call waits for the open at most the turn
        timeout; the open goes on for the next call, and one that failed is started again."""
        nonlocal amem, opening
        with lock:
            if amem is not None:
                return amem
            if opening is None or (opening[0].done() and opening[0].exception() is not None):
                opening = (open_in_thread(), time.monotonic())
            fut, since = opening
        limit = turn_timeout()
        try:
            opened = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), limit)
        except asyncio.TimeoutError:
            raise TurnTimeoutError(not_open(limit)) from None
        except StoreLockedError as exc:  # after a hung service, the in-process fallback finds it holding the lock
            if time.monotonic() - since > limit:
                raise StoreLockedError(f"the store's local service did not answer (is it hung?), and the store "
                                       f"cannot be opened without it: {exc}") from exc
            raise
        with lock:
            if amem is None:
                amem = opened
            return amem

    quota_views: dict[int, AsyncMemory] = {}

    async def writer() -> AsyncMemory:
        """The store for writes that may grow a tenant. The quota travels as the handle's ``tenant_quota``
        setting, so the store counts the tenant and writes under one hold of its write lock (in the local
        service: one lock for every process that shares it); a count read here first would let parallel saves
        all pass, and a supersede that skipped it would add records past the quota."""
        mem = await store()
        if not limits.quota:
            return mem
        with lock:
            view = quota_views.get(id(mem))
            if view is None:
                view = quota_views[id(mem)] = mem.with_settings(tenant_quota=limits.quota)
            return view

    def scope_for(ctx: Context | None) -> Scope:
        """The configured scope; over HTTP, the tenant and user the auth middleware resolved for the request
        (X-Remem-Tenant within the token's tenants, X-Remem-User within its user pin, and within the server's
        own ``--user`` if it was started with one). Headers are never read here: one parsed value, one place."""
        request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
        if request is None:
            return base_scope
        ident: Identity | None = identity_of(request)
        if ident is None:  # an HTTP request that did not pass AuthMiddleware: nothing in it is trusted
            return base_scope
        tenant = ident.tenant or base_scope.tenant
        if not ident.token.allows(tenant):
            raise ToolError(f"this token may not use tenant {tenant!r}")
        if base_scope.user is not None and ident.user not in (None, base_scope.user):  # a server started --user
            raise ToolError(f"this server serves user {base_scope.user!r} only, not {ident.user!r}")
        return Scope(tenant=tenant, user=ident.user or base_scope.user, agent=base_scope.agent)

    async def guarded(action: str, fn: Callable[[], Awaitable[str]], memory_id: str | None = None) -> str:
        try:  # a hung store costs a tool call the turn timeout, not the client's 30 s (stats scans: no limit)
            return await (fn() if action in ("stats", "answer") else awithin_turn(fn()))  # answer: own limit
        except ToolError:
            raise
        except TurnTimeoutError as exc:  # the store is not even open yet: say that, not "did not answer"
            reason = not_open(turn_timeout()) if still_opening() else str(exc)
            raise ToolError(did_not_run(action, reason)) from exc
        except NotFoundError as exc:  # one message whether the id exists nowhere or in another tenant
            what = f"no memory with id {memory_id!r} in this scope" if memory_id else "not found in this scope"
            raise ToolError(did_not_run(action, what)) from exc
        except (RememError, ValueError, TypeError) as exc:
            raise ToolError(did_not_run(action, str(exc).splitlines()[0][:300] or type(exc).__name__)) from exc
        except Exception as exc:  # noqa: BLE001 - the agent gets an error result, never a dead server
            log.warning("memory %s failed", action, exc_info=True)
            raise ToolError(did_not_run(action, f"remem hit an internal error ({type(exc).__name__}); the MCP "
                                                f"server's log has the details")) from exc

    server = MCPServer(name, instructions=INSTRUCTIONS, version=__version__)
    Tags = Annotated[list[str] | None, Field(description="optional labels, e.g. ['python', 'deploy']")]
    Kind = Annotated[str | None, Field(description="fact, preference, decision, event, lesson, summary, note, or "
                                                   "episode (a message as it was said)")]
    When = Annotated[str | None, Field(description="ISO date or date-time, e.g. 2026-03-01")]
    # named memory_id as in every adapter's tools; `id` (what these tools took before) is still accepted from
    # old clients, though the schema shows only memory_id
    MemoryId = Annotated[str, Field(description="the memory id", validation_alias=AliasChoices("memory_id", "id"))]

    @server.tool(description=SEARCH_DESCRIPTION + " Filter by kind, tags or a date range (since/until: when it "
                 "was recorded); as_of answers what was true at that time.")
    async def memory_search(query: Annotated[str, Field(description="what to look for; names, topics, ids")],
                            limit: Annotated[int, Field(ge=1, le=50)] = 5, kind: Kind = None, tags: Tags = None,
                            since: When = None, until: When = None, as_of: When = None,
                            ctx: Context | None = None) -> str:
        async def run() -> str:
            if not query.strip():
                raise ValueError("the query is empty")
            sc = scope_for(ctx)
            hits = await (await store()).search(query, scope=sc, limit=limit, kind=kind or None,
                                                tags=tags or None, since=since, until=until, as_of=as_of,
                                                token_budget=1200)
            return format_hits(hits)
        return await guarded("search", run)

    @server.tool(description=SAVE_DESCRIPTION + " Use valid_from when the fact became true at a known earlier time.")
    async def memory_save(text: Annotated[str, Field(description="one self-contained statement")],
                          kind: Annotated[str, Field(description="fact, preference, decision, event, lesson, "
                                                                 "summary or note")] = "note",
                          tags: Tags = None, importance: Annotated[int, Field(ge=1, le=10)] = 5,
                          valid_from: When = None, ctx: Context | None = None) -> str:
        async def run() -> str:
            sc, mem = scope_for(ctx), await writer()
            rec = await mem.add(text, scope=sc, kind=kind or "note", tags=tags or None, importance=importance,
                                valid_from=valid_from, source="mcp")
            if rec.merged_count:
                return saved_note("Already known; merged into memory", rec)
            return saved_note("Saved memory", rec)
        return await guarded("save", run)

    @server.tool(description="Read one memory in full (text, kind, tags, dates, what it superseded) by its id.")
    async def memory_get(memory_id: Annotated[MemoryId, Field(description="a memory id from memory_search")],
                         ctx: Context | None = None) -> str:
        async def run() -> str:
            sc = scope_for(ctx)
            rec = await (await store()).get(memory_id, scope=sc)
            return json.dumps(rec.as_dict(), ensure_ascii=False, indent=1)
        return await guarded("get", run, memory_id)

    @server.tool(description="Correct a memory in place (a typo, better wording, tags, importance or kind). If "
                 "the fact itself changed over time, use memory_supersede so the history is kept.")
    async def memory_update(memory_id: MemoryId,
                            text: str | None = None, tags: Tags = None,
                            importance: Annotated[int | None, Field(ge=1, le=10)] = None, kind: Kind = None,
                            ctx: Context | None = None) -> str:
        async def run() -> str:
            sc = scope_for(ctx)
            rec = await (await writer()).update(memory_id, scope=sc, text=text, tags=tags, importance=importance,
                                               kind=kind)
            return saved_note("Updated memory", rec)
        return await guarded("update", run, memory_id)

    @server.tool(description="Record that a saved memory stopped being true and what replaced it (e.g. the user "
                 "moved, a decision was reversed). The old memory is kept as history, closed at valid_from.")
    async def memory_supersede(memory_id: Annotated[MemoryId, Field(description="the outdated memory's id")],
                               new_text: Annotated[str, Field(description="what is true now")],
                               valid_from: When = None, ctx: Context | None = None) -> str:
        async def run() -> str:
            sc = scope_for(ctx)
            rec = await (await writer()).supersede(memory_id, new_text, scope=sc, valid_from=valid_from)
            return saved_note(f"Memory {one_line(memory_id)} superseded by", rec)
        return await guarded("supersede", run, memory_id)

    @server.tool(description=FORGET_DESCRIPTION)
    async def memory_forget(memory_id: MemoryId, ctx: Context | None = None) -> str:
        async def run() -> str:
            sc = scope_for(ctx)
            await (await store()).forget(memory_id, scope=sc)  # a missing id: NotFoundError, answered as for get
            return f"Forgot memory {memory_id}."
        return await guarded("forget", run, memory_id)

    @server.tool(description="The most recently saved memories, newest first (what happened lately; a quick "
                 "overview at the start of a session). Not a search: use memory_search for a topic.")
    async def memory_recent(limit: Annotated[int, Field(ge=1, le=100)] = 10, kind: Kind = None,
                            ctx: Context | None = None) -> str:
        async def run() -> str:
            sc = scope_for(ctx)
            recs = await (await store()).list(scope=sc, limit=limit, kind=kind or None, include_superseded=False)
            if not recs:
                return "No memories yet."
            return format_records(recs)
        return await guarded("recent", run)

    @server.tool(description="How many memories this scope holds, by kind, and the date range they cover.")
    async def memory_stats(ctx: Context | None = None) -> str:
        async def run() -> str:
            sc = scope_for(ctx)
            st = await (await store()).stats(scope=sc)
            data = {"scope": {k: v for k, v in sc.as_dict().items() if v}, "count": st.count,
                    "by_kind": st.by_kind, "oldest": st.oldest.isoformat() if st.oldest else None,
                    "newest": st.newest.isoformat() if st.newest else None}
            return json.dumps(data, ensure_ascii=False)
        return await guarded("stats", run)

    @server.tool(description=ANSWER_DESCRIPTION)
    async def memory_answer(question: Annotated[str, Field(description="the question, in plain words")],
                            as_of: When = None, ctx: Context | None = None) -> str:
        async def run() -> str:
            if not question.strip():
                raise ValueError("the question is empty")
            sc = scope_for(ctx)
            try:
                found = await asyncio.wait_for((await store()).answer(question, scope=sc, as_of=as_of),
                                               answer_timeout())
            except asyncio.TimeoutError:
                raise TurnTimeoutError(f"no answer within {answer_timeout():g} s") from None
            return format_answer(found)
        return await guarded("answer", run)
    @server.tool(description=ABOUT_DESCRIPTION)
    async def memory_about(name: Annotated[str, Field(description="a name, alias or identifier, e.g. 'Dana', "
                                                                  "'the ingest worker', 'PROJ-12'")],
                           as_of: When = None, ctx: Context | None = None) -> str:
        async def run() -> str:
            if not name.strip():
                raise ValueError("the name is empty")
            profile = await (await store()).about(name, scope=scope_for(ctx), as_of=as_of, token_budget=1200)
            return about_text(profile, name)
        return await guarded("about", run)

    @server.tool(description=ENTITIES_DESCRIPTION)
    async def memory_entities(query: Annotated[str | None, Field(description="part of a name")] = None,
                              kind: Annotated[str | None, Field(description="person, org, place, product, service, "
                                                                            "repo, file, issue or host")] = None,
                              limit: Annotated[int, Field(ge=1, le=200)] = 20, ctx: Context | None = None) -> str:
        async def run() -> str:
            found = await (await store()).entities(scope=scope_for(ctx), query=query or None, kind=kind or None,
                                                   limit=limit)
            return format_entities(found)
        return await guarded("entities", run)

    server.remem_scope = base_scope  # type: ignore[attr-defined]
    return server


# ---------------------------------------------------------------------------------------------- install
def install_config(target: str = "project", *, cwd: str | os.PathLike[str] | None = None,
                   config_path: str | os.PathLike[str] | None = None, server_args: list[str] | None = None,
                   name: str = "remem") -> Path:
    """Add remem to ``.mcp.json`` at the project root (``project``) or to Claude Desktop's config, keeping
    every other server and setting in the file; a ``REMEM_HOME`` set now goes with it."""
    import shutil

    from .core.scope import find_project

    here = Path(os.path.realpath(cwd or os.getcwd()))
    project = find_project(here)
    folder, tenant = (project.folder, project.tenant) if project is not None else (here, None)
    if config_path is None:
        config_path = folder / ".mcp.json" if target == "project" else claude_desktop_config_path()
    path = Path(config_path)
    exe = shutil.which("remem")
    command, args = (exe, ["mcp"]) if exe else (sys.executable, ["-m", "remem.cli", "mcp"])
    args = [*args, *(server_args or [])]
    if target != "project" and "--project" not in args and "--tenant" not in args and tenant is not None:
        args += ["--project", tenant]  # Desktop starts servers outside the project: pin it
    data: dict[str, Any] = {}
    if path.exists() and path.read_text("utf-8").strip():
        data = json.loads(path.read_text("utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object; not touching it")
    servers = data.setdefault("mcpServers", {})
    servers[name] = {"command": command, "args": args}
    home = os.environ.get("REMEM_HOME")
    if home:  # the client starts the server with its own environment: the store this shell uses, not ~/.remem
        servers[name]["env"] = {"REMEM_HOME": str(Path(home).expanduser().resolve())}
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace_private(path, json.dumps(data, indent=2) + "\n", private=target != "project")
    return path


def _replace_private(path: Path, text: str, *, private: bool) -> None:
    """Replace ``path`` with ``text`` atomically. The config may hold other servers' keys, so the new file is
    0600 from its first byte (a fresh name, never a planted link), then gets the old file's mode (never
    loosened; a new file: 0600, or the umask's for a project's .mcp.json); a failure leaves the old file."""
    import stat

    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600 if private else None
    write_private(path, text, durable=True, mode=0o666 & ~_umask() if mode is None else mode)


def _umask() -> int:
    """The process umask, read without setting it where the OS tells (setting it, even briefly, would apply to
    files other threads create meanwhile)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o077)
    os.umask(umask)
    return umask


def claude_desktop_config_path() -> Path:
    if sys.platform == "darwin":
        return Path("~/Library/Application Support/Claude/claude_desktop_config.json").expanduser()
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", "~")).expanduser() / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", "~/.config")).expanduser() / "Claude" / "claude_desktop_config.json"


# ---------------------------------------------------------------------------------------------- CLI
def mcp_main(args: argparse.Namespace) -> int:
    """``remem mcp [install] [--http]``."""
    get = lambda name, default=None: getattr(args, name, default)  # noqa: E731
    if get("action") == "install":
        fwd: list[str] = []
        for flag, attr in (("--path", "path"), ("--embedder", "embedder"), ("--tenant", "tenant"),
                           ("--user", "user"), ("--project", "project")):
            if get(attr):
                fwd += [flag, str(get(attr))]
        path = install_config(get("target") or "project", server_args=fwd)
        print(json.dumps({"written": str(path)}) if get("json") else f"remem MCP server added to {path}")
        return 0
    scope = server_scope(tenant=get("tenant"), user=get("user"), project=get("project"), agent=get("agent"),
                         global_space=bool(get("global_space")))
    if get("url"):
        from .core.memory import Memory

        memory: Any = Memory(url=get("url"), api_key=get("api_key"), embedder=get("embedder"))
    else:
        memory = None  # opened on first use, through the local service
    tokens = load_tokens(get("tokens_file"))
    if get("http") and not tokens:  # loopback too: every local account can reach 127.0.0.1
        tokens, token_file = default_token()
        print(f"remem MCP: no tokens configured; clients must send 'Authorization: Bearer <token>' with the "
              f"token in {token_file} (mode 0600)", file=sys.stderr)
    limits = Limits(rate_per_minute=get("rate_limit") or _env_int("REMEM_MCP_RATE"),
                    quota=get("quota") or _env_int("REMEM_MCP_QUOTA"))
    if not get("http"):  # stdio: the handshake is answered before the MCP SDK is even imported
        from .mcp_stdio import serve

        return serve(lambda: build_server(memory, scope=scope, tokens=tokens, limits=limits, path=get("path"),
                                          embedder=get("embedder")))
    server = build_server(memory, scope=scope, tokens=tokens, limits=limits, path=get("path"),
                          embedder=get("embedder"))
    import uvicorn

    host, port = get("host") or "127.0.0.1", int(get("port") or 8765)
    app = http_app(server, host=host, tokens=tokens, limits=limits)
    log.info("remem MCP on http://%s:%s/mcp (tenant %s, %d tokens)", host, port, scope.tenant, len(tokens))
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else None


__all__ = ["AuthMiddleware", "FailedAuth", "Limits", "Token", "build_server", "claude_desktop_config_path", "http_app",
           "install_config", "load_tokens", "mcp_main", "parse_tokens", "project_root", "server_scope"]
