"""SessionStart: get the session ready without making it wait.

- ``startup`` / ``clear`` (run detached by the launcher): the session owes a digest, delivered with its first
  prompt together with that prompt's recall, so the two never repeat each other; the local service is woken in
  the background so the first recall finds it warm.
- ``compact`` (the one SessionStart Claude Code waits for): the digest comes back at once
  (:func:`remem.hooks.recall.compact_digest`).
- ``resume``: the transcript replays what was injected before; nothing to do.

:func:`~remem.hooks.offers.import_offer` is the one-time offer, made with the first prompt's digest, to import the Claude Code
sessions already on disk (``/remem:memory import``).
"""

from __future__ import annotations


from .common import HookInput, log, service_running, uses_service
from .injected import Shown, state_path

def session_start(inp: HookInput) -> str:
    """Context for Claude (only after a compaction; otherwise the first prompt brings the digest)."""
    source = (inp.source or "startup").lower()
    if source == "compact":
        from .recall import compact_digest

        return compact_digest(inp) or ""
    exists = state_path(inp.session_id).exists()
    if source == "clear" or (source != "resume" and exists):
        # a new or cleared context owes its digest; a brand-new session needs no file for that (and writing
        # one could race its first prompt, which Claude Code may already be running)
        shown = Shown.load(inp.session_id)
        shown.reset(digest_pending=True, context_lost=source == "clear")
        try:
            shown.save()
        except OSError as exc:
            log("session-start", f"could not write the session record: {exc}")
    if uses_service() and not service_running():
        wake_service()
    return ""


def wake_service() -> None:
    """Start the local service now, so the first prompt's recall does not wait for it. This process is already
    detached (the launcher and the thin client run ``SessionStart --background`` so), so it starts the service
    itself: a further hook process for it cost the first prompt ~0.1 s of Python start-up and imports."""
    import time

    from .common import open_memory

    try:
        open_memory(time.monotonic() + 30).close()
    except Exception as exc:  # noqa: BLE001 - the first prompt starts it then
        log("session-start", f"could not wake the service: {type(exc).__name__}: {str(exc)[:200]}")


