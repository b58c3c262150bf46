"""``MemoryCaptureSaver``: wrap any checkpointer so every thread's new messages are captured into remem.

```python
graph = builder.compile(checkpointer=MemoryCaptureSaver(InMemorySaver(), mem, scope=ScopeResolver()))
```

No graph changes: when a checkpoint of the root graph is written and its ``messages`` channel changed, the
messages not captured before (by id) are sent to ``Memory.remember`` in the background. By default that happens
at turn boundaries (the newest message is an assistant answer without tool calls), so ``remember`` sees whole
exchanges rather than single messages. Checkpoint storage is entirely the wrapped saver's: the wrapper passes
``langgraph-checkpoint-conformance`` exactly as the saver it wraps (it only advertises the optional methods the
wrapped saver implements).
"""

from __future__ import annotations

import logging
from typing import Any, AsyncIterator, Iterator, Literal, Mapping, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata,
                                       CheckpointTuple)

from ...core.scope import check_scope_spec
from ...core.tooling import BackgroundCapture
from .capture import CaptureLedger, submit_capture
from .scope import ScopeLike, resolve_scope, resolve_session
from .tools import sync_memory

log = logging.getLogger("remem.langgraph.checkpointer")

_OPTIONAL = ("delete_for_runs", "copy_thread", "prune", "adelete_for_runs", "acopy_thread", "aprune")
_CLASSES: dict[frozenset[str], type] = {}


def _overrides(saver: Any, name: str) -> bool:
    impl = getattr(type(saver), name, None)
    return impl is not None and impl is not getattr(BaseCheckpointSaver, name, None)


class MemoryCaptureSaver(BaseCheckpointSaver):
    """A checkpointer that stores through ``saver`` and captures new messages into ``memory``.

    Args:
        saver: the checkpointer that really stores checkpoints (InMemorySaver, SqliteSaver, PostgresSaver, ...).
        memory: a :class:`~remem.Memory` (or AsyncMemory / RememStore).
        scope: a Scope or mapping, a ``(config, context) -> Scope | None`` callable such as ``ScopeResolver()``
            (the ``user_id`` from ``config["configurable"]``; threads without a user are not captured), or
            None (the global space).
        channel: the state key holding the conversation (default ``"messages"``).
        capture_on: ``"turn"`` (when the newest message is a final assistant answer) or ``"every"`` checkpoint.
    """

    def __new__(cls, saver: BaseCheckpointSaver | None = None, *args: Any, **kwargs: Any) -> "MemoryCaptureSaver":
        if cls is not MemoryCaptureSaver or saver is None:
            return super().__new__(cls)
        present = frozenset(n for n in _OPTIONAL if _overrides(saver, n))
        sub = _CLASSES.get(present)
        if sub is None:
            body = {n: getattr(_Optional, n) for n in present}
            sub = type(f"MemoryCaptureSaver[{'+'.join(sorted(present)) or 'base'}]", (MemoryCaptureSaver,), body)
            _CLASSES[present] = sub
        return super().__new__(sub)

    def __init__(self, saver: BaseCheckpointSaver, memory: Any, *, scope: ScopeLike = None,
                 channel: str = "messages",
                 capture_on: Literal["turn", "every"] = "turn", capture_executor: BackgroundCapture | None = None,
                 ledger: CaptureLedger | None = None) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.memory = sync_memory(memory)
        self.scope = check_scope_spec(scope)
        self.channel = channel
        self.capture_on = capture_on
        self.capture_executor = capture_executor
        self.ledger = ledger or CaptureLedger()
        self.last_capture: Any = None

    # ------------------------------------------------------------------ capture
    def _capture(self, config: RunnableConfig, checkpoint: Checkpoint, new_versions: ChannelVersions) -> None:
        try:
            conf = config.get("configurable") or {}
            if conf.get("checkpoint_ns") or self.channel not in new_versions:
                return  # subgraph checkpoints repeat the parent's messages; unchanged channel: nothing new
            messages = (checkpoint.get("channel_values") or {}).get(self.channel)
            if not isinstance(messages, (list, tuple)) or not messages:
                return
            if self.capture_on == "turn" and not _turn_complete(messages[-1]):
                return
            scope = resolve_scope(self.scope, config, None)
            session = resolve_session(self.scope, config, None)
            fut = submit_capture(self.memory, list(messages), scope, session, ledger=self.ledger,
                                 capture=self.capture_executor)
            if fut is not None:
                self.last_capture = fut
        except Exception as exc:  # noqa: BLE001 - capture must never fail a checkpoint write
            log.warning("memory capture from checkpoint failed: %s", exc)

    # ------------------------------------------------------------------ required (delegated)
    @property
    def config_specs(self) -> list:
        return self.saver.config_specs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        out = self.saver.put(config, checkpoint, metadata, new_versions)
        self._capture(config, checkpoint, new_versions)
        return out

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        return self.saver.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        return self.saver.delete_thread(thread_id)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.saver.aget_tuple(config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        async for item in self.saver.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        out = await self.saver.aput(config, checkpoint, metadata, new_versions)
        self._capture(config, checkpoint, new_versions)  # only queues work; never blocks on remember()
        return out

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        return await self.saver.aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        return await self.saver.adelete_thread(thread_id)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Mapping[str, Any]:
        return self.saver.get_delta_channel_history(config=config, channels=channels)

    async def aget_delta_channel_history(self, *, config: RunnableConfig,
                                         channels: Sequence[str]) -> Mapping[str, Any]:
        return await self.saver.aget_delta_channel_history(config=config, channels=channels)

    def with_allowlist(self, extra_allowlist: Any) -> "MemoryCaptureSaver":
        inner = self.saver.with_allowlist(extra_allowlist)
        if inner is self.saver:
            return self
        return MemoryCaptureSaver(inner, self.memory, scope=self.scope, channel=self.channel,
                                  capture_on=self.capture_on, capture_executor=self.capture_executor,
                                  ledger=self.ledger)

    def __getattr__(self, name: str) -> Any:  # setup(), close(), conn, ... of the wrapped saver
        if name == "saver":
            raise AttributeError(name)
        return getattr(self.saver, name)


class _Optional:
    """Delegations attached only when the wrapped saver implements them (capability detection is by override)."""

    def delete_for_runs(self: Any, run_ids: Any) -> None:
        return self.saver.delete_for_runs(run_ids)

    def copy_thread(self: Any, source_thread_id: str, target_thread_id: str) -> None:
        return self.saver.copy_thread(source_thread_id, target_thread_id)

    def prune(self: Any, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        return self.saver.prune(thread_ids, strategy=strategy)

    async def adelete_for_runs(self: Any, run_ids: Any) -> None:
        return await self.saver.adelete_for_runs(run_ids)

    async def acopy_thread(self: Any, source_thread_id: str, target_thread_id: str) -> None:
        return await self.saver.acopy_thread(source_thread_id, target_thread_id)

    async def aprune(self: Any, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        return await self.saver.aprune(thread_ids, strategy=strategy)


def _turn_complete(message: Any) -> bool:
    mtype = message.get("role") or message.get("type") if isinstance(message, dict) else getattr(message, "type", None)
    calls = message.get("tool_calls") if isinstance(message, dict) else getattr(message, "tool_calls", None)
    return mtype in ("ai", "assistant") and not calls
