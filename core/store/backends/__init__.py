"""Qdrant backends behind one interface: Qdrant Edge (embedded) and qdrant-client (server, cluster, local mode)."""
