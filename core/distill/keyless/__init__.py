"""The keyless distiller: memories and a session summary from a conversation, offline, with no model.

:mod:`.distiller` runs it; the other modules are its parts, one concern each: what a sentence says
(:mod:`.said`), the kind patterns (:mod:`.patterns`) and the cues that join sentences (:mod:`.cues`), whole
messages (:mod:`.whole`), choices and options (:mod:`.choices`, :mod:`.options`), problem/fix exchanges
(:mod:`.exchange`), fragments and the listener (:mod:`.fragments`, :mod:`.listener`), the summary (:mod:`.summary`).
"""

from .distiller import KeylessDistiller, between_people, split_sentences

__all__ = ["KeylessDistiller", "between_people", "split_sentences"]
