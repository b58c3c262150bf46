"""The tenant quota: how many memories a tenant may hold (``Settings.tenant_quota``).

Checked under the store's write lock, right before the write it counts, by every path that grows a tenant (add,
supersede, import): a count read earlier would let parallel writers all pass.

That lock is one process's. On a Qdrant server several app processes write to the same collection, and each one's
check could pass before any of their writes lands. So there the write is also confirmed after it is made
(:func:`confirm_quota`): count again and, past the quota, delete what was just written and refuse. Of writers that
race, each one that keeps its write counted every kept write made before its count, so the records kept never pass
the quota (the last such writer to count saw them all and at most the quota); racing writers may all be refused,
and for the instant between a write and its rollback a reader can see the tenant over its quota. Qdrant has no
conditional insert or counter to make the check and the write one step.
"""

from __future__ import annotations

from typing import Sequence

from .backends.base import Backend, Cond, FilterSpec
from ..types import RememError, Scope


class QuotaExceededError(RememError):
    """A write would take a tenant past its memory quota (``Settings.tenant_quota``)."""


def check_quota(backend: Backend, quota: int | None, scope: Scope, adding: int) -> None:
    """Refuse ``adding`` more memories in ``scope``'s tenant when that would pass ``quota`` (None: no quota)."""
    if quota is None or adding <= 0:
        return
    have = backend.count(FilterSpec(must=[Cond("tenant", eq=scope.stored_tenant)]))
    if have + adding > quota:
        raise QuotaExceededError(f"the memory quota of tenant {scope.tenant or 'global'!r} is full "
                                 f"({have} of {quota}); forget something first")


def confirm_quota(backend: Backend, quota: int | None, scope: Scope, written: Sequence[str]) -> None:
    """After a write of ``written`` (new ids) in ``scope``'s tenant on a store other processes write too (a Qdrant
    server): past ``quota``, delete them again and refuse, so no race between processes keeps a tenant over it."""
    if quota is None or not written or getattr(backend, "kind", "") != "qdrant":
        return  # the embedded store has one writer process (the local service): the check before is enough
    have = backend.count(FilterSpec(must=[Cond("tenant", eq=scope.stored_tenant)]))
    if have > quota:
        backend.delete(list(written))
        raise QuotaExceededError(f"the memory quota of tenant {scope.tenant or 'global'!r} is full "
                                 f"({have - len(written)} of {quota}, another writer got there first); "
                                 f"forget something first")
