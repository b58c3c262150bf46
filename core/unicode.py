"""Lone surrogates: half an emoji a client cut, or bytes read with ``surrogateescape``. No UTF-8 writer (a store,
a state file, a request) can hold one, so remem repairs them to U+FFFD where text comes in, rather than lose the
message, the capture or the file it is in. A pair split in two code points is joined back into its character."""

from __future__ import annotations

from typing import Any


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD (clean text, the usual case, costs one encode)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def no_surrogates(value: Any) -> Any:
    """:func:`valid_unicode` over a string or JSON-like data (mapping keys included)."""
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, dict):
        return {no_surrogates(k): no_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [no_surrogates(v) for v in value]
    return value


__all__ = ["no_surrogates", "valid_unicode"]
