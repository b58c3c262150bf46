"""The public operations of a memory, declared once.

Each operation is declared here with its real signature, its docstring and how it travels: whether it may run
for minutes (``slow``: the service client waits longer), whether it is a read that is safe to send again after
a dropped connection (``retryable``), which arguments stay in the caller's process (``local``: progress
callbacks) and which are file paths the caller resolves before they cross to the service (``paths``).

Everything else is derived from this table: the methods of :class:`~remem.Memory` and
:class:`~remem.AsyncMemory`, the service's dispatch and the client's timeouts and retries. The in-process
implementation (:class:`~remem.core.local.LocalMemory`) must match each signature; a test checks it. So a method
cannot exist in one place and be missing, or different, in another.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .answer.result import Answer
from .documents.result import IndexResult
from .entities.types import Entity, EntityProfile
from .types import ForgetResult, MemoryRecord, SearchHit, Stats


@dataclass(frozen=True)
class Operation:
    """One public operation: what it is called, what it takes, and how it travels."""

    name: str
    signature: inspect.Signature  # including ``self``, as the facade methods show it
    doc: str
    slow: bool = False
    retryable: bool = False
    local: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments a caller passed, by name (a clear TypeError for unknown or missing ones)."""
        bound = self.signature.bind(None, *args, **kwargs)
        arguments = dict(bound.arguments)
        arguments.pop("self", None)
        return arguments


def operation(*, slow: bool = False, retryable: bool = False, local: Iterable[str] = (),
              paths: Iterable[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__remem_operation__ = dict(slow=slow, retryable=retryable, local=frozenset(local),  # type: ignore[attr-defined]
                                      paths=frozenset(paths))
        return fn
    return mark


class MemoryOperations:
    """The declarations (bodies are never run). Scopes follow :mod:`remem.core.scope`: ``None`` is the global
    space; admin operations also take :data:`~remem.core.scope.ALL_TENANTS`."""

    # ------------------------------------------------------------------ writing
    @operation()
    def add(self, text: str, *, scope: Any = None, kind: str = "note", tags: Iterable[str] | None = None,
            importance: int = 5, metadata: Mapping[str, Any] | None = None, source: str | None = None,
            valid_from: Any = None, valid_until: Any = None, created_at: Any = None, context: str | None = None,
            dedupe: bool = True, sources: Iterable[str] | None = None, occurred_at: Any = None) -> MemoryRecord:
        """Store one memory. ``context`` (e.g. the conversation around it) is indexed for recall, not shown;
        ``sources`` are the ids of the messages it came from; ``occurred_at`` is when it happened. The same text
        in the same scope is stored once; a near-duplicate is merged into the existing memory."""
        raise NotImplementedError

    @operation(slow=True, local=("progress",))
    def add_many(self, items: Sequence[Mapping[str, Any]], *, scope: Any = None, dedupe: bool = True,
                 progress: Callable[[int], None] | None = None, batch_size: int = 64) -> list[MemoryRecord]:
        """Bulk add, embedded in batches; each item takes the keyword arguments of ``add``."""
        raise NotImplementedError

    @operation()
    def update(self, memory_id: str, *, text: str | None = None, tags: Iterable[str] | None = None,
               importance: int | None = None, metadata: Mapping[str, Any] | None = None, kind: str | None = None,
               valid_until: Any = None, context: str | None = None, scope: Any = None,
               replace_metadata: bool = False, sources: Iterable[str] | None = None,
               occurred_at: Any = None) -> MemoryRecord:
        """Change a memory of ``scope`` in place. ``metadata`` is merged into the existing one unless
        ``replace_metadata``; ``sources`` replaces the message ids it came from."""
        raise NotImplementedError

    @operation()
    def supersede(self, old_id: str, new: str | MemoryRecord | Mapping[str, Any], *, scope: Any = None,
                  valid_from: Any = None, kind: str | None = None, tags: Iterable[str] | None = None,
                  importance: int | None = None, metadata: Mapping[str, Any] | None = None,
                  source: str | None = None, context: str | None = None, sources: Iterable[str] | None = None,
                  occurred_at: Any = None) -> MemoryRecord:
        """Replace a memory of ``scope`` that stopped being true: the old one is closed at ``valid_from``
        (default now), never deleted, and both are linked, so ``search(as_of=...)`` still sees what was true."""
        raise NotImplementedError

    @operation()
    def forget(self, memory_id: str | None = None, *, scope: Any = None, where: Mapping[str, Any] | None = None,
               dry_run: bool = True, kind: str | None = None, tags: Iterable[str] | None = None,
               before: Any = None) -> ForgetResult | bool:
        """``forget(id)`` deletes one memory of ``scope`` and returns True; an id that is not there (or belongs to
        another scope) raises :class:`NotFoundError`, as ``get`` does. ``forget(scope=...,
        ...)`` deletes many, as a dry run unless ``dry_run=False``; it refuses to run without a scope. A forgotten
        message takes with it the memories distilled from its words, and its words in the session summary."""
        raise NotImplementedError

    @operation(slow=True)
    def remember(self, messages: Sequence[Mapping[str, Any]] | str, *, scope: Any = None,
                 session: str | None = None, distiller: Any = None, pii: bool | None = None,
                 metadata: Mapping[str, Any] | None = None, source: str | None = None,
                 tags: Iterable[str] | None = None, queue: bool = True, episodes: bool = True) -> Any:
        """Keep a conversation as episodes (what was said, with message ids and event times) and distil it into
        memories (facts, preferences, decisions, lessons, a session summary) that name their ``sources``;
        redaction runs before anything is stored or sent to an LLM. ``episodes=False`` keeps only the memories."""
        raise NotImplementedError

    # ------------------------------------------------------------------ reading
    @operation(retryable=True)
    def get(self, memory_id: str, *, scope: Any = None) -> MemoryRecord:
        """One memory by id, if it is in ``scope`` (else :class:`~remem.NotFoundError`, the same as a missing id)."""
        raise NotImplementedError

    @operation(retryable=True)
    def search(self, query: str, *, scope: Any = None, limit: int = 5, kind: Any = None,
               tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
               until: Any = None, as_of: Any = None, token_budget: int | None = None,
               reinforce: bool | None = None) -> list[SearchHit]:
        """Hybrid recall (BM25 + dense + identifiers, fused in Qdrant), decay and importance applied."""
        raise NotImplementedError

    @operation(retryable=True)
    def context(self, query: str, *, scope: Any = None, token_budget: int = 800, limit: int = 20, kind: Any = None,
                tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
                until: Any = None, as_of: Any = None, reinforce: bool | None = None) -> str:
        """Recall rendered for a prompt, within ``token_budget`` tokens (counted with tiktoken)."""
        raise NotImplementedError

    @operation(retryable=True)
    def list(self, *, scope: Any = None, limit: int = 50, offset: int = 0, kind: Any = None,
             tags: Iterable[str] | None = None, where: Mapping[str, Any] | None = None, since: Any = None,
             until: Any = None, include_superseded: bool = True) -> list[MemoryRecord]:
        """Newest first."""
        raise NotImplementedError

    @operation(retryable=True)
    def count(self, *, scope: Any = None, kind: Any = None, tags: Iterable[str] | None = None,
              where: Mapping[str, Any] | None = None) -> int:
        """How many memories match, counted by Qdrant (no scan)."""
        raise NotImplementedError

    @operation(slow=True, retryable=True)
    def stats(self, *, scope: Any = None) -> Stats:
        """Counts by kind, pending embeddings, oldest and newest, backend and embedder."""
        raise NotImplementedError

    @operation(retryable=True, slow=True)
    def iter_records(self, scope: Any = None) -> Iterator[MemoryRecord]:
        """Every record of ``scope`` (through the service: a list)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ answers (core/answer)
    @operation(slow=True, retryable=True)
    def answer(self, question: str, *, scope: Any = None, token_budget: int = 2000, as_of: Any = None,
               llm: str | None = None) -> Answer:
        """A short answer from memory, citing the ids of the memories and messages it rests on, with a
        confidence (0-1); ``found=False`` (and no guess) when memory does not hold one. With an LLM configured
        (``REMEM_LLM_MODEL`` / ``REMEM_LLM_API_KEY``, or ``llm="llm"`` / a model name) the model answers from the
        recalled context and must cite it; keyless (``llm="keyless"``, or nothing configured) it is the
        sentence of the recalled memories that answers. "How many" / "list" questions read every matching
        memory of the scope, not the top k. ``as_of``: what memory held then."""
        raise NotImplementedError

    # ------------------------------------------------------------------ documents (core/documents)
    @operation(slow=True, local=("progress",), paths=("paths",))
    def index(self, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, scope: Any = None,
              prune: bool = True, progress: Callable[[int], None] | None = None) -> IndexResult:
        """Keep Markdown, reStructuredText and plain-text files as memories of kind ``document``: each file cut
        into chunks by its headings (within a size limit), each chunk's ``source`` naming the file, heading and
        lines. Folders are walked as git sees them (``.gitignore`` honoured, binaries skipped); redaction applies.
        Running it again writes only what changed: an unchanged chunk is not written or embedded again, an
        edited file's old chunks are replaced, and (``prune``) a deleted file's chunks are forgotten.
        ``progress(n)``: n more files read."""
        raise NotImplementedError

    # ------------------------------------------------------------------ entities (remem.core.entities)
    @operation(retryable=True)
    def about(self, name: str, *, scope: Any = None, as_of: Any = None, token_budget: int = 600) -> EntityProfile:
        """What ``scope`` knows about the entity ``name`` names (any alias; a first name when only one full name
        has it): its aliases and type, what is true at ``as_of`` (default now), what changed before it (with
        dates), the entities named with it, and each line's memory and messages; ``.text`` is all that for a
        prompt, within ``token_budget`` tokens. A name the scope never heard of: ``entity`` None, ``text`` ""."""
        raise NotImplementedError

    @operation(retryable=True)
    def entities(self, *, scope: Any = None, query: str | None = None, kind: str | None = None,
                 limit: int = 50) -> list[Entity]:
        """The entities ``scope``'s memories name, most mentioned first; ``query`` matches names and aliases,
        ``kind`` one type (person, org, place, product, service, repo, file, issue, host)."""
        raise NotImplementedError

    @operation()
    def merge_entities(self, keep: str, other: str, *, scope: Any = None) -> Entity:
        """Merge the entity ``other`` into ``keep`` (same scope and type): its names find ``keep`` from now on and
        recall and ``about`` read both's memories. Recorded, and undone by ``split_entity(keep, other's name)``."""
        raise NotImplementedError

    @operation()
    def split_entity(self, entity_id: str, name: str, *, scope: Any = None) -> Entity:
        """Undo a merge into ``entity_id`` (``name``: the merged entity's), or split off an alias resolution
        merged (a first name, a near spelling): the entity refuses it from then on and the memories naming it
        get an entity of their own. Returns the entity ``name`` is now."""
        raise NotImplementedError

    @operation(slow=True, local=("progress",))
    def link_entities(self, *, scope: Any = None, progress: Callable[[int], None] | None = None) -> int:
        """Find the entities of memories stored before remem linked them (or with ``entities=False``), in
        place (nothing is embedded again); returns how many memories were read."""
        raise NotImplementedError

    # ------------------------------------------------------------------ administration
    @operation(slow=True, retryable=True, paths=("path",))
    def export(self, path: str | os.PathLike[str], *, scope: Any = None) -> int:
        """JSONL (gzip when the name ends in .gz): a header with the embedder fingerprint, then one record a line."""
        raise NotImplementedError

    @operation(slow=True, local=("progress",), paths=("path",))
    def import_(self, path: str | os.PathLike[str], *, scope: Any = None,
                progress: Callable[[int], None] | None = None) -> int:
        """Load an export into ``scope`` (records outside it are refused; ``ALL_TENANTS`` restores every
        tenant). Ids, times and supersede links are kept; vectors are rebuilt. Importing twice changes nothing."""
        raise NotImplementedError

    @operation(slow=True, paths=("directory",))
    def backup(self, directory: str | os.PathLike[str] | None = None, *, keep: int = 10) -> Path:
        """A timestamped, gzipped export of the whole store next to it (or in ``directory``); keeps ``keep``."""
        raise NotImplementedError

    @operation(slow=True, local=("progress",))
    def reembed(self, *, pending_only: bool = False, progress: Callable[[int], None] | None = None) -> int:
        """Rebuild dense vectors with the configured embedder, in place (a full migration backs up first, and
        rewrites every record with the current index recipe: episodes an older remem stored get their
        neighbours)."""
        raise NotImplementedError

    @operation(slow=True, local=("progress",))
    def compact(self, *, progress: Callable[[int], None] | None = None, prune_backups: bool = True) -> int:
        """Rewrite the embedded store's files with the memories it holds now, so what was forgotten or edited is
        gone from disk too (Qdrant keeps deleted bytes until it rewrites its files); embeds nothing. Backups
        taken before words last left the store are then deleted, a fresh one written in their place, unless
        ``prune_backups=False``. A Qdrant server rewrites its own files (its vacuum optimizer): there only the
        backups are pruned. Returns how many memories the store holds."""
        raise NotImplementedError

    @operation(slow=True)
    def prune_stale_backups(self) -> list[Path]:
        """Delete the store's backups taken before words last left it (a forget, an edit), a fresh one written in
        their place; returns the deleted paths. ``compact()`` does this after rewriting the files."""
        raise NotImplementedError

    @operation(slow=True, retryable=True)
    def audit(self, *, scope: Any = None) -> dict[str, Any]:
        """Duplicates, junk and stale memories, as a JSON-ready dict."""
        raise NotImplementedError

    @operation(retryable=True)
    def usage(self) -> dict[str, Any]:
        """LLM token usage of every capture so far, and captures waiting to be distilled."""
        raise NotImplementedError

    @operation(slow=True)
    def drain_pending(self) -> int:
        """Distil the captures queued while the LLM was failing."""
        raise NotImplementedError

    @operation(slow=True)
    def rescan_redactions(self, *, scope: Any = None, pii: bool = False, dry_run: bool = True) -> dict[str, Any]:
        """Re-scan stored memories with today's rules and rewrite what they catch; a dry run only counts."""
        raise NotImplementedError

    @operation(slow=True)
    def optimize(self) -> None:
        """Let the store build its indexes now (after a bulk load)."""
        raise NotImplementedError


def _collect(spec: type) -> dict[str, Operation]:
    ops: dict[str, Operation] = {}
    for name, fn in vars(spec).items():
        marks = getattr(fn, "__remem_operation__", None)
        if marks is not None:
            ops[name] = Operation(name=name, signature=inspect.signature(fn), doc=inspect.getdoc(fn) or "", **marks)
    return ops


OPERATIONS: Mapping[str, Operation] = _collect(MemoryOperations)
SLOW = frozenset(name for name, op in OPERATIONS.items() if op.slow)
RETRYABLE = frozenset(name for name, op in OPERATIONS.items() if op.retryable)

__all__ = ["MemoryOperations", "OPERATIONS", "Operation", "RETRYABLE", "SLOW", "operation"]
