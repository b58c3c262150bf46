"""The keyless session summary: what the user asked, how it ended, and the files, commands and errors touched.

Kept as structured parts in the summary's metadata, so a later capture of the same session extends them
(:func:`merge_parts`) instead of summarising again from what it alone saw.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..admission import admit
from ..artifacts import extract_identifiers
from ..conversation import Turn
from .said import clip_words, ended, split_sentences
from ..third_person import LEAD_RE
from ...recall.tokens import truncate_to_tokens

_REQUEST_RE = re.compile(r"\?\s*$|\b(?:can|could|would|will) you\b|\bplease\b|\bhelp\b|\bhow (?:do|can|to|should)\b|"
                         r"\bi (?:want|need|would like|'d like)\b|^(?:let'?s|fix|add|write|create|make|implement|build|"
                         r"update|change|remove|delete|refactor|explain|find|show|run|set up|setup|install|debug|"
                         r"review|rename|move|convert|generate|test|check|investigate|deploy|migrate|tell me|why|what|"
                         r"where|when|which|who)\b", re.I)
"""A sentence that asks for something: the summary says "The user asked" rather than "said"."""


SHOWN_REQUESTS = 2  # a summary shows its first two requests and its last two


def summary_parts(turns: Sequence[Turn]) -> dict[str, Any]:
    """Structured pieces of the session summary (kept in its metadata so later captures can extend it): the
    requests it can show, each with the id of the message it quotes (the summary's ``sources``, so a forget of
    that message finds it), the outcome, what was touched."""
    requests: list[str] = []
    ids: list[str] = []
    for t in turns:
        if t.role != "user" or not admit(t.text.strip()[:600]):
            continue
        sents = [LEAD_RE.sub("", x).strip() for x in split_sentences(t.text) if admit(x)]
        asks = [x for x in sents if _REQUEST_RE.search(x)]
        picked = sents[:1] + [a for a in asks[:1] if a not in sents[:1]]  # context + the actual ask
        req = " ".join(clip_words(x, 25) for x in picked)
        if req and req not in requests:
            requests.append(req)
            ids.append(t.id or "")
    outcome, outcome_id = "", ""
    for t in reversed(turns):
        if t.role == "assistant":
            sents = [s for s in split_sentences(t.text) if admit(s)]
            if sents:
                outcome, outcome_id = clip_words(" ".join(sents[:2]), 45), t.id or ""
                break
    found = extract_identifiers(turns)
    return _shown_only({"requests": requests, "request_ids": ids, "outcome": outcome, "outcome_id": outcome_id,
                        "named_in": _naming(turns, found), **found})


def _naming(turns: Sequence[Turn], found: Mapping[str, list[str]]) -> list[str]:
    """The ids of the messages that said a file, command or error the summary keeps (a forget of one by its id
    must reach the summary)."""
    kept = {v for values in found.values() for v in values}
    return [t.id for t in turns if t.id and t.role in ("user", "assistant")
            and kept & {v for values in extract_identifiers([t]).values() for v in values}]


def _shown_only(parts: dict[str, Any]) -> dict[str, Any]:
    """``parts`` with only the requests a summary shows (the first two and the last two; "…" for the others):
    the words of one it no longer shows are not kept."""
    requests, ids = list(parts.get("requests") or []), list(parts.get("request_ids") or [])
    ids = (ids + [""] * len(requests))[:len(requests)]
    if len(requests) > 2 * SHOWN_REQUESTS:
        keep = [*range(SHOWN_REQUESTS), *range(len(requests) - SHOWN_REQUESTS, len(requests))]
        parts = {**parts, "more": True}
        requests, ids = [requests[i] for i in keep], [ids[i] for i in keep]
    return {**parts, "requests": requests, "request_ids": ids}


def merge_parts(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """``old`` parts (a stored summary's) extended with ``new`` ones: lists joined without repeats, the newest outcome."""
    if not old:
        return dict(new)
    out: dict[str, Any] = {}
    for key in ("files", "commands", "errors", "tools"):
        merged: list[str] = []
        for item in [*(old.get(key) or []), *(new.get(key) or [])]:
            if isinstance(item, str) and item not in merged:
                merged.append(item)
        out[key] = merged
    said: dict[str, str] = {}  # request -> the id of the message it quotes
    for parts in (old, new):
        reqs = [r for r in parts.get("requests") or [] if isinstance(r, str)]
        for req, rid in zip(reqs, [*(parts.get("request_ids") or []), *[""] * len(reqs)]):
            said.setdefault(req, str(rid or ""))
    newest = new if new.get("outcome") else old
    out["outcome"], out["outcome_id"] = newest.get("outcome") or "", newest.get("outcome_id") or ""
    out["named_in"] = list(dict.fromkeys([*(old.get("named_in") or []), *(new.get("named_in") or [])]))[-48:]
    more = bool(old.get("more") or new.get("more"))
    return _shown_only({**out, "requests": list(said), "request_ids": list(said.values()),
                        **({"more": True} if more else {})})


def render_summary(parts: Mapping[str, Any], max_tokens: int = 300) -> str | None:
    """The summary as one text within ``max_tokens``: the first request, the later ones, the outcome, what was touched."""
    requests = list(parts.get("requests") or [])
    if not requests and not parts.get("outcome"):
        return None
    bits = []
    if requests:
        verb = "asked" if _REQUEST_RE.search(requests[0]) else "said"
        bits.append(f"Session summary. The user {verb}: {ended(requests[0])}")
        later = requests[1:]
        if len(later) > 3 or (parts.get("more") and len(later) > 1):
            later = [later[0], "…", *later[-2:]]
        if later:
            bits.append("Then: " + " ".join(ended(r) for r in later))
    else:
        bits.append("Session summary.")
    if parts.get("outcome"):
        bits.append(f"Outcome: {ended(parts['outcome'])}")
    for key, label, n in (("files", "Files", 8), ("commands", "Commands", 5), ("errors", "Errors seen", 3)):
        items = list(parts.get(key) or [])[:n]
        if items:
            bits.append(f"{label}: " + ", ".join(f"`{i}`" if key == "commands" else i for i in items) + ".")
    return truncate_to_tokens(" ".join(bits), max_tokens, keep="head")


__all__ = ["merge_parts", "render_summary", "summary_parts"]
