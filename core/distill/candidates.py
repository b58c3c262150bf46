"""What a distiller proposes: candidate memories and the session summary, before the gate and reconciliation.

Shared by the keyless and LLM distillers and the :mod:`remem.core.distill.pipeline` pipeline.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from ..entities.types import RelationClaim
from ..providers.llm import Usage

MEMORY_KINDS: tuple[str, ...] = ("fact", "preference", "decision", "event", "lesson")
DEFAULT_IMPORTANCE = {"preference": 7, "decision": 7, "fact": 6, "lesson": 6, "event": 4, "summary": 4}


@dataclass(frozen=True)
class EntityClaim:
    """An entity an LLM says a candidate names: ``name`` as written, ``kind`` one of the entity kinds (person,
    org, place, product, service, repo, file, issue, host). A claim, not a fact: the pipeline keeps it only
    where the name is in the memory's text and the conversation (see :mod:`~remem.core.distill.llm_claims`)."""

    name: str
    kind: str


@dataclass
class Candidate:
    """A memory the distiller proposes (before the gate and reconciliation). ``sources``: ids of the messages
    it came from; ``occurred_at``: when they were said; ``entities``/``relations``: what an LLM distiller says
    it names and states (empty for the keyless distiller, whose entities are found when the memory is written)."""

    text: str
    kind: str = "fact"
    tags: tuple[str, ...] = ()
    importance: int = 5
    metadata: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    occurred_at: _dt.datetime | None = None
    entities: tuple[EntityClaim, ...] = ()
    relations: tuple[RelationClaim, ...] = ()


@dataclass
class Distillation:
    """What one distiller produced for one capture."""

    candidates: list[Candidate]
    summary: str | None
    summary_metadata: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


__all__ = ["Candidate", "DEFAULT_IMPORTANCE", "Distillation", "EntityClaim", "MEMORY_KINDS"]
