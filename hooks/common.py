"""What every hook shares: settings, the project (tenant) of a session, state files and the hook log.

Stdlib only at import (plus ``remem.core.config``, itself stdlib only, for 0700/0600 state files), so a hook that
decides to do nothing costs a Python start and its log line (which, like every byte a hook writes, passes
remem's redactor, imported then). Every helper here is defensive: a hook must never break the Claude Code
session, so state that cannot be read is "no state" and a log that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remem.core.config import private_dir, private_opener, write_private
from remem.core.store.backends import OWNER_FILE
from remem.core.unicode import no_surrogates, valid_unicode

from .callenv import elapsed, environ, expand, getcwd, getenv, served

# ---------------------------------------------------------------------------------------------- settings
DEFAULT_RECALL_TOKENS = 800
DEFAULT_DIGEST_TOKENS = 500
DEFAULT_RECALL_DEADLINE = 0.95    # seconds from process start: the cold budget is 1 s
DEFAULT_COLD_DEADLINE = 4.0       # ... unless the service is still starting (first prompt of the day)
DEFAULT_DIGEST_DEADLINE = 2.0
MAX_CONTEXT_CHARS = 9_500         # Claude Code caps additionalContext at 10,000 chars
LOG_MAX_BYTES = 1_000_000


def env_float(name: str, default: float) -> float:
    try:
        return float(getenv(name, "") or default)
    except ValueError:
        return default


def env_int(name: str, default: int) -> int:
    try:
        return int(getenv(name, "") or default)
    except ValueError:
        return default


def env_flag(name: str, default: bool) -> bool:
    value = getenv(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def remem_home() -> Path:
    home = getenv("REMEM_HOME")
    return Path(expand(home)) if home else Path(expand("~/.remem"))


def hooks_dir() -> Path:
    """State of the Claude Code hooks: per-session capture offsets, the capture spool, the last recall."""
    return remem_home() / "hooks"


def last_recall_dir() -> Path:
    """Each project's last prompt recall (the injected text), one JSON file per project."""
    return hooks_dir() / "last_recall"


# ---------------------------------------------------------------------------------------------- processes
# ``python -m remem.hooks.main`` would put the working directory (the user's project) first on sys.path, so a
# project with a ``remem`` folder of its own (this repository's parent, say) would shadow the installed remem.
# ``-c`` with that entry dropped runs the installed one wherever Claude Code starts the hook.
ENTRY_CODE = "import sys; sys.path[:1] = []; from remem.hooks.main import main; sys.exit(main())"


def hook_command(*args: str) -> list[str]:
    """The command line of a detached remem hook process (``drain``) with this Python."""
    return [sys.executable, "-c", ENTRY_CODE, *args]


# ---------------------------------------------------------------------------------------------- log
def log(event: str, message: str, **fields: Any) -> None:
    """One JSON line in $REMEM_HOME/logs/hooks.log. Never raises; never logs prompt or memory text, and what
    it does log (error messages, paths) goes through the redactor first."""
    try:
        folder = private_dir(remem_home() / "logs")
        path = folder / "hooks.log"
        try:
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, folder / "hooks.log.1")
        except FileNotFoundError:
            pass
        line = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "pid": os.getpid(), "event": event, "msg": scrub(message),
                "ms": round(elapsed() * 1000, 1), **scrub(fields)}
        with open(path, "a", encoding="utf-8", opener=private_opener) as fh:
            fh.write(json.dumps(line, default=str) + "\n")
    except Exception:  # noqa: BLE001 - logging must not be the thing that breaks a hook
        pass


def warn(event: str, reason: str, **fields: Any) -> None:
    """The one-line stderr reason Claude Code shows in verbose mode, plus the log line."""
    try:
        call = served()
        if call is not None:  # answered in the service: the line goes back to the hook process's stderr
            call.stderr.append(f"remem {event}: {reason}\n")
        else:
            sys.stderr.write(f"remem {event}: {reason}\n")
            sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    log(event, reason, **fields)


# ---------------------------------------------------------------------------------------------- redaction
# Keys whose values are identifiers remem itself keys data by (the tenant is the store's scope key): written
# as they are, so a capture still reaches its project. Every other string a hook writes is redacted.
IDENTIFIER_KEYS = frozenset({"tenant", "session", "transcript", "last_uuid", "id", "event", "trigger", "shown"})
_UNAVAILABLE = "[REDACTED:unavailable]"


def scrub(value: Any) -> Any:
    """``value`` (a string or JSON-like data) with every string redacted, as the hooks' settings say
    (``REMEM_HOOK_PII``, ``redact.json``). Nothing a hook writes to disk skips this.

    A broken ``redact.json`` falls back to the built-in rules; if even those cannot load, strings are replaced
    whole: a log line may lose its text, a secret never reaches the disk.
    """
    try:
        from remem.core.redact.redactor import Redactor, configured

        pii = env_flag("REMEM_HOOK_PII", True)
        try:
            redactor = configured(pii, environ())
        except ValueError:  # redact.json unreadable: the built-in rules still apply
            redactor = Redactor(pii=pii)
        if isinstance(value, str):
            return redactor.redact(value).text
        return redactor.redact_data(value)[0]
    except Exception:  # noqa: BLE001 - no redactor, no raw text
        return _mask(value)


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return _UNAVAILABLE if value else value
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mask(v) for v in value]
    return value


def scrub_record(data: dict[str, Any]) -> dict[str, Any]:
    """A state/spool record with every value scrubbed except the identifier keys (:data:`IDENTIFIER_KEYS`)."""
    return {k: v if k in IDENTIFIER_KEYS else scrub(v) for k, v in data.items()}


# ---------------------------------------------------------------------------------------------- files
def read_json(path: Path) -> Any:
    """The JSON in ``path``, or None when it is missing, unreadable or corrupt."""
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def rescrub_state() -> int:
    """Write every hook state file again through :func:`write_json`, so rules added since (a new pattern in
    ``redact.json``) reach what the hooks keep (offsets, the spool, the last recall): ``remem redact --store``
    calls it. Returns how many files changed."""
    changed = 0
    for path in sorted(hooks_dir().rglob("*.json")) if hooks_dir().is_dir() else ():
        data = read_json(path)
        if data is None or path.is_symlink():
            continue
        before = path.read_bytes()
        write_json(path, data)
        changed += path.read_bytes() != before
    return changed


def write_json(path: Path, data: Any) -> None:
    """Atomic write (temp file + rename), so a crash or a full disk never leaves half a state file. The data is
    redacted first (:func:`scrub_record` for a record, :func:`scrub` otherwise). A lone surrogate (half an
    emoji) becomes U+FFFD: UTF-8 cannot hold it, and one such character must not lose the whole file."""
    data = no_surrogates(data)  # first: the redactor must see the text, not fail on it
    data = scrub_record(data) if isinstance(data, dict) else scrub(data)
    private_dir(path.parent)
    write_private(path, valid_unicode(json.dumps(data, ensure_ascii=False, default=str)), durable=True)


# a lone surrogate as JSON writes it (an escape) or as Python holds it: json.loads lets both through
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")  # an escape, or UTF-8 bytes of one


def may_hold_surrogates(text: str | bytes) -> bool:
    """Whether JSON text may decode to lone surrogates (a cheap scan, so clean text is not walked)."""
    if isinstance(text, bytes):
        return _SURROGATE_BYTES.search(text) is not None
    return _SURROGATE_HINT.search(text) is not None


def safe_name(value: str) -> str:
    """A file-name-safe key for a session id or project path."""
    cleaned = "".join(c if c.isalnum() or c in "-_" else "_" for c in value)[:64]
    digest = hashlib.sha1(value.encode("utf-8", "replace")).hexdigest()[:10]
    return f"{cleaned}-{digest}" if cleaned != value else cleaned


# ---------------------------------------------------------------------------------------------- the store
def store_folder() -> Path:
    """Where ``Memory()`` keeps the embedded store (REMEM_PATH, else $REMEM_HOME/store)."""
    env = getenv("REMEM_PATH")
    return Path(expand(env)) if env else remem_home() / "store"


def uses_service() -> bool:
    """Whether ``Memory()`` goes through the local service here (REMEM_SERVICE not off, no REMEM_URL)."""
    mode = (getenv("REMEM_SERVICE") or "auto").strip().lower()
    return mode not in ("off", "0", "false", "no", "none") and not getenv("REMEM_URL")


def service_running() -> bool:
    """Whether the store's local service is up (its state file names a live pid), checked without connecting.

    A hook uses it to choose its deadline: a service that is not up yet has to start first.
    """
    state = read_json(store_folder() / "service.json")
    pid = state.get("pid") if isinstance(state, dict) else None
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def store_held_elsewhere() -> bool:
    """Whether a process that is no service has the store open (it holds the flock on the store's
    ``remem.lock``, which names its role): no service can start then, so a hook need not wait the cold deadline
    for one. A service still starting holds it as a service."""
    try:
        import fcntl

        fd = os.open(store_folder() / OWNER_FILE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (ImportError, OSError):
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # got it: no one has the store open
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        except BlockingIOError:
            return not os.read(fd, 64).decode("ascii", "replace").split()[1:2] == ["service"]
        except OSError:
            return False
    finally:
        os.close(fd)


def open_memory(deadline: float) -> Any:
    """``Memory()`` as configured by the environment, retrying while another process holds the store (when the
    service answers the hook: the service's own store)."""
    call = served()
    if call is not None:
        return call.memory()
    from remem import Memory, StoreLockedError

    while True:
        try:
            return Memory()
        except StoreLockedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


# ---------------------------------------------------------------------------------------------- project
def find_project_root(start: str | os.PathLike[str]) -> Path:
    """The checkout above ``start`` (the folder holding its ``.git`` folder, or a worktree's ``.git`` file), else
    ``start``: what file paths in a transcript are relative to. (The tenant is :func:`project_tenant`.)"""
    from remem.core.scope import find_project

    project = find_project(expand(str(start)))
    return project.folder if project is not None else Path(os.path.realpath(expand(str(start))))


def project_tenant(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The memory tenant of a Claude Code session: remem's one default scope rule
    (:func:`remem.core.scope.default_scope`) for the session's folder. Every worktree and subfolder of a git
    repository share its tenant; outside a repository it is None, the global space (as for ``remem list``
    run there). ``REMEM_HOOK_TENANT``, then ``REMEM_TENANT``/``REMEM_PROJECT``, override it."""
    from remem.core.scope import default_scope

    start = cwd or getenv("CLAUDE_PROJECT_DIR") or getcwd()
    env = environ()
    return default_scope(cwd=expand(str(start)), env=os.environ if env is None else env, hook=True).scope.tenant


def scope_label(tenant: str | None) -> str:
    """How a message names a hook's tenant."""
    return f"project {tenant}" if tenant is not None else "the global space"


# ---------------------------------------------------------------------------------------------- payload
@dataclass
class HookInput:
    """The JSON Claude Code sends on stdin, read defensively (every field optional, unknown ones kept)."""

    event: str = ""
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    prompt: str = ""
    source: str = ""
    reason: str = ""
    trigger: str = ""
    last_assistant_message: str = ""
    stop_hook_active: bool = False
    agent_id: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, event: str | None = None) -> "HookInput":
        """Never raises: malformed JSON yields an empty input (the hook then does nothing)."""
        try:
            data = json.loads(text) if text and text.strip() else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        elif may_hold_surrogates(text):
            data = no_surrogates(data)

        def s(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        return cls(event=event or s("hook_event_name"), session_id=s("session_id"),
                   transcript_path=s("transcript_path"), cwd=s("cwd"), prompt=s("prompt"), source=s("source"),
                   reason=s("reason"), trigger=s("trigger"), last_assistant_message=s("last_assistant_message"),
                   stop_hook_active=data.get("stop_hook_active") is True, agent_id=s("agent_id"), raw=data)

    @property
    def tenant(self) -> str | None:
        return project_tenant(self.cwd or None)

    @property
    def folder(self) -> Path:
        """The checkout the session runs in (a worktree's own root): what transcript paths are relative to."""
        return find_project_root(self.cwd or getenv("CLAUDE_PROJECT_DIR") or getcwd())
