"""Episodes: what was actually said, kept next to what was distilled from it.

``remember()`` stores every user and assistant message of a capture (redacted; tool calls and outputs are not
kept) as an ``episode`` record in the capture's scope. An episode carries its message id in ``sources`` (so a
distilled memory's ``sources`` point at episodes, and a hit on either resolves to the same message ids), its
``occurred_at`` (the message's timestamp), its session and position in ``metadata``, and the messages around
it as recall ``context``: an answer is found by its question, and a question by its answer. The two messages
before it are known when it is stored; their ids are its ``metadata["follows"]`` (nearest last), and recall
joins an episode and the ones it follows into one passage when both are found
(:mod:`remem.core.recall.passages`). The two after it are added as they are said: from the same capture, or,
for a capture that only sends what is new (hooks, framework adapters), by rewriting the last stored episodes'
context and BM25 vector when the next capture arrives (no re-embedding: the dense vector is the text's alone).
Their ids are ``metadata["followed_by"]``, nearest first. Nothing is known before it is said: a search between
two captures finds the last messages by their past alone, as a live capture knows them (LoCoMo through
``remember()``, minilm: evidence recall_any@10 0.866 with the past only, 0.877 with two messages after).

Message ids: the message's own ``"id"`` when it has one; otherwise a stable hash of the session, the role and
speaker, the timestamp, the text and how many identical messages came before it in the capture. The position
is deliberately not part of the hash: hooks and framework adapters send each new part of a conversation on its
own, so a message's position within a capture is not stable, but its content and time are.

Idempotent: episodes already stored for a session are looked up by id (``sources`` is keyword-indexed) and
skipped before anything is embedded (an id shaped like a UUID is looked up in every session of the scope: the
copies a forked conversation starts with are not stored again); an exact repeat that slips through a race is
merged by the engine's content-hash de-duplication (the metadata ``message_id`` differs between different
messages, so two turns that say the same words are never merged with each other).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

from .admission import check_admission
from .conversation import Turn
from ..recall.passages import CONTEXT_AFTER, CONTEXT_TURN_TOKENS, CONTEXT_TURNS, clipped, message_id, said_order
from ..scope import own_records
from ..types import MemoryRecord, RememError, Scope
from ..store.erasure import one_write

log = logging.getLogger("remem.distill.episodes")

EPISODE_KIND = "episode"
SPOKEN_ROLES = ("user", "assistant")
EPISODE_MAX_TOKENS = 1500  # an episode is a message, not a file dump: long ones keep their head and tail
EPISODE_IMPORTANCE = 4
MAX_ID_CHARS = 200
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
# said, but not worth recalling on its own ("Thanks!", "Sure, I'll take a look."): kept only as the next
# message's context
_SAYS_NOTHING = frozenset({"empty", "too_short", "pleasantry", "only_redacted"})
# what a memory must not be (the assistant narrating, "You are a ..."), but a message that goes on past its
# opener said something: "Here's a picture I took last summer in Bogota ..." (LoCoMo: 16 of the 23 messages
# that open so say more, 5 of them the evidence of a question; they were lost). The user does not narrate:
# "Ok, let me switch the queue to Postgres." is a decision, kept whatever its length
_OPENERS = frozenset({"restated_instruction", "system_prompt"})
OPENER_ONLY_WORDS = 12  # fewer words than this after such an opener: the opener is all the assistant says


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()


def assign_ids(turns: Sequence[Turn], session: str) -> list[Turn]:
    """Every user/assistant turn with an id: its message's own, or a stable derived one (see module doc).

    A message that yields several text turns (text, tool call, more text) keeps its id on the first and
    ``<id>#<n>`` on the others."""
    out: list[Turn] = []
    own_seen: dict[str, int] = {}
    derived_seen: dict[tuple[Any, ...], int] = {}
    for t in turns:
        if t.role not in SPOKEN_ROLES:
            out.append(t)
            continue
        if t.id:
            n = own_seen.get(t.id, 0)
            own_seen[t.id] = n + 1
            tid = t.id if n == 0 else f"{t.id}#{n}"
            if len(tid) > MAX_ID_CHARS:
                tid = "msg-" + _hash(tid)[:24]
        else:
            key = (t.role, t.speaker or "", t.at.isoformat() if t.at else "", " ".join(t.text.split()))
            n = derived_seen.get(key, 0)
            derived_seen[key] = n + 1
            tid = "msg-" + _hash(session, *key, str(n))[:20]
        out.append(replace(t, id=tid))
    return out


def spoken(turns: Iterable[Turn]) -> list[Turn]:
    return [t for t in turns if t.role in SPOKEN_ROLES and t.text.strip()]


def said(t: Turn) -> str:
    """The episode text: what was said, prefixed with the speaker's name when the message had one."""
    text = t.text.strip()
    return f"{t.speaker}: {text}" if t.speaker else text


def worth_keeping(text: str, role: str = "assistant") -> bool:
    """False for what is said but says nothing later (greetings, thanks; the assistant's "Sure, I'll look");
    what was said is otherwise kept, even when it opens the way a narration or a system prompt does."""
    reason = check_admission(text.strip()[:2000]).reason
    if reason in _OPENERS:
        return role == "user" or len(text.split()) >= OPENER_ONLY_WORDS
    return reason not in _SAYS_NOTHING


def existing_ids(engine: Any, scope: Scope, session: str, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` are stored already as episodes of ``session`` (looked up by the indexed ``sources``), or,
    for an id shaped like a UUID, as an episode of any session of ``scope``: a UUID names one message wherever
    it appears, and a forked or resumed conversation (Claude Code's ``--fork-session``, a copied thread) starts
    with copies of messages that are stored already."""
    unique = [i for i in ids if _UUID.fullmatch(i)]
    own = [i for i in ids if not _UUID.fullmatch(i)]
    return _stored_ids(engine, scope, unique, {}) | _stored_ids(engine, scope, own, {"meta.session": session})


def all_stored(engine: Any, scope: Scope, session: str, turns: Sequence[Any]) -> bool:
    """Whether every message of ``turns`` is stored already: a capture that starts as the last one did ("run the
    tests", again) but says something new is no older snapshot, though its first message hashes alike."""
    ids = [t.id for t in spoken(turns) if t.id]
    return len(existing_ids(engine, scope, session, ids)) == len(set(ids))


def _stored_ids(engine: Any, scope: Scope, ids: Sequence[str], where: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), 256):
        chunk = list(ids[start:start + 256])
        try:
            recs = engine.list(scope=scope, kind=EPISODE_KIND, limit=len(chunk) * 2,
                               where={"sources": chunk, **where, **own_records(scope)})
        except (RememError, ValueError) as exc:  # a lookup failure must not lose the capture: store them
            log.debug("episode lookup failed: %s", exc)
            continue
        for rec in recs:
            found.update(rec.sources)
    return found


def earlier_episodes(engine: Any, scope: Scope, session: str) -> list[MemoryRecord]:
    """The last episodes stored for ``session`` by earlier captures, in the order said: the past of a capture
    that only sends what is new (hooks, framework adapters), and the ones still waiting for what follows."""
    try:
        # this scope's own: a tenant-wide session must not read (and then write into) a user's of the same name
        recs = engine.list(scope=scope, kind=EPISODE_KIND, where={"meta.session": session, **own_records(scope)},
                           limit=CONTEXT_TURNS * 2)
    except (RememError, ValueError) as exc:
        log.debug("episode context lookup failed: %s", exc)
        return []
    return sorted(recs, key=said_order)[-max(CONTEXT_TURNS, CONTEXT_AFTER):]


def said_before(earlier: Sequence[MemoryRecord]) -> list[tuple[str, str]]:
    """``earlier`` as the (text, message id) history ``episode_items`` takes as ``before``."""
    return [(r.text, message_id(r) or "") for r in earlier[-CONTEXT_TURNS:]]


def _next_said(since: Sequence[MemoryRecord], said_now: Sequence[Turn], stored: set[str]) -> list[Turn]:
    """What a capture (its spoken turns ``said_now``) says after ``since[0]``, one of the session's last stored
    episodes (``since``: it and those stored after it, in the order said): the messages after the latest of
    them the capture holds (a resent history, a sliding window, a part repeating the last message); all of them
    when the capture holds none of the session's stored messages (``stored``: those of its ids stored before
    it), so it is the next part; else nothing (an older part sent again)."""
    ids = [t.id for t in said_now]
    held = [mid for mid in map(message_id, since) if mid and mid in ids]
    if held:
        return list(said_now[max(ids.index(mid) for mid in held) + 1:])
    return [] if stored & set(ids) else list(said_now)


def _with_after(context: str | None, nexts: Sequence[Turn]) -> str | None:
    parts = [context] if context else []
    parts += [clipped(said(t), CONTEXT_TURN_TOKENS) for t in nexts]
    return " ".join(parts) or None


def extend_after(engine: Any, scope: Scope, earlier: Sequence[MemoryRecord], turns: Sequence[Turn],
                 stored: set[str]) -> None:
    """Give the episodes earlier captures stored the messages the capture ``turns`` says after them (see the
    module doc and :func:`_next_said`). A failure is logged, never raised: the capture itself is stored
    already."""
    said_now = spoken(turns)
    for i, seen in enumerate(earlier):
        if len(seen.metadata.get("followed_by") or ()) >= CONTEXT_AFTER:
            continue  # complete already (what follows a message only grows)
        try:
            with one_write(engine):  # read and write as one: a neighbour forgotten meanwhile stays forgotten
                rec = engine.get(seen.id, scope=scope)
                have = [str(v) for v in rec.metadata.get("followed_by") or ()]
                mid = message_id(rec)
                nexts = [t for t in _next_said(earlier[i:], said_now, stored) if t.id not in have and t.id != mid]
                nexts = nexts[:max(0, CONTEXT_AFTER - len(have))]
                if nexts:
                    engine.update(rec.id, scope=scope, context=_with_after(rec.context, nexts),
                                  metadata={"followed_by": [*have, *(str(t.id) for t in nexts)]})
        except (RememError, ValueError) as exc:
            log.debug("could not add what followed episode %s: %s", seen.id, exc)


def episode_items(turns: Sequence[Turn], new: Sequence[Turn], *, session: str, offset: int,
                  before: Sequence[tuple[str, str]] = (), metadata: Mapping[str, Any] | None = None,
                  tags: Sequence[str] = (), source: str | None = None) -> list[dict[str, Any]]:
    """``add_many`` items for the spoken turns of ``new`` (a tail of ``turns``, the whole capture), each with
    the ``CONTEXT_TURNS`` messages before it and the ``CONTEXT_AFTER`` after it in ``turns`` as context
    (``before``: the session's earlier messages, as (text, id))."""
    new_ids = {t.id for t in new}
    said_now = spoken(turns)
    history: list[tuple[str, str]] = [*before]
    items: list[dict[str, Any]] = []
    for i, t in enumerate(said_now):
        text = said(t)
        if t.id in new_ids and worth_keeping(t.text, t.role):
            past = history[-CONTEXT_TURNS:]
            nexts = said_now[i + 1:i + 1 + CONTEXT_AFTER]
            ctx = _with_after(" ".join(clipped(h, CONTEXT_TURN_TOKENS) for h, _ in past), nexts)
            meta: dict[str, Any] = {**(metadata or {}), "session": session, "position": offset + max(0, t.index),
                                    "role": t.role, "message_id": t.id, "followed_by": [str(n.id) for n in nexts]}
            if any(mid for _, mid in past):
                meta["follows"] = [mid for _, mid in past if mid]
            if t.speaker:
                meta["speaker"] = t.speaker
            kept = clipped(text, EPISODE_MAX_TOKENS) if len(text) > 4 * EPISODE_MAX_TOKENS else text
            if kept != text:  # said so on the record: its head and tail were kept, not all of it
                meta["clipped_from_chars"] = len(text)
            items.append({"text": kept,
                          "kind": EPISODE_KIND, "tags": list(tags), "importance": EPISODE_IMPORTANCE,
                          "metadata": meta, "source": source, "context": ctx, "sources": [t.id],
                          "occurred_at": t.at})
        history.append((text, str(t.id or "")))
    return items


def store_episodes(engine: Any, scope: Scope, items: list[dict[str, Any]], have: set[str]) -> list[MemoryRecord]:
    """Store the items whose message is not among ``have`` (the ids stored already, see :func:`existing_ids`);
    one ``add_many`` (embeddings in batches)."""
    if not items:
        return []
    todo = [it for it in items if it["sources"][0] not in have]
    if not todo:
        return []
    for it in todo:
        if it.get("occurred_at") is None:
            it.pop("occurred_at")
        if not it.get("context"):
            it.pop("context", None)
    add_many = getattr(engine, "add_many", None)
    if callable(add_many):
        return list(add_many(todo, scope=scope))
    return [engine.add(it.pop("text"), scope=scope, **it) for it in todo]


def keep_episodes(engine: Any, scope: Scope, session: str, turns: Sequence[Turn], new: Sequence[Turn], *,
                  offset: int, stored: bool, whole: bool, metadata: Mapping[str, Any] | None = None,
                  tags: Sequence[str] = (), source: str | None = None) -> list[MemoryRecord]:
    """Store the spoken messages of ``new`` (the new tail of the capture ``turns``) as episodes, and give the
    session's last stored episodes what was said after them. ``stored``: earlier captures of this session
    exist; ``whole``: ``turns`` holds the session from its start (else only its new part, whose past is
    looked up)."""
    ids = [str(t.id) for t in spoken(turns)]
    with _lock_for(scope, session):  # two captures of one session at once: each sees what the other stored
        earlier = earlier_episodes(engine, scope, session) if stored else []
        have = existing_ids(engine, scope, session, ids)
        before = [] if whole else [b for b in said_before(earlier) if b[1] not in ids]  # not said twice
        items = episode_items(turns, new, session=session, offset=offset, before=before, metadata=metadata,
                              tags=tags, source=source)
        kept = store_episodes(engine, scope, items, have)
        extend_after(engine, scope, earlier, turns, have)
    return kept


_LOCKS = tuple(threading.Lock() for _ in range(64))


def _lock_for(scope: Scope, session: str) -> threading.Lock:
    """One of a fixed set of locks, by scope and session: captures of one session take turns (in this process;
    the local service is the one process that writes a shared store)."""
    return _LOCKS[hash((scope.stored_tenant, scope.user, scope.agent, session)) % len(_LOCKS)]


__all__ = ["CONTEXT_AFTER", "CONTEXT_TURNS", "EPISODE_KIND", "assign_ids", "earlier_episodes", "episode_items",
           "all_stored", "existing_ids", "extend_after", "keep_episodes", "said", "said_before", "spoken",
           "store_episodes"]
