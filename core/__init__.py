"""remem core."""
