"""Providers: embedders (local and OpenAI-compatible) and the LLM client."""
