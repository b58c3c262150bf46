"""The tenant quota: how many memories a tenant may hold (``Settings.tenant_quota``).

Checked under the store's write lock, right before the write it counts, by every path that grows a tenant (add,
supersede, import): a count read earlier would let parallel writers all pass.
"""

from __future__ import annotations

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
