"""remem integrations/pydantic_ai."""
