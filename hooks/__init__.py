"""remem as a Claude Code plugin: the hooks behind ``hooks/hooks.json`` (run through ``hooks/remem-hook``).

- ``main``: the ``remem-hook`` entry point (dispatch, exit 0 no matter what).
- ``recall``: UserPromptSubmit recall and the SessionStart digest, under an in-process deadline.
- ``capture``: Stop / PreCompact / SessionEnd incremental capture into a spool, and its detached drainer.
- ``transcript``: defensive, incremental reading of Claude Code's transcript JSONL.
- ``memory_cmd``: the /remem:memory command's backend. ``common``: settings, project tenant, state files, log.

Nothing here is imported by ``remem`` itself, and these modules import remem lazily, only when a hook has work.
"""
