"""remem integrations."""
