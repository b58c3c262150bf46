"""remem bench."""
