"""Sparse vectors: Qdrant's own BM25 over the memory text, and an exact-identifier vector.

Qdrant's BM25 tokenizer splits ``v1.6.0`` into ``v1 6 0`` and ``SOME_ENV_VAR`` into words, so an exact
identifier can be outscored by prose that shares its pieces. Documents carry the base forms stemming misses
(``met`` -> ``meet``, :mod:`~remem.core.recall.lemmas`). The ``ident`` vector indexes each identifier
whole (versions, ``#42``, ENV_VARS, ``key=value``, paths, ``func()`` and snake/camel names), so a query
naming one finds the memory that holds it, however the prose around it was paraphrased.
"""

from __future__ import annotations

import functools
import hashlib
import re

import qdrant_edge as qe

from ..types import SparseVec
from .lemmas import with_base_forms

_IDENT_PATTERNS = [
    r"\bv?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?\b",           # versions: v1.6.0, 2.13.0-rc1
    r"(?<![\w#])#\d+\b",                                    # issue / PR numbers: #42
    r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b",                   # ENV_VARS / CONSTANTS
    r"\b[\w.-]{1,100}=[^\s,;'\"]+",                         # key=value (bounded: a 20k-char token took 1 s)
    r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?",                  # absolute / relative paths with 2+ parts
    r"\b[\w-]{1,100}(?:/[\w.@+-]+)+\.\w{1,6}\b",             # relative file paths: src/x/y.py (bounded, as below)
    r"\b[\w-]{1,100}\.(?:py|js|ts|tsx|rs|go|java|rb|md|json|ya?ml|toml|sh|sql|txt|cfg|ini|lock|html|css)\b",  # 20k "a-" took 1-4 s
    r"\b[A-Za-z_][\w.]{0,100}\(\)",                          # calls: get_store()
    r"\b[a-z]+(?:_[a-z0-9]+)+\b",                           # snake_case names
    r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b",                       # camelCase names
    r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b",               # PascalCase names
]
_IDENT_RE = re.compile("|".join(f"(?:{p})" for p in _IDENT_PATTERNS))


def identifiers(text: str) -> list[str]:
    """The exact identifiers in ``text``, normalised (lowercase, trailing punctuation and ``()`` dropped)."""
    out: list[str] = []
    seen: set[str] = set()
    for m in _IDENT_RE.finditer(text):
        tok = m.group(0).lower()
        tok = tok[:-2] if tok.endswith("()") else tok.rstrip(".,:;)")
        variants = {tok}
        if tok.startswith("v") and tok[1:2].isdigit():
            variants.add(tok[1:])  # "v1.6.0" and "1.6.0" name the same release
        for v in variants:
            if len(v) >= 2 and v not in seen:
                seen.add(v)
                out.append(v)
    return out


def _index(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "big") & 0x7FFFFFFF


def entity_token(entity_id: str) -> int:
    """The ``ident`` sparse index a memory linked to entity ``entity_id`` carries (remem.core.entities)."""
    return _index("\x00entity:" + entity_id)


def ident_vector(text: str) -> SparseVec:
    toks = identifiers(text)
    idx = sorted({_index(t) for t in toks})
    return idx, [1.0] * len(idx)


@functools.lru_cache(maxsize=4)
def bm25_model(k: float = 1.2, b: float = 0.75, avg_len: float = 256.0) -> qe.Bm25:
    return qe.Bm25(qe.Bm25Config(k=k, b=b, avg_len=avg_len))


@functools.lru_cache(maxsize=65536)
def bm25_terms(word: str) -> frozenset[int]:
    """The BM25 term ids ``word`` is indexed under (its stem; none for a stopword)."""
    return frozenset(bm25_model().embed_document(word).indices)


def bm25_document(text: str) -> SparseVec:
    v = bm25_model().embed_document(with_base_forms(text, bm25_terms))
    return list(v.indices), list(v.values)


def bm25_context(text: str) -> SparseVec:
    """Context text is scored without length normalisation damping (b=1), as measured best on LoCoMo."""
    v = bm25_model(b=1.0).embed_document(with_base_forms(text, bm25_terms))
    return list(v.indices), list(v.values)


def bm25_query(text: str) -> SparseVec:
    v = bm25_model().embed_query(text)  # documents carry the base forms; queries need not (see lemmas)
    return list(v.indices), list(v.values)
