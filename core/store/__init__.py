"""Storage: the engine over one Qdrant backend, payloads and filters, de-duplication, export/import, migration."""
