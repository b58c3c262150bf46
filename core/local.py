"""``LocalMemory``: every public operation, in this process, on one open store.

The store engine (:mod:`remem.core.store.engine`) does storage and recall; this layer adds what is built on
top of it — distillation, audits, the usage ledger, re-scans of redaction, export/import/backup and re-embedding
— so the engine never imports the layers above it. The facades and the service run this object; its method
signatures are those of :mod:`remem.core.operations` (a test checks each one).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .store import backups, compaction, migration, transfer
from .store.engine import Engine
from .store.plan import Plan, planned
from .types import DiskFullError, MemoryRecord

log = logging.getLogger("remem")
# The distiller (remem.core.distill) and the redactor are imported by the methods that run them: their rule
# tables take 0.1-0.3 s to load, and a process that only recalls (the Claude Code prompt hook on the day's first
# prompt, a search-only app) should not pay for them (bench_hooks: cold in-process recall).


class LocalMemory(Engine):
    """The in-process implementation of every operation (see :class:`~remem.core.operations.MemoryOperations`)."""

    def export(self, path: str | os.PathLike[str], *, scope: Any = None) -> int:
        from .entities.relations import transfer as relations

        return transfer.export(self, path, scope=scope, extra=lambda: relations.export_lines(self, scope))

    @planned
    def import_(self, path: str | os.PathLike[str], *, scope: Any = None,
                progress: Callable[[int], None] | None = None) -> Plan[int]:
        n = yield from transfer.import_plan(self, path, scope=scope, progress=progress)
        if n and self.settings.entities:  # in file order a first name can come before its full name: linked again
            from .entities import rebuild

            rebuild.link_all(self, scope=scope)
            from .entities.relations import transfer as relations

            relations.import_lines(self, transfer.read_extra(path, relations.KEY), scope)
        return n

    def backup(self, directory: str | os.PathLike[str] | None = None, *, keep: int = 10) -> Path:
        return backups.backup(self, directory, keep=keep)

    @planned
    def reembed(self, *, pending_only: bool = False, progress: Callable[[int], None] | None = None) -> Plan[int]:
        return (yield from migration.reembed_plan(self, pending_only=pending_only, progress=progress))

    def compact(self, *, progress: Callable[[int], None] | None = None, prune_backups: bool = True) -> int:
        from .entities import hooks as entity_hooks

        n = compaction.compact(self, progress=progress, prune_backups=prune_backups)
        entity_hooks.compact(self)  # then unlinked entities gone, their names out of the entity shard's files
        from .entities.relations import lifecycle as relations

        relations.compact(self)  # relations no memory says any more gone, out of the relation shard's files
        return n

    def prune_stale_backups(self) -> list[Path]:
        return backups.prune_stale(self)

    def remember(self, messages: Sequence[Mapping[str, Any]] | str, *, scope: Any = None,
                 session: str | None = None, distiller: Any = None, pii: bool | None = None,
                 metadata: Mapping[str, Any] | None = None, source: str | None = None,
                 tags: Iterable[str] | None = None, queue: bool = True, episodes: bool = True) -> Any:
        from .distill import pipeline

        _check_capture_size(messages)
        try:
            return pipeline.remember(self, messages, scope=scope, session=session, distiller=distiller, pii=pii,
                                     metadata=metadata, source=source, tags=tags, queue=queue, episodes=episodes)
        except DiskFullError as exc:
            raise _stopped_part_way(exc) from exc

    async def aremember(self, messages: Any, **arguments: Any) -> Any:
        """``remember`` for AsyncMemory: LLM calls with the async client, store work in worker threads."""
        from .distill import pipeline

        try:
            return await pipeline.aremember(self, messages, **arguments)
        except DiskFullError as exc:
            raise _stopped_part_way(exc) from exc

    def after_forget(self, gone: Sequence[MemoryRecord]) -> None:
        """A forgotten message leaves the captures queued for an LLM too: no copy of it stays on disk."""
        from .distill import forgotten

        try:
            forgotten.scrub_queued(self, gone)
        except Exception as exc:  # noqa: BLE001 - the store forgot; the drain still skips what the note names
            log.warning("could not take forgotten messages out of the pending queue: %s", type(exc).__name__)
        from .entities import hooks as entity_hooks

        entity_hooks.after_forget(self, gone)
        from .entities.relations import lifecycle as relations

        relations.after_forget(self, gone)

    # ------------------------------------------------------------------ entities (remem.core.entities)
    def point(self, rec: MemoryRecord, dense: list[float] | None) -> Any:
        from .entities import hooks as entity_hooks

        from .entities.relations import lifecycle as relations

        point = entity_hooks.linked(self, super().point(rec, dense), rec)
        relations.on_write(self, rec)  # after its entities are linked: the relations it states, between them
        from .entities import handover

        handover.hand_over(self, rec)  # and those an LLM distiller said it states (vetted, in its metadata)
        return point

    def entity_recall(self, query: str, scope: Any) -> tuple[Any, bool, Any]:
        from .entities import hooks as entity_hooks
        from .entities.relations import hop

        ident, unknown = hop.recall_with_relations(self, query, scope)
        return ident, unknown, None if unknown else entity_hooks.alias_terms(self, query, scope)

    def close(self) -> None:
        from .entities import hooks as entity_hooks

        from .entities.relations import lifecycle as relations

        with self.write_lock:
            entity_hooks.close(self)
            relations.close(self)
        super().close()

    def about(self, name: str, *, scope: Any = None, as_of: Any = None, token_budget: int = 600) -> Any:
        from .entities import profile

        return profile.about(self, name, scope=scope, as_of=as_of, token_budget=token_budget)

    def entities(self, *, scope: Any = None, query: str | None = None, kind: str | None = None,
                 limit: int = 50) -> Any:
        from .entities import profile

        return profile.list_entities(self, scope=scope, query=query, kind=kind, limit=limit)

    def merge_entities(self, keep: str, other: str, *, scope: Any = None) -> Any:
        from .entities import merging

        return merging.merge(self, keep, other, scope=scope)

    def split_entity(self, entity_id: str, name: str, *, scope: Any = None) -> Any:
        from .entities import merging

        return merging.split(self, entity_id, name, scope=scope)

    def link_entities(self, *, scope: Any = None, progress: Callable[[int], None] | None = None) -> int:
        from .entities import rebuild

        return rebuild.link_all(self, scope=scope, progress=progress)

    def audit(self, *, scope: Any = None) -> dict[str, Any]:
        from .distill import pipeline

        return pipeline.audit(self, scope=scope).as_dict()

    def usage(self) -> dict[str, Any]:
        from .distill import drain, pipeline

        return {**pipeline.usage_totals(self), "pending_captures": drain.pending_count(self)}

    def drain_pending(self) -> int:
        from .distill import drain

        return drain.drain_pending(self)

    def rescan_redactions(self, *, scope: Any = None, pii: bool = False, dry_run: bool = True) -> dict[str, Any]:
        from .redact.redactor import configured
        from .store.rescan import redact_store

        with self.write_lock:
            return redact_store(self, configured(pii), scope=scope, dry_run=dry_run)

    def answer(self, question: str, *, scope: Any = None, token_budget: int = 2000, as_of: Any = None,
               llm: str | None = None) -> Any:
        from .answer.answering import answer

        return answer(self, question, scope=scope, token_budget=token_budget, as_of=as_of, llm=llm)

    def index(self, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, scope: Any = None,
              prune: bool = True, progress: Callable[[int], None] | None = None) -> Any:
        from .documents.indexer import index

        return index(self, paths, scope=scope, prune=prune, progress=progress)


MAX_CAPTURE_CHARS = 2_000_000  # one capture; a 10 MB paste would hold a shared service's CPU for seconds


def _stopped_part_way(exc: DiskFullError) -> DiskFullError:
    """A full disk stops a capture between its writes (messages, memories, summary): the summary, written last,
    says what is covered, so the same capture sent again stores only what is missing (a test stops it at each)."""
    return DiskFullError(f"{exc}; remember() stopped part way: call it again with the same messages once there is "
                         "room (what it stored is found again, the rest is added)")


def _check_capture_size(messages: Any) -> None:
    """Refuse an oversized capture at once, before redaction and distillation spend seconds on it."""
    size = len(messages) if isinstance(messages, str) else len(json.dumps(list(messages), default=str))
    if size > MAX_CAPTURE_CHARS:
        raise ValueError(f"this capture is {size:,} characters; the limit is {MAX_CAPTURE_CHARS:,} per remember() "
                         f"call (capture the conversation in parts, e.g. per session or per turn)")


__all__ = ["LocalMemory", "MAX_CAPTURE_CHARS"]
