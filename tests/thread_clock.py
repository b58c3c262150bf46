"""What the thread tests share: whose notes they are and when each was said (minutes after a fixed start)."""

from __future__ import annotations

import datetime as dt

from remem import Scope

DANA = Scope(tenant="acme", user="dana")
T0 = dt.datetime(2024, 6, 1, 9, 0, tzinfo=dt.timezone.utc)


def at(minutes: float) -> dt.datetime:
    """The moment ``minutes`` after :data:`T0`."""
    return T0 + dt.timedelta(minutes=minutes)
