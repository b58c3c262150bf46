"""remem integrations/llamaindex."""
