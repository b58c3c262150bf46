"""A prompt that asks about one known entity gets its profile, not scattered lines.

"What do we know about the job queue?" asks for what the project knows about one thing; the best-matching
lines are a sample of it, and may miss the later change. When a prompt is such a question about a name the
project's entities know (:meth:`remem.Memory.about`: any alias, a unique first name), the prompt hook injects
the entity's profile (what is true now, what changed, the entities beside it; fenced like every recalled
block, its header saying it is a profile) within a share of its token budget, and ordinary recall fills the
rest without the memories the profile shows.

The rule is narrow on purpose: the whole prompt must be one of the shapes below, about one name of at most
:data:`MAX_NAME_WORDS` words. Anything else (a task that mentions an entity, two names, a long prompt) gets
ordinary recall unchanged. So does an entity linked to more than ``entity_hub_share`` of a big project's
memories (a hub: the project's own name): its profile would be a random sample.

- "what do we / you / I know (or remember) about X", "what is known about X"
- "tell me (more) about X", "remind me about X", "give me a profile of X", "profile of X"
- "who is X", "who's X"
- "what's the status of X", "status of X", "X status"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAX_PROMPT_CHARS = 120
MAX_NAME_WORDS = 6
SHARE = 0.6  # of the recall budget the profile may take; recall keeps the rest (and what the profile leaves)
READ_LINES = 20  # lines of what is true now read to judge them (a 480-token profile shows about a dozen)
READ_CHANGED = 8  # lines of what changed
HUB_MIN_MEMORIES = 200  # as core.entities.hooks: a small scope has no hubs
_TAIL = r"\s*[?.!]*\s*"
_ASKS = [re.compile(p, re.I) for p in (
    rf"^(?:so\s+|and\s+|ok,?\s+)?what\s+do\s+(?:we|you|i)\s+(?:know|remember|have)\s+(?:about|on)\s+"
    rf"(?P<x>.+?){_TAIL}$",
    rf"^what\s+is\s+known\s+about\s+(?P<x>.+?){_TAIL}$",
    rf"^(?:please\s+)?(?:tell\s+me|remind\s+me)\s+(?:more\s+|everything\s+|all\s+)?about\s+(?P<x>.+?){_TAIL}$",
    rf"^(?:give\s+me\s+)?(?:a\s+)?profile\s+of\s+(?P<x>.+?){_TAIL}$",
    rf"^who(?:\s+is|'s|’s)\s+(?P<x>.+?){_TAIL}$",
    rf"^(?:what(?:'s|’s|\s+is)\s+)?the\s+status\s+of\s+(?P<x>.+?){_TAIL}$",
    rf"^status\s+of\s+(?P<x>.+?){_TAIL}$",
    rf"^(?P<x>.+?)(?:'s|’s)?\s+status{_TAIL}$",
)]
_NOT_A_NAME = re.compile(r"^(?:it|this|that|that one|this one|he|she|they|them|him|her|you|me|us|we|i|"
                         r"there|here|everything|anything|something|all|the status|going on|new)$", re.I)


def asked_about(prompt: str) -> str | None:
    """The name a profile-type prompt asks about ("Tell me about the ingest worker." -> "the ingest worker"),
    or None for any other prompt (see the module docstring for the shapes)."""
    text = " ".join((prompt or "").split())
    if not text or len(text) > MAX_PROMPT_CHARS:
        return None
    for pattern in _ASKS:
        m = pattern.match(text)
        if m:
            name = m.group("x").strip(" \"'“”‘’`")
            if name and len(name.split()) <= MAX_NAME_WORDS and not _NOT_A_NAME.match(name):
                return name
            return None
    return None


@dataclass(frozen=True)
class Profile:
    """A profile to inject: its fenced text and the memories its lines show (by id, with their text)."""

    name: str
    text: str
    shows: tuple[tuple[str, str], ...]  # (memory id, its text as shown)


def worth_reading(mem: Any, profile: Any, scope: Any, budget_tokens: int) -> Any:
    """``profile`` without the lines ordinary recall would leave out of a prompt (:mod:`remem.core.recall.worth`):
    a user's earlier question, a line that only asks or acknowledges (a summary that says only what was asked,
    an assistant's "Noted: ..." of what the user said), and one saying nearly only what a line before it says;
    rendered again within ``budget_tokens`` by ``about()``'s own renderer, so what is left has the room. The
    first :data:`READ_LINES` (and :data:`READ_CHANGED`) lines are read (``mem.get``) to know who said them; the
    rest are left out."""
    from dataclasses import replace

    from remem.core.entities.profile import render
    from remem.core.recall.repeats import contained, words
    from remem.core.recall.worth import echoes, worth_showing

    seen: list[set[str]] = []

    def keep(line: Any) -> bool:
        try:
            rec = mem.get(line.memory_id, scope=scope)
        except Exception:  # noqa: BLE001 - forgotten since (NotFoundError): not shown
            return False
        said = words(line.text)
        if not worth_showing(rec) or echoes(rec) or contained(said, seen):
            return False
        seen.append(said)
        return True

    current = tuple(x for x in profile.current[:READ_LINES] if keep(x))
    changed = tuple(x for x in profile.changed[:READ_CHANGED] if keep(x))
    if (current, changed) == (tuple(profile.current), tuple(profile.changed)):
        return profile
    kept = replace(profile, current=current, changed=changed)
    return replace(kept, text=render(kept, budget_tokens))


def fetch(mem: Any, prompt: str, scope: Any, budget_tokens: int) -> Profile | None:
    """The profile of the one known, non-hub entity ``prompt`` asks about, rendered within ``budget_tokens``
    (``Memory.about``), or None: not a profile prompt, a name the project does not know, a hub, nothing to say.
    Raises what the store raises: the caller falls back to ordinary recall."""
    name = asked_about(prompt)
    if name is None or budget_tokens <= 0:
        return None
    profile = worth_reading(mem, mem.about(name, scope=scope, token_budget=budget_tokens), scope, budget_tokens)
    entity = profile.entity
    if entity is None or not profile.text or not (profile.current or profile.changed):
        return None  # unknown, or nothing known about it but its name
    hub = float(getattr(getattr(mem, "settings", None), "entity_hub_share", 0.2))
    if entity.mentions >= hub * HUB_MIN_MEMORIES:  # only a big scope can have a hub: counted then
        total = mem.count(scope=scope)
        if total >= HUB_MIN_MEMORIES and entity.mentions > hub * total:
            return None
    shows = tuple((line.memory_id, line.text) for line in (*profile.current, *profile.changed)
                  if f"memory {line.memory_id[:8]}" in profile.text)
    return Profile(name=entity.name, text=profile.text, shows=shows)


__all__ = ["Profile", "SHARE", "asked_about", "fetch"]
