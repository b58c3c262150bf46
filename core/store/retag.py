"""Moving a tenant's memories to another tenant: the migration for stores keyed by a worktree's own folder.

Before remem keyed a project by its git repository (every worktree and subfolder share one tenant), each
``git worktree`` had a tenant of its own, named by its folder. :func:`worktree_tenants` finds those tenants in a
store, and :func:`retag` moves one tenant's memories, with their ids, times, users, sessions and supersede links,
to the tenant the rule gives now. It goes through the store's own export and import (vectors are rebuilt), with
the moved records kept in a 0600 file under ``$REMEM_HOME`` until the import has finished, so a crash in between
loses nothing: ``remem import FILE --all-tenants`` restores it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..config import private_dir, private_opener, remem_home
from ..scope import ALL_TENANTS, find_project
from ..types import Scope


@dataclass(frozen=True)
class Retag:
    """One tenant moved (or, on a dry run, that would be): ``count`` memories from ``old`` to ``new``."""

    old: str
    new: str | None
    count: int
    dry_run: bool

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.old, "to": self.new, "count": self.count, "dry_run": self.dry_run}


def worktree_tenants(mem: Any) -> dict[str, str]:
    """``{old tenant: project tenant}`` for every tenant of the store that is the folder of a git checkout whose
    project (:func:`remem.core.scope.find_project`) is another tenant: a linked worktree, or a subfolder.
    A worktree folder already deleted cannot be recognised: move it with :func:`retag` by name."""
    tenants = {rec.scope.tenant for rec in mem.iter_records(scope=ALL_TENANTS) if rec.scope.tenant}
    moves: dict[str, str] = {}
    for tenant in sorted(tenants):
        if not os.path.isabs(tenant) or not os.path.isdir(tenant):
            continue
        project = find_project(tenant)
        if project is not None and project.tenant != tenant:
            moves[tenant] = project.tenant
    return moves


def retag(mem: Any, old: str, new: str | None, *, dry_run: bool = True) -> Retag:
    """Move every memory of tenant ``old`` (all its users, agents and sessions) to tenant ``new`` (None: the
    global space). A dry run (the default) only counts them."""
    if not old:
        raise ValueError("name the tenant to move from")
    if old == new:
        raise ValueError(f"tenant {old!r} is already where it would go")
    source, target = Scope(tenant=old), Scope(tenant=new)  # both validated before anything is read
    count = mem.count(scope=source)
    if dry_run or not count:
        return Retag(old, new, count, dry_run)
    folder = private_dir(remem_home() / "retag")
    exported = folder / f"export-{os.getpid()}-{time.time_ns()}.jsonl"
    moved = folder / f"moving-{os.getpid()}-{time.time_ns()}.jsonl"
    try:
        mem.export(exported, scope=source)
        with open(exported, encoding="utf-8") as src, open(moved, "w", encoding="utf-8", opener=private_opener) as dst:
            for i, line in enumerate(src):
                data = json.loads(line)
                if i and isinstance(data.get("scope"), dict):  # line 0 is the export's header
                    data["scope"] = {**data["scope"], "tenant": target.tenant}
                dst.write(json.dumps(data, ensure_ascii=False) + "\n")
            dst.flush()
            os.fsync(dst.fileno())
    finally:
        exported.unlink(missing_ok=True)
    mem.forget(scope=source, dry_run=False)
    mem.import_(moved, scope=ALL_TENANTS)
    moved.unlink(missing_ok=True)  # kept only if the import failed: `remem import FILE --all-tenants` restores it
    return Retag(old, new, count, False)


__all__ = ["Retag", "retag", "worktree_tenants"]
