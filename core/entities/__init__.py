"""Entities: the people, organisations, places, products, services, repositories, files, issues and hosts that
memories name, found without a model as they are written, resolved per scope without an LLM, and used by
recall and by ``Memory.about()`` / ``Memory.entities()``."""

from .extract import KINDS, Mention, extract
from .types import Entity, EntityProfile, ProfileLine, RelatedEntity

__all__ = ["Entity", "EntityProfile", "KINDS", "Mention", "ProfileLine", "RelatedEntity", "extract"]
