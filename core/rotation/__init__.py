"""Context rotation, framework-neutral: when a conversation passes its token budget, its oldest messages are
captured into memory and, once the capture is confirmed, dropped from what the model is sent, a short digest in
their place (:mod:`.rotator`). The adapters (``integrations/langgraph/rotation.py``,
``integrations/pydantic_ai/rotation.py``) translate their messages and apply the cut."""

from .rotator import DIGEST_MARK, Rotator, cut_point

__all__ = ["DIGEST_MARK", "Rotator", "cut_point"]
