"""Distillation: conversations into memories (keyless or LLM), admission, audit, the pending queue."""
