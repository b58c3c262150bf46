"""One-time offers the plugin makes at a session's first prompt (today: importing earlier Claude Code sessions)."""

from __future__ import annotations

import os
from pathlib import Path

from .callenv import getenv, home
from .common import hooks_dir, read_json, write_json

OFFERS_FILE = "offers.json"


def claude_projects_dir() -> Path:
    base = getenv("CLAUDE_CONFIG_DIR") or os.path.join(home(), ".claude")
    return Path(base) / "projects"


def import_offer() -> str:
    """Once per REMEM_HOME: offer to import the sessions Claude Code already keeps, if there are any."""
    path = hooks_dir() / OFFERS_FILE
    offers = read_json(path)
    offers = offers if isinstance(offers, dict) else {}
    if offers.get("import"):
        return ""
    try:
        count = sum(1 for _ in claude_projects_dir().glob("*/*.jsonl"))
    except OSError:
        count = 0
    if not count:
        return ""
    offers["import"] = True
    try:
        write_json(path, offers)
    except OSError:
        return ""  # cannot remember having offered: better not to offer at every start
    return (f"remem: {count} earlier Claude Code session{'s' if count != 1 else ''} can be imported into this "
            f"machine's memory so they are searchable here; run /remem:memory import (or `remem import "
            f"claude-code`). Offered once.")
