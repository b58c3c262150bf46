"""Turn a conversation into memories: facts, preferences, decisions, lessons, and one summary per session.

``remember(engine, messages, scope=..., session=...)`` is what ``Memory.remember`` runs. The pipeline:

1. **Redact** every message (secrets always, PII on request) before anything is stored or sent anywhere.
2. **Normalise** OpenAI / Anthropic / plain-text conversations into turns; skip the part of a session that an
   earlier capture already distilled (the session summary remembers how far it got).
3. **Extract** candidates: with an LLM (one structured-output call, token budgeted) or, keyless by default, with
   a deterministic extractive distiller (pattern-scored sentences plus files, commands and errors).
4. **Admit**: a gate drops greetings, restated instructions, JSON blobs, logs and stack traces.
5. **Reconcile** (LLM only): candidates with similar memories in the scope go to one batched call that says
   add / merge / supersede / drop for each; supersede keeps history (``search(as_of=...)`` still finds it).
6. **Store** the memories and create or update the session's single summary.

An LLM failure never loses the capture: the redacted messages go to the durable pending queue
(:mod:`remem.core.distill.pending`, drained by :func:`drain_pending`) and the keyless summary is stored at once.

The steps live in their own modules: :mod:`~remem.core.distill.capture_prep` (redaction, the session, what is
new), :mod:`~remem.core.distill.conversation` (messages -> turns),
:mod:`~remem.core.distill.artifacts` (files/commands/errors), :mod:`~remem.core.distill.keyless` and
:mod:`~remem.core.distill.llm_distiller` (extraction), :mod:`~remem.core.distill.admission` (the gate),
:mod:`~remem.core.distill.usage_ledger` and :mod:`~remem.core.distill.audit`. This module runs the pipeline and re-exports
their public names, so ``from remem.core.distill.pipeline import ...`` keeps working.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Iterable, Mapping, Sequence

from . import corrections, llm_claims
from .admission import MAX_MEMORY_CHARS, Admission, admit, check_admission, content_words
from .artifacts import extract_identifiers
from .audit import AuditReport, audit
from .candidates import DEFAULT_IMPORTANCE, MEMORY_KINDS, Candidate, Distillation
from .capture_prep import Prep, derive_session_id, prepare
from .conversation import Turn, conversation_turns, normalize_messages, strip_recalled, to_plain_messages
from .episodes import EPISODE_KIND, keep_episodes, spoken
from .neighbours import similar_memories
from .summaries import find_summary, quoted_messages, summary_sources
from .keyless import KeylessDistiller, split_sentences
from ..providers.llm import Usage
from .llm_distiller import EXTRACT_SCHEMA, RECONCILE_SCHEMA, Decision, LLMDistiller, render_transcript
from .pending import queue_for, store_location
from ..store.records import normalize_text
from ..recall.tokens import truncate_to_tokens
from ..types import NotFoundError, ProviderError, RememError
from .usage_ledger import USAGE_FILE, record_usage, usage_totals
from .result import RememberResult, resolve_distiller

log = logging.getLogger("remem.distill")

SUMMARY_TAG = "session"
_SUMMARY_LOCK = threading.RLock()  # two captures of one session at once must not create two summaries


def _count_into(total: dict[str, int], counts: Mapping[str, int]) -> None:
    for k, n in counts.items():
        total[k] = total.get(k, 0) + int(n)


def _store_episodes(engine: Any, prep: Prep) -> None:
    """Keep what was said (the new user/assistant messages) before anything is distilled from it."""
    if not prep.keep_episodes or not spoken(prep.new_turns):
        return
    prep.result.episodes = keep_episodes(engine, prep.scope, prep.session, prep.turns, prep.new_turns,
                                         offset=prep.offset, stored=prep.previous is not None,
                                         whole=prep.continuation, metadata=prep.metadata, tags=prep.tags,
                                         source=prep.source)


def _attribute(prep: Prep, cand: Candidate) -> None:
    """Provenance for a candidate that came without it (an LLM's): the one or two new messages that share the
    most content words with it, and their time."""
    if not cand.sources:
        words = content_words(cand.text)
        scored = sorted(((len(words & content_words(t.text)) / max(1, len(words)), i, t)
                         for i, t in enumerate(spoken(prep.new_turns)) if t.id), key=lambda x: (-x[0], x[1]))
        best = [t for s, _, t in scored[:2] if s >= 0.3 and s >= scored[0][0] * 0.75]
        cand.sources = [t.id for t in best if t.id]
    if cand.occurred_at is None and cand.sources:
        times = [t.at for t in prep.turns if t.id in cand.sources and t.at is not None]
        cand.occurred_at = max(times) if times else None


def _gate(prep: Prep, dist: Distillation) -> list[Candidate]:
    """Redact (again: LLM output is text like any other) and admit; refused ones count as dropped. An LLM's
    entities and relations are vetted with the text they came with (redacted, said in it and in the
    conversation) and go with the memory as metadata, for the entity index."""
    kept: list[Candidate] = []
    seen: set[str] = set()
    heard: str | None = None  # the conversation's names, for an LLM's entities (llm_claims.vet)
    for cand in dist.candidates:
        red = prep.redactor.redact(cand.text)
        _count_into(prep.result.redactions, red.counts)
        text = red.text.strip()
        key = normalize_text(text)
        if not admit(text) or key in seen:
            prep.result.dropped += 1
            continue
        seen.add(key)
        cand.text = text
        if cand.entities or cand.relations:
            if heard is None:
                heard = llm_claims.text_key([t.text for t in prep.new_turns]
                                            + ([prep.previous.text] if prep.previous is not None else []))
            _count_into(prep.result.redactions, llm_claims.vet(cand, prep.redactor, heard))
        kept.append(cand)
    return kept


def _memory_meta(prep: Prep, cand: Candidate, distiller_name: str) -> dict[str, Any]:
    return {**cand.metadata, **prep.metadata, "session": prep.session, "distiller": distiller_name}


def _add_candidates(engine: Any, prep: Prep, cands: Sequence[Candidate], name: str) -> None:
    """Add in one batch (one embedding call for all); the engine's de-duplication turns repeats into merges."""
    if not cands:
        return
    for c in cands:
        _attribute(prep, c)
    items = [{"text": c.text, "kind": c.kind, "tags": [*c.tags, *prep.tags], "importance": c.importance,
              "metadata": _memory_meta(prep, c, name), "source": prep.source,
              **({"sources": c.sources} if c.sources else {}),
              **({"occurred_at": c.occurred_at} if c.occurred_at is not None else {})} for c in cands]
    for rec in engine.add_many(items, scope=prep.scope):
        (prep.result.merged if rec.merged_count > 0 else prep.result.added).append(rec)


def _apply(engine: Any, prep: Prep, cands: Sequence[Candidate], decisions: Sequence[Decision] | None,
           name: str) -> None:
    by_index = {d.index: d for d in decisions or ()}
    to_add: list[Candidate] = []
    for i, cand in enumerate(cands):
        d = by_index.get(i, Decision(i, "add"))
        _attribute(prep, cand)  # merged and superseding memories keep their provenance too
        try:
            if d.action == "drop":
                prep.result.dropped += 1
            elif d.action == "merge" and d.target:
                old = engine.get(d.target, scope=prep.scope)
                text = cand.text
                if d.text:
                    red = prep.redactor.redact(d.text)
                    _count_into(prep.result.redactions, red.counts)
                    text = red.text if admit(red.text) else cand.text
                rec = engine.update(d.target, text=text, tags=list(dict.fromkeys([*old.tags, *cand.tags])),
                                    importance=max(old.importance, cand.importance),
                                    metadata={"merged_from_session": prep.session}, scope=prep.scope,
                                    sources=list(dict.fromkeys([*old.sources, *cand.sources]))[-64:] or None)
                prep.result.merged.append(rec)
            elif d.action == "supersede" and d.target:
                new = engine.supersede(d.target, {"text": cand.text, "kind": cand.kind, "tags": list(cand.tags),
                                                  "importance": cand.importance, "source": prep.source,
                                                  "metadata": _memory_meta(prep, cand, name), "sources": cand.sources,
                                                  "occurred_at": cand.occurred_at}, scope=prep.scope)
                prep.result.superseded.append((d.target, new.id))
                prep.result.added.append(new)
            else:
                to_add.append(cand)
        except (NotFoundError, RememError, ValueError) as exc:  # target vanished, already superseded or newer:
            # keep the candidate
            log.info("reconcile %s on %s failed (%s); adding instead", d.action, d.target, exc)
            to_add.append(cand)
    _add_candidates(engine, prep, to_add, name)


def _store_summary(engine: Any, prep: Prep, text: str | None, meta: Mapping[str, Any], name: str,
                   advance: bool) -> None:
    """Create the session's single summary or update it in place."""
    if not text:
        if prep.previous is not None:
            prep.result.summary = prep.previous
        return
    red = prep.redactor.redact(text)
    _count_into(prep.result.redactions, red.counts)
    text = truncate_to_tokens(red.text.strip(), 400, keep="head")
    ids = extract_identifiers(prep.turns)
    md: dict[str, Any] = {**prep.metadata, "session": prep.session, "distiller": name,
                          "turns": len(prep.turns), **{k: v for k, v in ids.items() if v}, "provisional": False,
                          **meta}
    md["messages"] = prep.offset + prep.mark[0]
    if advance:
        md.update(zip(("covered", "prefix", "head"), prep.mark[1:]))
    elif prep.previous is not None:
        for key in ("covered", "prefix", "head"):
            if key in prep.previous.metadata:
                md[key] = prep.previous.metadata[key]
    else:
        md.update(covered=0)
    said = spoken(prep.turns)
    last = [t.id for t in said[-1:] if t.role != "user"]
    quoted = quoted_messages(meta)  # a keyless summary names exactly the messages whose words it keeps
    sources = quoted[:64] or [*(t.id for t in said if t.role == "user"), *last]
    md["last_said"] = last[0] if last else None  # the one non-request it names: a later capture replaces it
    with _SUMMARY_LOCK:  # two captures of one session at once must not create two summaries
        current = prep.previous or find_summary(engine, prep.scope, prep.session)
        if current is not None:
            # it quotes this capture's requests too (a capture from the session's start names them all, in order)
            earlier = [] if prep.continuation or quoted else [
                i for i in current.sources if i != current.metadata.get("last_said")]
            try:
                prep.result.summary = engine.update(current.id, text=text, metadata=md, scope=prep.scope,
                                                    sources=sources if quoted else summary_sources([*earlier,
                                                                                                     *sources]))
                return
            except NotFoundError:
                pass
        sources = sources if quoted else summary_sources(sources)
        started = next((t.at for t in said if t.at is not None), None)
        prep.result.summary = engine.add(text, scope=prep.scope, kind="summary", tags=[SUMMARY_TAG, *prep.tags],
                                         importance=DEFAULT_IMPORTANCE["summary"], metadata=md,
                                         source=prep.source, dedupe=False,
                                         **({"sources": sources} if sources else {}),
                                         **({"occurred_at": started} if started is not None else {}))


def _keyless_summary(prep: Prep) -> Distillation:
    """The keyless summary of the whole session (merged with the previous one when this capture is not a
    continuation of what it covered)."""
    kd = KeylessDistiller()
    parts = kd.summary_parts(prep.turns)
    if prep.previous is not None and not prep.continuation:
        parts = kd.merge_parts(prep.previous.metadata.get("parts"), parts)
    return Distillation([], kd.render_summary(parts), {"parts": parts})


def _run_keyless(engine: Any, prep: Prep, kd: KeylessDistiller) -> None:
    if prep.continuation or prep.previous is None:
        dist = kd.distill(prep.new_turns, context_turns=prep.turns)
    else:
        dist = kd.distill(prep.new_turns, previous=prep.previous.metadata.get("parts"))
    cands = _gate(prep, dist)
    _apply(engine, prep, cands, _corrections(engine, prep, cands), kd.name)
    _store_summary(engine, prep, dist.summary, dist.summary_metadata, kd.name, advance=True)


def _corrections(engine: Any, prep: Prep, cands: Sequence[Candidate]) -> list[Decision] | None:
    """Keyless reconciliation: the candidates that say what they replace ("Postgres 17, not 16") supersede the
    stored memory that still says it, or drop an earlier candidate of this capture that does
    (:mod:`~remem.core.distill.corrections`); every other candidate is added as usual."""
    asked = [i for i, c in enumerate(cands) if corrections.replacements(c.text)]
    if not asked:
        return None
    near = similar_memories(engine, prep.scope, [cands[i] for i in asked], 5)
    return corrections.decide(cands, {asked[j]: recs for j, recs in near.items()})


def _queue_failure(engine: Any, prep: Prep, exc: ProviderError, name: str) -> None:
    """LLM failed: keep the redacted capture for later and store the keyless summary right away."""
    prep.result.queued = True
    prep.result.error = str(exc)
    try:
        queue_for(engine).put({"messages": prep.messages, "scope": prep.scope.as_dict(), "session": prep.session,
                               "metadata": prep.metadata, "source": prep.source, "tags": list(prep.tags),
                               "location": store_location(engine), "error": str(exc),
                               "error_kind": exc.kind, "distiller": name})
    except OSError as qexc:  # the queue itself failed: the keyless memories are better than nothing
        log.warning("could not queue the capture (%s); distilling it keyless instead", qexc)
        prep.result.queued = False
        _run_keyless(engine, prep, KeylessDistiller())
        return
    dist = _keyless_summary(prep)
    _store_summary(engine, prep, dist.summary, {**dist.summary_metadata, "provisional": True}, "keyless",
                   advance=False)
    log.warning("LLM distillation failed (%s); capture queued for `remem distill --pending`", exc)


def _finish(engine: Any, prep: Prep, usage: Usage, name: str) -> RememberResult:
    prep.result.usage = usage.as_dict()
    prep.result.distiller = name
    if usage.calls:
        record_usage(engine, usage, model=name.removeprefix("llm:"), session=prep.session)
    return prep.result


def remember(engine: Any, messages: Any, *, scope: Any = None, session: str | None = None,
             distiller: Any = None, pii: bool | None = None, metadata: Mapping[str, Any] | None = None,
             source: str | None = None, tags: Iterable[str] | None = None, queue: bool = True,
             episodes: bool = True) -> RememberResult:
    """Keep ``messages`` as episodes, distil them into memories in ``scope`` and update the session's summary.

    ``messages``: OpenAI or Anthropic message dicts (tool calls included), message objects, or a string.
    ``session``: the conversation id (default ``scope.session``, else derived from the first user message);
    re-capturing a session only distils what is new and updates its one summary. Memories are stored in
    ``scope`` itself (tag/metadata ``session`` says where they came from), so they are recalled across sessions.
    ``distiller``: None = environment (keyless unless an LLM is configured), ``"keyless"``, or an
    :class:`LLMDistiller`. ``pii=True`` also redacts emails, phone numbers and similar. ``queue=False`` raises
    :class:`ProviderError` on LLM failure instead of queueing (used when draining the queue).
    ``episodes=False`` skips keeping the messages themselves (see :mod:`remem.core.distill.episodes`): user and
    assistant messages are otherwise stored as ``episode`` records, and every memory's ``sources`` names the
    messages it came from (a message's own ``"id"``, or a derived one) and its ``occurred_at`` their
    ``timestamp`` / ``created_at``.
    """
    prep = prepare(engine, messages, scope, session, pii, metadata, source, tags, episodes)
    dist_obj = resolve_distiller(distiller)
    name = getattr(dist_obj, "name", type(dist_obj).__name__)
    usage = Usage()
    if not prep.new_turns:
        prep.result.summary = prep.previous
        return _finish(engine, prep, usage, name)
    _store_episodes(engine, prep)
    if isinstance(dist_obj, KeylessDistiller):
        _run_keyless(engine, prep, dist_obj)
        return _finish(engine, prep, usage, name)
    previous_text = prep.previous.text if prep.previous is not None else None
    try:
        dist = dist_obj.extract(prep.new_turns, previous_text)
    except ProviderError as exc:
        if not queue:
            raise
        _queue_failure(engine, prep, exc, name)
        return _finish(engine, prep, usage, name)
    usage.add(dist.usage)
    cands = _gate(prep, dist)
    decisions = None
    neighbours = similar_memories(engine, prep.scope, cands, getattr(dist_obj, "neighbours", 3)) if cands else {}
    if neighbours:
        try:
            decisions, rusage = dist_obj.reconcile(cands, neighbours)
            usage.add(rusage)
        except ProviderError as exc:  # candidates are in hand: add them (exact duplicates still merge)
            log.warning("reconciliation failed (%s); adding candidates with de-duplication only", exc)
            prep.result.error = str(exc)
    _apply(engine, prep, cands, decisions, name)
    summary = dist.summary or _keyless_summary(prep).summary
    _store_summary(engine, prep, summary, {}, name, advance=True)
    return _finish(engine, prep, usage, name)


async def aremember(memory: Any, messages: Any, *, scope: Any = None, session: str | None = None,
                    distiller: Any = None, pii: bool | None = None, metadata: Mapping[str, Any] | None = None,
                    source: str | None = None, tags: Iterable[str] | None = None,
                    queue: bool = True, episodes: bool = True) -> RememberResult:
    """Async :func:`remember`: LLM calls use ``AsyncOpenAI``; store work runs in worker threads.
    ``memory`` is an :class:`~remem.AsyncMemory` or a sync engine."""
    engine = getattr(memory, "sync", memory)
    dist_obj = resolve_distiller(distiller)
    if not isinstance(dist_obj, LLMDistiller) or not hasattr(dist_obj, "aextract"):
        return await asyncio.to_thread(remember, engine, messages, scope=scope, session=session,
                                       distiller=dist_obj, pii=pii, metadata=metadata, source=source, tags=tags,
                                       queue=queue, episodes=episodes)
    prep = await asyncio.to_thread(prepare, engine, messages, scope, session, pii, metadata, source, tags,
                                   episodes)
    name = dist_obj.name
    usage = Usage()
    if not prep.new_turns:
        prep.result.summary = prep.previous
        return _finish(engine, prep, usage, name)
    await asyncio.to_thread(_store_episodes, engine, prep)
    try:
        dist = await dist_obj.aextract(prep.new_turns, prep.previous.text if prep.previous else None)
    except ProviderError as exc:
        if not queue:
            raise
        await asyncio.to_thread(_queue_failure, engine, prep, exc, name)
        return _finish(engine, prep, usage, name)
    usage.add(dist.usage)
    cands = _gate(prep, dist)
    neighbours = await asyncio.to_thread(similar_memories, engine, prep.scope, cands, dist_obj.neighbours) if cands else {}
    decisions = None
    if neighbours:
        try:
            decisions, rusage = await dist_obj.areconcile(cands, neighbours)
            usage.add(rusage)
        except ProviderError as exc:
            log.warning("reconciliation failed (%s); adding candidates with de-duplication only", exc)
            prep.result.error = str(exc)
    summary = dist.summary or _keyless_summary(prep).summary

    def store() -> None:
        _apply(engine, prep, cands, decisions, name)
        _store_summary(engine, prep, summary, {}, name, advance=True)

    await asyncio.to_thread(store)
    return await asyncio.to_thread(_finish, engine, prep, usage, name)


__all__ = [
    "Admission", "AuditReport", "Candidate", "DEFAULT_IMPORTANCE", "Decision", "Distillation", "EXTRACT_SCHEMA",
    "KeylessDistiller", "LLMDistiller", "MAX_MEMORY_CHARS", "MEMORY_KINDS", "RECONCILE_SCHEMA", "RememberResult",
    "EPISODE_KIND", "SUMMARY_TAG", "Turn", "USAGE_FILE", "admit", "aremember", "audit", "check_admission",
    "conversation_turns", "derive_session_id", "extract_identifiers", "normalize_messages", "record_usage",
    "remember", "render_transcript", "resolve_distiller", "split_sentences", "strip_recalled", "to_plain_messages",
    "usage_totals"
]
