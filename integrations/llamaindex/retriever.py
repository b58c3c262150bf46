"""``RememRetriever``: remem memories as LlamaIndex nodes, for query engines, RAG flows and retriever tools."""

from __future__ import annotations

import logging
from typing import Any, Iterable, List, Mapping

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ...core.scope import ScopeSpec, check_scope_spec
from ...core.tooling import awithin_turn, call_scope, within_turn
from ...core.types import MemoryRecord, SearchHit
from ._common import sync_and_async

log = logging.getLogger("remem.llamaindex")

LLM_VISIBLE_KEYS = ("kind", "tags", "date")
"""Node metadata the answering LLM sees next to each memory; ids, scope and timestamps stay out of the prompt."""


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def record_to_node(record: MemoryRecord, score: float | None = None) -> NodeWithScore:
    """One memory as a ``NodeWithScore``: node id = memory id, text = memory text, remem fields (``sources``: the
    ids of the messages it came from) in metadata.

    The memory's own metadata is merged in first, so remem's fields win on a name clash.
    """
    when = record.event_time  # when it happened or was said, as context() dates it
    meta: dict[str, Any] = dict(record.metadata or {})
    meta.update({
        "memory_id": record.id,
        "kind": record.kind,
        "tags": list(record.tags),
        "date": when.strftime("%Y-%m-%d"),
        "occurred_at": _iso(record.occurred_at),
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
        "valid_from": _iso(record.valid_from),
        "valid_until": _iso(record.valid_until),
        "importance": record.importance,
        "source": record.source,
        "tenant": record.scope.tenant,
        "user": record.scope.user,
        "agent": record.scope.agent,
        "session": record.scope.session,
        "sources": list(record.sources),
    })
    hidden = [k for k in meta if k not in LLM_VISIBLE_KEYS]
    node = TextNode(id_=record.id, text=record.text, metadata=meta,
                    excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=list(meta))
    return NodeWithScore(node=node, score=score)


def hit_to_node(hit: SearchHit) -> NodeWithScore:
    """One search hit as a node: its record's, or for a passage (neighbouring messages recalled together) the
    messages in the order said, with every message's id in ``passage_ids`` and all their ``sources``."""
    found = record_to_node(hit.record, hit.score)
    if hit.passage:
        found.node.text = hit.text
        found.node.metadata["sources"] = list(hit.sources)
        found.node.metadata["passage_ids"] = [rec.id for rec in hit.passage]
        found.node.excluded_llm_metadata_keys = [*found.node.excluded_llm_metadata_keys, "passage_ids"]
        found.node.excluded_embed_metadata_keys = list(found.node.metadata)
    return found


class RememRetriever(BaseRetriever):
    """Retrieves memories from one remem scope (hybrid or BM25 search, decay and importance applied).

    Usable wherever LlamaIndex takes a retriever: ``RetrieverQueryEngine.from_args(retriever, llm=...)``,
    ``RetrieverTool.from_defaults(retriever)``, or a ``QueryEngineTool`` over that engine. A failing search
    logs and returns no nodes, so a broken store degrades an answer instead of crashing it.
    """

    def __init__(self, memory: Any, scope: ScopeSpec = None, *, limit: int = 5,
                 kind: str | Iterable[str] | None = None, tags: Iterable[str] | None = None,
                 where: Mapping[str, Any] | None = None, token_budget: int | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
        """``memory``: a ``remem.Memory`` or ``AsyncMemory``; ``scope``: a Scope or mapping, a zero-argument
        callable resolved per query (None from it = no nodes), or None (the global space)."""
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self._sync, self._async = sync_and_async(memory)
        self.scope = check_scope_spec(scope)
        self.limit = limit
        self.kind = kind
        self.tags = [tags] if isinstance(tags, str) else list(tags) if tags else None
        self.where = dict(where) if where else None
        self.token_budget = token_budget

    def _search_kwargs(self) -> dict[str, Any] | None:
        scope = call_scope(self.scope)
        if scope is None:
            return None
        return {"scope": scope, "limit": self.limit, "kind": self.kind, "tags": self.tags,
                "where": self.where, "token_budget": self.token_budget}

    @staticmethod
    def _nodes(hits: List[SearchHit]) -> List[NodeWithScore]:
        return [hit_to_node(h) for h in hits]

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        kwargs = self._search_kwargs()
        if kwargs is None:
            return []
        try:
            hits = within_turn(lambda: self._sync.search(query_bundle.query_str, **kwargs))
        except Exception as exc:  # noqa: BLE001 - retrieval failure means "no memories", not a crashed query
            log.warning("remem retrieval failed: %s", exc)
            return []
        return self._nodes(hits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        kwargs = self._search_kwargs()
        if kwargs is None:
            return []
        try:
            hits = await awithin_turn(self._async.search(query_bundle.query_str, **kwargs))
        except Exception as exc:  # noqa: BLE001
            log.warning("remem retrieval failed: %s", exc)
            return []
        return self._nodes(hits)
