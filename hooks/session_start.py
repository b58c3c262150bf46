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


from .common import HookInput, hook_command, log, service_running, uses_service
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
        warm_in_background()
    return ""


def warm_in_background() -> None:
    """Start the local service now (detached), so the first prompt's recall does not wait for it."""
    import subprocess

    try:
        subprocess.Popen(hook_command("warm"), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                         start_new_session=True)
    except OSError as exc:
        log("session-start", f"could not wake the service: {exc}")


