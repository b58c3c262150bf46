"""remem core/backends."""
