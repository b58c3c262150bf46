"""UserPromptSubmit (recall for the prompt) and SessionStart (digest of the project's memory).

Both inject text into Claude's context and both sit on the user's critical path, so they run the memory work in
a daemon thread under an in-process deadline: past it the hook injects nothing and exits 0 (the prompt always
goes through). No LLM is called here; recall is one hybrid search in the project's tenant, cut to a token
budget by the engine. remem itself is imported only once a hook knows it has work to do.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any, Callable

from .common import (DEFAULT_DIGEST_DEADLINE, DEFAULT_DIGEST_TOKENS, DEFAULT_RECALL_DEADLINE,
                     DEFAULT_RECALL_TOKENS, MAX_CONTEXT_CHARS, HookInput, elapsed, env_float, env_int, hooks_dir,
                     log, read_json, safe_name, write_json)

RECALL_PREAMBLE = ("remem recalled these memories from earlier Claude Code sessions in this project "
                   "(they may be outdated; trust the code and the user over them):")
DIGEST_PREAMBLE = "remem project memory (from earlier Claude Code sessions; may be outdated):"
_TRIVIAL = {"ok", "okay", "k", "yes", "y", "yep", "yeah", "no", "n", "nope", "thanks", "thank you", "thx", "ty",
            "continue", "go on", "go ahead", "proceed", "sure", "lgtm", "done", "next", "cool", "great", "nice",
            "perfect", "good", "do it", "ship it", "retry", "try again", "again", "hi", "hello", "hey", "stop",
            "wait", "please continue", "keep going", "sounds good", "looks good", "makes sense", "agreed"}
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_CHARS = 1_500


def is_trivial(prompt: str) -> bool:
    """Prompts not worth a memory search: empty, slash commands, acknowledgements, a word or two."""
    text = (prompt or "").strip()
    if not text or text.startswith("/"):
        return True
    words = _WORD.findall(text.lower())
    if not words or " ".join(words) in _TRIVIAL:
        return True
    return len(words) < 3 and len(text) < 16


class DeadlineExceeded(Exception):
    pass


def with_deadline(fn: Callable[[], Any], seconds: float) -> Any:
    """Run ``fn`` in a daemon thread and wait at most ``seconds``; raise DeadlineExceeded after that.

    The abandoned thread dies with the process (hooks end with ``os._exit``), so a slow store or a cold model
    load can never hold the user's prompt.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=run, name="remem-hook", daemon=True)
    worker.start()
    worker.join(max(0.0, seconds))
    if worker.is_alive():
        raise DeadlineExceeded(f"gave up after {seconds:.2f}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _open(deadline_s: float) -> Any:
    from .capture import open_memory

    return open_memory(time.monotonic() + max(0.0, deadline_s - elapsed()))


# ---------------------------------------------------------------------------------------------- recall
def last_recall_path(tenant: str) -> Path:
    return hooks_dir() / "last_recall" / f"{safe_name(tenant)}.json"


def _context(prompt: str, tenant: str, budget: int, deadline_s: float) -> str:
    from remem import Scope

    mem = _open(deadline_s)
    try:
        query = prompt.strip()[:MAX_QUERY_CHARS]
        scope = Scope(tenant=tenant)
        # auto-recall does not reinforce what it injects (that would feed on itself)
        return mem.context(query, scope=scope, token_budget=budget, reinforce=False) or ""
    finally:
        mem.close()


def recall(inp: HookInput) -> str | None:
    """The additionalContext for this prompt, or None. Records the outcome for ``/memory last``."""
    if is_trivial(inp.prompt):
        log("recall", "skipped: trivial prompt or slash command")
        return None  # the last-recall record stays: `/memory last` itself is a slash command
    tenant = inp.tenant
    budget = env_int("REMEM_HOOK_RECALL_TOKENS", DEFAULT_RECALL_TOKENS)
    deadline = env_float("REMEM_HOOK_RECALL_DEADLINE", DEFAULT_RECALL_DEADLINE)
    status, text = "ok", ""
    try:
        text = with_deadline(lambda: _context(inp.prompt, tenant, budget, deadline), deadline - elapsed())
    except DeadlineExceeded as exc:
        status = f"deadline: {exc}"
    except Exception as exc:  # noqa: BLE001 - recall failure means no memory, never a broken prompt
        status = f"error: {type(exc).__name__}: {str(exc)[:200]}"
    count = sum(1 for line in text.splitlines() if line.startswith("- ")) if text else 0
    _record(tenant, inp.session_id, status, text, count)
    if status != "ok":
        raise RuntimeError(status)
    if not text:
        log("recall", "no matching memories")
        return None
    out = f"{RECALL_PREAMBLE}\n{text}"
    log("recall", "injected", memories=count, chars=len(out))
    return out[:MAX_CONTEXT_CHARS]


def _record(tenant: str, session: str, status: str, text: str, count: int) -> None:
    try:
        write_json(last_recall_path(tenant), {"tenant": tenant, "session": session, "at": time.time(),
                                              "status": status, "memories": count, "context": text,
                                              "ms": round(elapsed() * 1000, 1)})
    except OSError as exc:
        log("recall", f"could not record the last recall: {exc}")


def last_recall(tenant: str) -> dict[str, Any] | None:
    data = read_json(last_recall_path(tenant))
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------------------------------------- digest
_OPEN_TAGS = {"open", "todo", "open-thread", "open_thread", "followup", "follow-up", "next", "unresolved"}
_SECTIONS = (("Decisions", 8), ("Open threads", 5), ("Lessons", 5))


def _section(rec: Any) -> str | None:
    tags = {t.lower() for t in getattr(rec, "tags", ())}
    meta = getattr(rec, "metadata", {}) or {}
    if tags & _OPEN_TAGS or str(meta.get("status", "")).lower() == "open":
        return "Open threads"
    return {"decision": "Decisions", "lesson": "Lessons"}.get(rec.kind)


def _day(rec: Any) -> str:
    when = getattr(rec, "valid_from", None) or rec.created_at
    return when.strftime("%Y-%m-%d")


def build_digest(records: list[Any], budget_tokens: int, now: float | None = None) -> str:
    """Last session's summary, then decisions, open threads and lessons, most important and recent first.

    Sized by characters (~3.5 a token) so SessionStart never pays for loading a tokenizer.
    """
    now = now or time.time()
    records = [r for r in records if getattr(r, "superseded_by", None) is None]

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
    limit = int(budget_tokens * 3.5)
    used = len(lines[0])

    def add(line: str) -> bool:
        nonlocal used
        if used + len(line) + 1 > limit:
            return False
        lines.append(line)
        used += len(line) + 1
        return True

    if summary is not None:
        add(f"Last session ({_day(summary)}): {' '.join(summary.text.split())[:600]}")
    for name, cap in _SECTIONS:
        chosen = sorted(groups[name], key=rank, reverse=True)[:cap]
        if not chosen or not add(f"{name}:"):
            continue
        for rec in chosen:
            if not add(f"- [{_day(rec)}] {' '.join(rec.text.split())}"):
                break
        if lines[-1] == f"{name}:":
            lines.pop()
    if len(lines) == 1:
        return ""
    return "\n".join(lines)[:MAX_CONTEXT_CHARS]


def _records(tenant: str, deadline_s: float) -> list[Any]:
    from remem import Scope

    mem = _open(deadline_s)
    try:
        return list(mem.list(scope=Scope(tenant=tenant), limit=100, include_superseded=False))
    finally:
        mem.close()


def digest(inp: HookInput) -> str | None:
    tenant = inp.tenant
    deadline = env_float("REMEM_HOOK_DIGEST_DEADLINE", DEFAULT_DIGEST_DEADLINE)
    budget = env_int("REMEM_HOOK_DIGEST_TOKENS", DEFAULT_DIGEST_TOKENS)
    try:
        records = with_deadline(lambda: _records(tenant, deadline), deadline - elapsed())
    except DeadlineExceeded as exc:
        raise RuntimeError(f"deadline: {exc}") from None
    text = build_digest(records, budget)
    log("digest", "injected" if text else "nothing to inject", source=inp.source, records=len(records))
    return text or None
