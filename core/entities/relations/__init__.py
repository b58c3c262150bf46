"""Relations between a scope's entities ("Dana maintains the ingest worker"), as records with validity windows:
found by keyless patterns as memories are written or handed over by an LLM distiller
(:func:`record_claims`), superseded rather than deleted when they change, shown by ``about()`` and followed one
bounded hop by recall."""

from .lifecycle import record_claims
from .patterns import asked_predicates, claims

__all__ = ["asked_predicates", "claims", "record_claims"]
