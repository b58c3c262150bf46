"""Qdrant backends behind one interface: Qdrant Edge (embedded) and qdrant-client (server, cluster, local mode)."""

OWNER_FILE = "remem.lock"  # flocked by the process that has an embedded store open; holds its pid and role
META_FILE = "remem.json"  # an embedded store's fingerprint file; here so a reader need not import qdrant_edge
ERASED_KEY = "erased_ns"  # the same time in a Qdrant server store's meta point (its collection, not a file)
ERASED_FILE = "erased"  # touched when words leave an embedded store: backups taken before hold them (store.backups)
