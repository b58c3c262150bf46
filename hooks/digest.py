"""The project digest: the last session's summary, then decisions, open threads and lessons.

It is injected once per context: with the first prompt of a session (together with that prompt's recall, so it
leaves out what the recall brings) and again at SessionStart after a compaction. Sized by tiktoken's count, as
every budget is: the service keeps the tokenizer loaded, and a hook in its own process loads it while it opens
the store (:func:`preload_tokenizer`).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

from .callenv import served
from .common import MAX_CONTEXT_CHARS

DIGEST_PREAMBLE = "remem project memory (from earlier Claude Code sessions; may be outdated):"
_OPEN_TAGS = {"open", "todo", "open-thread", "open_thread", "followup", "follow-up", "next", "unresolved"}
_SECTIONS = (("Decisions", 8), ("Open threads", 5), ("Lessons", 5))
_WORD = re.compile(r"\w+", re.UNICODE)


_loading: threading.Thread | None = None


def preload_tokenizer() -> None:
    """Start loading the tokenizer (~150 ms) in a thread, so that a hook in its own process loads it while it
    opens the store and searches; the service has it loaded already."""
    global _loading
    if _loading is None and served() is None:
        from ..core.recall.tokens import encoding

        _loading = threading.Thread(target=encoding, name="remem-tokenizer", daemon=True)
        _loading.start()


def token_count(text: str) -> int:
    """The tokens ``text`` takes, by tiktoken (cl100k), as every budget in remem is counted."""
    if _loading is not None:
        _loading.join()
    from ..core.recall.tokens import count_tokens

    return count_tokens(text)


def said(text: str) -> str:
    """A text's words, lowercased: what it says, for spotting one memory quoting another."""
    return " ".join(_WORD.findall(text.lower()))


def covered(words: str, already: list[str]) -> bool:
    """Whether ``words`` says nothing beyond one of ``already`` (or is quoted whole by it, or quotes it)."""
    if not words:
        return False
    padded = f" {words} "
    return any(padded in f" {other} " or f" {other} " in padded for other in already if other)


def _section(rec: Any) -> str | None:
    tags = {t.lower() for t in getattr(rec, "tags", ())}
    meta = getattr(rec, "metadata", {}) or {}
    if tags & _OPEN_TAGS or str(meta.get("status", "")).lower() == "open":
        return "Open threads"
    return {"decision": "Decisions", "lesson": "Lessons"}.get(rec.kind)


def day(rec: Any) -> str:
    when = getattr(rec, "occurred_at", None) or getattr(rec, "valid_from", None) or rec.created_at
    return when.strftime("%Y-%m-%d")


def build_digest(records: list[Any], budget_tokens: int, now: float | None = None,
                 keep: Callable[[Any], bool] | None = None) -> tuple[str, list[Any]]:
    """(digest text, the records it shows). ``keep`` filters records out (already shown, recalled now)."""
    now = now or time.time()
    records = [r for r in records if getattr(r, "superseded_by", None) is None and (keep is None or keep(r))]

    def rank(rec: Any) -> float:
        age_days = max(0.0, (now - rec.created_at.timestamp()) / 86400)
        return rec.importance / 10 + 0.5 ** (age_days / 14)

    groups: dict[str, list[Any]] = {name: [] for name, _ in _SECTIONS}
    summary = next((r for r in records if r.kind == "summary"), None)  # records come newest first
    for rec in records:
        name = _section(rec)
        if name:
            groups[name].append(rec)
    lines = [DIGEST_PREAMBLE]
    used_records: list[Any] = []
    used = token_count(lines[0])

    def add(line: str) -> bool:
        nonlocal used
        cost = token_count(line + "\n")
        if used + cost > budget_tokens:
            return False
        lines.append(line)
        used += cost
        return True

    seen: list[str] = []
    if summary is not None and add(f"Last session ({day(summary)}): {' '.join(summary.text.split())[:600]}"):
        used_records.append(summary)
        seen.append(said(summary.text))
    for name, cap in _SECTIONS:
        chosen = [r for r in sorted(groups[name], key=rank, reverse=True) if not covered(said(r.text), seen)][:cap]
        if not chosen or not add(f"{name}:"):
            continue
        for rec in chosen:
            if not add(f"- [{day(rec)}] {' '.join(rec.text.split())}"):
                break
            used_records.append(rec)
            seen.append(said(rec.text))
        if lines[-1] == f"{name}:":
            lines.pop()
    if len(lines) == 1:
        return "", []
    return "\n".join(lines)[:MAX_CONTEXT_CHARS], used_records


__all__ = ["DIGEST_PREAMBLE", "build_digest", "day"]
