"""The remem memory inspector: a local web page to see, search and correct what a store holds.

``remem ui`` serves it on 127.0.0.1 behind a one-time token; :func:`create_app` builds the Starlette app for a
:class:`remem.Memory` and :class:`Inspector` runs it in a thread (tests, benchmarks, screenshots).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Inspector", "create_app"]


def __getattr__(name: str) -> Any:  # Starlette and uvicorn load only when the inspector is used
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "Inspector":
        from .server import Inspector

        return Inspector
    raise AttributeError(f"module 'remem.ui' has no attribute {name!r}")
