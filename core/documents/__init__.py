"""Documents as memory (``Memory.index()``): files found (:mod:`.files`), cut into chunks by headings
(:mod:`.chunking`), each chunk a memory of kind ``document`` kept in step with its file (:mod:`.indexer`).
Importing this package loads only :class:`IndexResult` (``Memory`` is imported on a hook's hot path)."""

from .result import DOCUMENT_KIND, IndexResult

__all__ = ["DOCUMENT_KIND", "IndexResult"]
