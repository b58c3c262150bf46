"""remem hooks."""
