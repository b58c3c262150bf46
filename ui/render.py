"""Jinja2 templates with autoescaping, and the small formatting helpers the pages share."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.responses import HTMLResponse

TEMPLATES = Path(__file__).parent / "templates"
MAX_CELL_CHARS = 400


def when(value: _dt.datetime | None, with_time: bool = True) -> str:
    if value is None:
        return "—"
    value = value.astimezone(_dt.timezone.utc)
    return value.strftime("%Y-%m-%d %H:%M UTC" if with_time else "%Y-%m-%d")


def epoch(value: float | None) -> str:
    return when(_dt.datetime.fromtimestamp(value, tz=_dt.timezone.utc)) if value else "—"


def short(text: str, limit: int = MAX_CELL_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def qs(params: Mapping[str, Any] | None = None, **more: Any) -> str:
    merged = {**(params or {}), **more}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def event_time(rec: Any) -> _dt.datetime | None:
    """When the thing happened, if the record says: ``occurred_at`` (newer stores) or a ``valid_from`` that
    differs from the stored time."""
    occurred = getattr(rec, "occurred_at", None)
    if occurred is not None:
        return occurred
    vf = getattr(rec, "valid_from", None)
    if vf is not None and abs((vf - rec.created_at).total_seconds()) > 1:
        return vf
    return None


def recall_date(rec: Any) -> _dt.datetime:
    """The date recall shows for a memory: when it happened, else when it became true or was stored."""
    return rec.event_time


_env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(default=True),
                   trim_blocks=True, lstrip_blocks=True)
_env.filters.update(when=when, epoch=epoch, short=short, as_json=as_json)
_env.globals.update(qs=qs, event_time=event_time, recall_date=recall_date)


def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(**context), status_code=status)


__all__ = ["as_json", "event_time", "page", "qs", "short", "when"]
