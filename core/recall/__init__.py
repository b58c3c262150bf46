"""Recall: sparse vectors (BM25, identifiers), what gets embedded, decay, token counts, rendering."""
