"""Request values checked where they enter the service, so a bad one is a clear ValueError for the caller
rather than an OSError or a Rust binding's message from deep inside the store.

NaN and infinity never get this far (the wire refuses them both ways, :func:`.wire.loads_line`); what is left
is a number given as a time that no calendar holds (``as_of=1e18``).
"""

from __future__ import annotations

from typing import Any, Mapping

TIME_ARGS = frozenset({"as_of", "since", "until", "valid_from", "valid_to", "valid_until", "occurred_at",
                       "created_at", "at", "before", "after"})
MIN_TS = -62135596800.0   # 0001-01-01T00:00:00Z
MAX_TS = 253402300799.0   # 9999-12-31T23:59:59Z


def check_kwargs(kwargs: Mapping[str, Any]) -> None:
    """Raise ValueError for a numeric time outside the years 1-9999."""
    for name, value in kwargs.items():
        if name in TIME_ARGS and isinstance(value, (int, float)) and not isinstance(value, bool):
            if not MIN_TS <= value <= MAX_TS:
                raise ValueError(f"{name}={value!r} is not a time remem can use: pass a datetime, an ISO date or "
                                 f"a Unix timestamp between years 1 and 9999")


__all__ = ["TIME_ARGS", "check_kwargs"]
