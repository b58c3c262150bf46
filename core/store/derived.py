"""Forgetting a message forgets what was distilled from its words.

``remember()`` keeps a conversation's messages as episodes and distils memories and a session summary from them.
A memory names the messages it came from (``sources``), but an LLM's memory is attributed to its messages by the
words they share, and an LLM's summary names only the session's first and latest messages: its words may come
from any message it saw. So when messages are forgotten, so is every distilled record (not a message itself):

* whose sources are all forgotten messages (it came from nothing else), or
* of a forgotten message's session, that holds a word only the forgotten messages said there: a word no message
  of the session still stored says, which the record can only have taken from them.

A word a record shares with a message still stored is not a reason to forget it, so a fact said twice survives
the forget of one of its mentions. Records only look up their session (a keyword index), so a forget by id
stays cheap. Memories stored with ``remember(episodes=False)`` have no messages to forget: use
``forget(where={"sources": [...]})`` for them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..types import MemoryRecord
from . import erasure
from .records import from_payload

_WORD = re.compile(r"[^\W_]+(?:['.-][^\W_]+)*")
PARTS = "parts"  # what a keyless summary quotes, kept to extend it later (the rest of its metadata is bookkeeping)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def words(text: str) -> set[str]:
    """The words of ``text``, lowercased (a version "16.2", a name "o'brien", a host "db-1" each one word)."""
    return set(_WORD.findall(text.lower()))


@dataclass
class Derived:
    """What goes with forgotten messages: records to forget, and session summaries to rewrite without them."""
    gone: list[MemoryRecord] = field(default_factory=list)
    summaries: list[tuple[MemoryRecord, set[str], set[str]]] = field(default_factory=list)  # (rec, words, ids)

    def rewrite(self, engine: Any) -> None:
        """Each summary rewritten without the sentences (and ``parts``) that hold the forgotten words, and without
        the forgotten ids in its sources. It is kept, not forgotten: it carries where a live capture of the
        session goes on from."""
        for rec, only, ids in self.summaries:
            kept = [s if not words(s) & only else "…" for s in _SENTENCE.split(rec.text)]
            text = " ".join(s for i, s in enumerate(kept) if s != "…" or i == 0 or kept[i - 1] != "…")
            engine.update(rec.id, scope=rec.scope, text=text if words(text) else "…",
                          metadata={PARTS: _scrubbed(rec.metadata.get(PARTS), only)} if PARTS in rec.metadata else None,
                          sources=[s for s in rec.sources if s not in ids])


def derived_from(engine: Any, gone: Sequence[MemoryRecord]) -> Derived:
    """The distilled records that go with the forgotten ``gone`` (see the module doc), not in ``gone`` already."""
    leaving = {r.id for r in gone}
    said: dict[tuple[Any, str], list[MemoryRecord]] = {}
    for rec in gone:
        session = rec.metadata.get("session")
        if rec.kind == "episode" and isinstance(session, str):
            said.setdefault((rec.scope, session), []).append(rec)
    out = Derived()
    for (scope, session), messages in said.items():
        found = _records(engine, engine.filter(scope, where={"metadata.session": session}))
        forgotten_ids = {s for m in messages for s in m.sources}
        kept_words = set().union(*(words(r.text) for r in found if r.kind == "episode" and r.id not in leaving))
        only_theirs = set().union(*(words(m.text) for m in messages)) - kept_words
        for rec in found:
            if rec.kind == "episode" or rec.id in leaving or rec.scope != scope:
                continue
            holds = bool(words(rec.text) & only_theirs or _holds(rec.metadata.get(PARTS), only_theirs))
            if rec.kind == "summary" and (holds or set(rec.sources) & forgotten_ids):
                out.summaries.append((rec, only_theirs, forgotten_ids))
            elif holds or (rec.sources and set(rec.sources) <= forgotten_ids):
                out.gone.append(rec)
                leaving.add(rec.id)
    return out


def forget_with_derived(engine: Any, gone: Sequence[MemoryRecord], *, dry_run: bool) -> list[MemoryRecord]:
    """Forget ``gone`` and what goes with them (under the write lock the caller holds): their neighbours'
    context rewritten first (refused whole if one cannot be), then the records deleted, then the summaries
    rewritten. Returns every record forgotten, or with ``dry_run`` that would be."""
    also = derived_from(engine, gone)
    gone = [*gone, *also.gone]
    if not dry_run:
        erasure.rewrite_neighbours(engine, [(rec, None) for rec in gone])
        for start in range(0, len(gone), 512):
            engine.backend.delete([rec.id for rec in gone[start:start + 512]])
        also.rewrite(engine)
    return gone


def _holds(value: Any, only: set[str]) -> bool:
    if isinstance(value, str):
        return bool(words(value) & only)
    if isinstance(value, Mapping):
        return any(_holds(v, only) for v in value.values())
    return isinstance(value, (list, tuple)) and any(_holds(v, only) for v in value)


def _scrubbed(value: Any, only: set[str]) -> Any:
    """``value`` (a summary's ``parts``) with every string that holds one of ``only`` replaced by "…"."""
    if isinstance(value, str):
        return "…" if words(value) & only else value
    if isinstance(value, Mapping):
        return {k: _scrubbed(v, only) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v, only) for v in value]
    return value


def _records(engine: Any, flt: Any) -> Iterable[MemoryRecord]:
    return [from_payload(f.id, f.payload) for f in engine.scan(flt)]


__all__ = ["Derived", "derived_from", "forget_with_derived", "words"]
