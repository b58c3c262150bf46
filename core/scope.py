"""The one scope rule, shared by the engine, every adapter, the MCP server, the CLI and the hooks.

- ``scope`` is a :class:`Scope`, a mapping of its fields, or (in adapters) a callable that returns one per call.
- ``None`` means the global space (``Scope()``), everywhere it means anything. It never means "every tenant".
- By-id operations (get, update, supersede, forget, import) act only inside their scope, like search does.
- Crossing tenants takes the explicit admin switch :data:`ALL_TENANTS`, never an omission.

Adapters resolve callables with :func:`resolve_scope`; a callable that returns ``None`` means "no scope for this
call", and the memory tools then answer "memory ... did not run" instead of using someone else's memories.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Union

from .types import MemoryRecord, Scope, ScopeError


class AllTenants:
    """The admin switch: ``scope=ALL_TENANTS`` reads or changes memories of every tenant. Use it only for
    store-wide administration (backups, restores, audits); agents and tools never need it."""

    _instance: "AllTenants | None" = None

    def __new__(cls) -> "AllTenants":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ALL_TENANTS"

    def __reduce__(self) -> str:
        return "ALL_TENANTS"


ALL_TENANTS = AllTenants()

ScopeLike = Union[Scope, Mapping[str, Any], None]
"""What the engine and the facade take: a Scope, a mapping of its fields, or None (the global space)."""

ScopeSpec = Union[Scope, Mapping[str, Any], Callable[..., Union[Scope, Mapping[str, Any], None]], None]
"""What adapters take: a ScopeLike, or a callable resolving one per call from the framework's call context."""


def coerce_scope(value: Any, *, admin: bool = False) -> Scope | AllTenants:
    """A concrete scope for the engine. ``admin=True`` lets :data:`ALL_TENANTS` through (operations that
    can span tenants); everywhere else it is refused, so a write always lands in one tenant."""
    if value is ALL_TENANTS or isinstance(value, AllTenants):
        if not admin:
            raise ScopeError("ALL_TENANTS is not allowed here: this operation works inside one scope")
        return ALL_TENANTS
    return Scope.coerce(value)


def in_scope(rec: MemoryRecord, scope: Scope | AllTenants) -> bool:
    """Whether a record belongs to ``scope``: the same tenant (the global space is one), and the same
    user/agent/session where the scope sets them."""
    if isinstance(scope, AllTenants):
        return True
    if rec.scope.stored_tenant != scope.stored_tenant:
        return False
    return all(getattr(scope, k) is None or getattr(scope, k) == getattr(rec.scope, k)
               for k in ("user", "agent", "session"))


def own_records(scope: Scope) -> dict[str, Any]:
    """``where`` conditions for ``scope``'s own records only: what the scope leaves unset, they leave unset too.
    A tenant's scope also holds its users', agents' and sessions' records; a lookup that reads or rewrites what
    a scope itself said before (a conversation's past, its summary, a thread) must not take theirs."""
    return {key: {"$exists": False} for key in ("user", "agent", "session") if getattr(scope, key) is None}


def resolve_scope(spec: ScopeSpec, *context: Any) -> Scope | None:
    """The scope of one adapter call: a fixed scope as it is (``None`` = the global space), or what a callable
    returns for this call's ``context`` (``None`` from a callable = no scope: the memory step does not run).

    Raises ``TypeError``/``ValueError`` for a malformed scope; adapters turn that into "did not run"."""
    if spec is None or isinstance(spec, (Scope, Mapping)):
        return Scope.coerce(spec)
    if isinstance(spec, AllTenants):
        raise ScopeError("adapters work inside one scope; ALL_TENANTS is for administration only")
    if callable(spec):
        value = spec(*context)
        return None if value is None else Scope.coerce(value)
    raise TypeError(f"scope must be a Scope, a mapping, a callable or None, got {type(spec).__name__}")


def check_scope_spec(spec: Any) -> ScopeSpec:
    """Validate an adapter's ``scope=`` when it is built, so a typo fails at construction, not mid-run."""
    if spec is None or callable(spec) and not isinstance(spec, (Scope, Mapping, AllTenants)):
        return spec
    if isinstance(spec, AllTenants):
        raise ScopeError("adapters work inside one scope; ALL_TENANTS is for administration only")
    return Scope.coerce(spec)


# ---------------------------------------------------------------------------------------------- default scope
@dataclass(frozen=True)
class Project:
    """The git repository a folder is in. ``tenant`` is the same for the main checkout, every linked worktree
    and every subfolder of them (it is derived from the repository's common git dir); ``folder`` is the
    checkout the folder is in (a worktree's own root), for paths relative to it."""

    tenant: str
    folder: Path


def _read_gitdir(dot_git: Path) -> Path | None:
    """The git dir a ``.git`` file points at (``gitdir: <path>``, relative to the file's folder), else None."""
    try:
        line = dot_git.read_text("utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = Path(line[len("gitdir:"):].strip())
    return Path(os.path.realpath(dot_git.parent / target))


def _common_dir(gitdir: Path) -> Path:
    """The repository's common dir: a linked worktree's git dir (``<common>/worktrees/<name>``) names it in its
    ``commondir`` file; every other git dir is its own."""
    try:
        rel = (gitdir / "commondir").read_text("utf-8", errors="replace").strip()
    except OSError:
        return gitdir
    return Path(os.path.realpath(gitdir / rel)) if rel else gitdir


def find_project(start: str | os.PathLike[str] | None = None) -> Project | None:
    """The git repository ``start`` (default: the working directory) is in, or None outside one.

    Walks the file system instead of spawning ``git`` (a Claude Code hook pays for every process it starts).
    The tenant is the folder that holds the repository's common ``.git`` directory (the main checkout), so a
    plain repository keeps the tenant it always had and its worktrees join it; a bare repository or a
    submodule, whose common dir is not called ``.git``, is keyed by the common dir itself."""
    folder = os.path.realpath(os.path.expanduser(str(start if start is not None else os.getcwd())))
    while True:  # plain os.stat on strings: a hook resolves this on every prompt (bench/bench_scope.py)
        dot_git = os.path.join(folder, ".git")
        try:
            mode = os.stat(dot_git).st_mode
        except OSError:
            mode = None
        if mode is not None:
            if stat.S_ISDIR(mode):
                gitdir: Path | None = Path(dot_git)
            else:
                gitdir = _read_gitdir(Path(dot_git))
                if gitdir is None:  # not a gitdir pointer we can read: the checkout is the project
                    return Project(tenant=folder, folder=Path(folder))
            common = _common_dir(gitdir)  # type: ignore[arg-type]
            tenant = common.parent if common.name == ".git" else common
            return Project(tenant=str(tenant), folder=Path(folder))
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


TENANT_VARIABLES = ("REMEM_TENANT", "REMEM_PROJECT")
"""Environment variables that set the tenant of the CLI, the MCP server and the hooks, first one set wins."""
HOOK_TENANT_VARIABLE = "REMEM_HOOK_TENANT"
"""Set in Claude Code's environment, it wins over :data:`TENANT_VARIABLES` for the plugin's hooks and server."""


@dataclass(frozen=True)
class ScopeChoice:
    """The scope a command reads and writes when the caller did not pass one, and why (``source``: the flag or
    variable that chose it, ``"project"`` for the git repository of the folder, ``"global"`` otherwise)."""

    scope: Scope | AllTenants
    source: str

    @property
    def all_tenants(self) -> bool:
        return isinstance(self.scope, AllTenants)

    def describe(self) -> str:
        """One short line for a person: which scope was read, and why."""
        if isinstance(self.scope, AllTenants):
            return "scope: every tenant (--all-tenants)"
        sc = self.scope
        narrow = "".join(f", {k} {getattr(sc, k)}" for k in ("user", "agent", "session") if getattr(sc, k))
        if sc.tenant is None:
            where = "the global space " + ("(not in a git repository)" if self.source == "global"
                                           else f"({self.source})")
        elif self.source == "project":
            where = f"project {sc.tenant}"
        else:
            where = f"tenant {sc.tenant} ({self.source})"
        return f"scope: {where}{narrow}"

    def as_dict(self) -> dict[str, Any]:
        """The same for ``--json``: the scope's fields (``all_tenants`` instead when it is every tenant)."""
        if isinstance(self.scope, AllTenants):
            return {"all_tenants": True, "source": self.source}
        return {**self.scope.as_dict(), "source": self.source}


def default_scope(*, tenant: str | None = None, user: str | None = None, agent: str | None = None,
                  session: str | None = None, global_space: bool = False, all_tenants: bool = False,
                  cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
                  hook: bool = False) -> ScopeChoice:
    """The one default scope rule of the CLI, the MCP server and the Claude Code hooks.

    First match wins: ``all_tenants`` (``--all-tenants``); ``tenant`` (``--tenant``/``--project``);
    ``global_space`` (``--global``); for the hooks, ``REMEM_HOOK_TENANT``; ``REMEM_TENANT``; ``REMEM_PROJECT``;
    the git repository ``cwd`` is in (:func:`find_project`: every worktree and subfolder share it); else the
    global space. ``user``/``agent`` default to ``REMEM_USER``/``REMEM_AGENT``.

    The library itself never calls this: ``Memory(...).add(text)`` with no scope is the global space, since a
    library is not run "in" a project."""
    env = os.environ if env is None else env

    def var(name: str) -> str | None:
        value = (env.get(name) or "").strip()
        return value or None

    if all_tenants:
        if tenant or user or agent or session or global_space:
            raise ScopeError("--all-tenants cannot be combined with --tenant/--user/--agent/--session/--global")
        return ScopeChoice(ALL_TENANTS, "--all-tenants")
    user, agent = user or var("REMEM_USER"), agent or var("REMEM_AGENT")

    def chosen(value: str | None, source: str) -> ScopeChoice:
        return ScopeChoice(Scope(tenant=value, user=user, agent=agent, session=session), source)

    if tenant:
        return chosen(tenant, "--tenant")
    if global_space:
        return chosen(None, "--global")
    for name in ((HOOK_TENANT_VARIABLE,) if hook else ()) + TENANT_VARIABLES:
        if var(name):
            return chosen(var(name), name)
    project = find_project(cwd)
    if project is not None:
        return chosen(project.tenant, "project")
    return chosen(None, "global")


__all__ = ["ALL_TENANTS", "AllTenants", "HOOK_TENANT_VARIABLE", "Project", "ScopeChoice", "ScopeLike", "ScopeSpec",
           "TENANT_VARIABLES", "check_scope_spec", "coerce_scope", "default_scope", "find_project", "in_scope",
           "own_records", "resolve_scope"]
