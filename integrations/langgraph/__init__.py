"""remem integrations/langgraph."""
