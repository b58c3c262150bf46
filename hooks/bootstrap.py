"""First-run setup of the Claude Code plugin: a private venv under ``${CLAUDE_PLUGIN_DATA}`` built from the plugin
folder, in the background, so a user who only ran ``/plugin install`` gets memory from their next prompt.

Runs with whatever ``python3`` the machine has (3.10+) and imports nothing from remem: the launcher calls it as a
script when it finds no remem, and again when the plugin was updated (its stamp no longer matches the venv's).

    python3 hooks/bootstrap.py ensure --stamp S [--event EVENT] < hook JSON  # start the setup if needed; say so once
    python3 hooks/bootstrap.py install --stamp S                         # the detached worker (pip install)

While it runs, every hook Claude Code starts still comes here: :func:`keep_pointer` keeps where the session's
transcript is and how far it had got (a path and a byte count, never its text) under
``$REMEM_HOME/hooks/pending/``, and the first hook that runs with remem captures those turns
(:mod:`remem.hooks.pending`), so what was said while remem set itself up is not lost.

State lives in ``${CLAUDE_PLUGIN_DATA}`` (0700, every file 0600): ``venv/`` with ``venv/remem-stamp``,
``setup.json`` (what was said and when), ``setup.log`` (the steps, without paths, and pip's output through remem's
redactor) and ``setup.lock``. The stamp is two checksums (of the plugin folder's path and of its manifests) and
setup.json holds only the stamp, numbers and fixed words (:func:`_clean` drops anything else) and passes remem's
redactor when this Python has one, so no path or other text of the user's reaches the disk from here. Every path
is fail-open: a setup that cannot start or fails says so once and the session carries on without memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

MIN_PYTHON = (3, 10)
STAMP_FILE = "remem-stamp"
STALE_AFTER = 1800.0  # seconds: a setup still "running" after this long is considered dead and restarted
EXTRAS = "mcp"
SAY_AT = "UserPromptSubmit"  # the hook whose output Claude Code always waits for and shows (SessionStart may not)


def data_dir() -> Path | None:
    value = os.environ.get("CLAUDE_PLUGIN_DATA", "").strip()
    return Path(value) if value else None


def plugin_root() -> Path:
    value = os.environ.get("CLAUDE_PLUGIN_ROOT", "").strip()
    return Path(value) if value else Path(__file__).resolve().parents[1]


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text("utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


_STAMP = re.compile(r"[0-9 |]{1,80}")
_SAID = re.compile(r"(python|(start|failed|ready):[0-9 |]{1,80})")
_STATUS = ("running", "ready", "failed")


def _clean(data: dict) -> dict:
    """setup.json's schema and nothing else: the stamp (checksums), a pid, times, a status word and the keys of
    what was said; any other value (a path, a message) is dropped rather than written."""
    out: dict = {}
    if isinstance(data.get("stamp"), str) and _STAMP.fullmatch(data["stamp"]):
        out["stamp"] = data["stamp"]
    if isinstance(data.get("pid"), int) or data.get("pid") is None:
        out["pid"] = data.get("pid")
    for key in ("started", "finished"):
        if isinstance(data.get(key), (int, float)):
            out[key] = float(data[key])
    if data.get("status") in _STATUS:
        out["status"] = data["status"]
    out["said"] = [k for k in data.get("said", []) if isinstance(k, str) and _SAID.fullmatch(k)]
    return out


def _redacted(data: dict) -> dict:
    """``data`` through remem's redactor when this Python has remem (an upgrade runs in the plugin's venv); the
    first setup runs on a bare system Python, where :func:`_clean` alone guarantees there is no text."""
    try:
        from remem.core.redact.redactor import configured
    except Exception:  # noqa: BLE001 - no remem here (yet)
        return data
    try:
        return configured(True).redact_data(data)[0]
    except Exception:  # noqa: BLE001 - a broken redact.json: the built-in rules
        from remem.core.redact.redactor import Redactor

        return Redactor(pii=True).redact_data(data)[0]


def _private_file(path: Path, append: bool = False) -> int:
    """An fd for writing ``path`` (created, and truncated unless ``append``) with mode 0600 whatever the umask or
    an old file's mode."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        pass
    return fd


def _write(path: Path, data: dict) -> None:
    data = _redacted(_clean(data))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with os.fdopen(_private_file(tmp), "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def installed_stamp(data: Path) -> str | None:
    try:
        return (data / "venv" / STAMP_FILE).read_text("utf-8").strip()
    except OSError:
        return None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------------------------------- ensure
def ensure(stamp: str, event: str = "", payload: dict | None = None) -> str:
    """Start the setup when the venv is missing or stale; returns what to tell the person (maybe ""). A hook's
    ``payload`` leaves a pointer to its session's transcript (:func:`keep_pointer`) while remem is not there."""
    if payload:
        try:
            keep_pointer(payload, event)
        except OSError:
            pass
    data = data_dir()
    if data is None:
        return ("remem is not installed and CLAUDE_PLUGIN_DATA is not set, so it cannot set itself up; "
                "see docs/claude-code.md") if event == SAY_AT else ""
    if sys.version_info < MIN_PYTHON:
        return _say_once(data, "python", f"remem needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+ to set itself up; "
                         f"found {sys.version.split()[0]} at {sys.executable}.", event)
    _private_dir(data)
    state = _read(data / "setup.json")
    if installed_stamp(data) == stamp:
        return ""
    running = state.get("stamp") == stamp and _alive(state.get("pid")) and \
        time.time() - float(state.get("started") or 0) < STALE_AFTER
    if state.get("stamp") == stamp and state.get("status") == "failed":
        return _say_once(data, f"failed:{stamp}", f"remem could not set up its Python environment "
                         f"(see {data / 'setup.log'}); the session continues without memory.", event)
    updating = (data / "venv" / STAMP_FILE).exists()
    if not running:
        pid = _spawn_install(stamp)
        state = {"stamp": stamp, "pid": pid, "started": time.time(), "status": "running",
                 "said": state.get("said", [])}
        _write(data / "setup.json", state)
    kind = "updating" if updating else "setting up"
    return _say_once(data, f"start:{stamp}", f"remem is {kind} its Python environment in the background "
                     f"({data / 'venv'}, about a minute; progress in {data / 'setup.log'}). What you say meanwhile "
                     f"is kept and remembered once it is ready.", event)


def ready_notice(data: Path | None) -> str:
    """Once, at the first prompt after a setup this person was told about finished: that memory is on now (or,
    for a setup that failed, where its log is). Called by the hooks once remem runs (:mod:`remem.hooks.main`)."""
    if data is None:
        return ""
    state = _read(data / "setup.json")
    stamp = state.get("stamp")
    if not isinstance(stamp, str) or f"start:{stamp}" not in state.get("said", []):
        return ""
    if state.get("status") == "ready" and installed_stamp(data) == stamp:
        return _say_once(data, f"ready:{stamp}", "remem is ready: this project's memory is on from this prompt "
                         "(/remem:memory shows what it recalled; /remem:memory status, how it is set up).", SAY_AT)
    return ""


# ---------------------------------------------------------------------------------------------- pointers
POINTER_EVENTS = ("UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
_SESSION = re.compile(r"[A-Za-z0-9_-]{1,128}")


def pending_dir() -> Path:
    """``$REMEM_HOME/hooks/pending`` (default ``~/.remem``), as remem.hooks.common.hooks_dir has it."""
    home = os.environ.get("REMEM_HOME", "").strip()
    return Path(os.path.expanduser(home or "~/.remem")) / "hooks" / "pending"


def _private_dirs(path: Path) -> None:
    """``path`` and the folders above it that do not exist yet, each 0700 (as remem's private_dir)."""
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
    os.chmod(path, 0o700)


def keep_pointer(payload: dict, event: str) -> Path | None:
    """Where the session's transcript is and its size now (the turn's position), for the first hook that runs
    with remem to capture. No text: the session id, the transcript's and the project's paths, a byte count and
    times. One file per session (its latest position; the first time it was seen orders them); fsynced."""
    session, transcript, cwd = (payload.get(k) for k in ("session_id", "transcript_path", "cwd"))
    if event not in POINTER_EVENTS or not isinstance(session, str) or not _SESSION.fullmatch(session) \
            or not isinstance(transcript, str) or not os.path.isabs(transcript) or not isinstance(cwd, str):
        return None
    folder = pending_dir()
    _private_dirs(folder)
    path = folder / f"{session}.json"
    try:
        size = os.stat(transcript).st_size
    except OSError:
        size = 0
    first = _read(path).get("first_seen")
    pointer = {"session": session, "transcript": transcript, "cwd": cwd, "event": event, "offset": size,
               "first_seen": first if isinstance(first, (int, float)) else time.time(), "seen": time.time()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = _private_file(tmp)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(pointer, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def _say_once(data: Path, key: str, message: str, event: str) -> str:
    """Say ``message`` once, at a prompt (keys remembered in setup.json)."""
    if event != SAY_AT:
        return ""
    path = data / "setup.json"
    state = _read(path)
    said = [k for k in state.get("said", []) if isinstance(k, str)]
    if key in said:
        return ""
    state["said"] = (said + [key])[-20:]
    try:
        _write(path, state)
    except OSError:
        pass
    return message


def _spawn_install(stamp: str) -> int:
    data = _private_dir(data_dir())  # type: ignore[arg-type]
    log = _private_file(data / "setup.log", append=True)
    try:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "install", "--stamp", stamp],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                                start_new_session=True, env={**os.environ, "REMEM_HOOKS": "0"})
    finally:
        os.close(log)
    return proc.pid


# ---------------------------------------------------------------------------------------------- install
def _run(cmd: list[str], what: str) -> None:
    print(f"$ {what}", flush=True)
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _pip(python: Path, args: list[str]) -> None:
    """pip in the venv. Its output (index URLs with credentials, paths) reaches setup.log only through remem's
    redactor, run by that venv's Python once remem is in it; output that cannot be redacted is not kept."""
    cmd = [str(python), "-m", "pip", *args]
    print(f"$ python -m pip {args[0]} ...", flush=True)
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
    output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    print(_redacted_text(python, output) if output.strip() else "(pip printed nothing)", flush=True)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd[:4])


REDACT_CODE = ("import sys; sys.path[:1] = []; from remem.core.redact.redactor import Redactor; "
               "sys.stdout.write(Redactor(pii=True).redact(sys.stdin.read()).text)")


def _redacted_text(python: Path, text: str) -> str:
    try:
        proc = subprocess.run([str(python), "-c", REDACT_CODE], input=text.encode("utf-8"), capture_output=True,
                              timeout=120, env={**os.environ, "REMEM_HOOKS": "0"})
    except (OSError, subprocess.SubprocessError):
        proc = None
    if proc is None or proc.returncode:
        return (f"(pip's output, {len(text.splitlines())} lines, is not kept: remem's redactor could not run in "
                f"the venv; run the install by hand to see it)")
    return proc.stdout.decode("utf-8", "replace")


SKIP = shutil.ignore_patterns(".git", ".venv", "venv", "node_modules", "__pycache__", "*.egg-info", "build", "dist",
                              "tests", "results", ".pytest_cache")


def _source_copy(root: Path, dest: Path) -> Path:
    """The package sources copied out of the plugin folder, so pip's build never writes into it."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(root, dest, ignore=SKIP)
    return dest


def install(stamp: str) -> int:
    """Build or upgrade ``venv`` from the plugin folder; only a complete install gets the stamp."""
    data = _private_dir(data_dir())  # type: ignore[arg-type]
    root = plugin_root()
    venv = data / "venv"
    state_path = data / "setup.json"
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] remem setup from the plugin folder (stamp {stamp})", flush=True)
    try:
        import fcntl

        lock = os.fdopen(_private_file(data / "setup.lock", append=True), "a")
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # one setup at a time; a second one waits, then finds it done
    except (ImportError, OSError):
        lock = None
    try:
        if installed_stamp(data) == stamp:
            return 0
        # built where it lives, so every script's #! line names the venv's own python (a venv built elsewhere
        # and renamed kept the old folder there); it counts only once it has its stamp, written last
        fresh = not (venv / STAMP_FILE).exists()
        if fresh:
            shutil.rmtree(venv, ignore_errors=True)  # nothing, or a build that died half-way
            _run([sys.executable, "-m", "venv", str(venv)], "python -m venv venv")
        shutil.rmtree(data / "venv.new", ignore_errors=True)  # where an earlier version built it
        source = _source_copy(root, data / "src")
        try:
            _pip(venv_python(venv), ["install", "--disable-pip-version-check", "--quiet", "--upgrade",
                                     f"{source}[{EXTRAS}]"])
        finally:
            shutil.rmtree(source, ignore_errors=True)
        fixed = fix_shebangs(venv)
        if fixed:
            print(f"fixed the #! line of {fixed} scripts", flush=True)
        with os.fdopen(_private_file(venv / STAMP_FILE), "w", encoding="utf-8") as fh:
            fh.write(stamp + "\n")  # checksums only (see main)
        state = _read(state_path)
        state.update(status="ready", finished=time.time(), pid=None)
        _write(state_path, state)
        print("remem setup done", flush=True)
        return 0
    except (OSError, subprocess.CalledProcessError) as exc:
        code = f" (exit status {exc.returncode})" if isinstance(exc, subprocess.CalledProcessError) else ""
        print(f"remem setup failed: {type(exc).__name__}{code}", flush=True)
        state = _read(state_path)
        state.update(status="failed", finished=time.time(), pid=None, stamp=stamp)
        _write(state_path, state)
        return 1
    finally:
        if lock is not None:
            lock.close()


def fix_shebangs(venv: Path) -> int:
    """Point every script in ``venv/bin`` whose ``#!`` names another folder's python (a venv an earlier
    version built as ``venv.new`` and renamed) at this venv's; returns how many were fixed."""
    fixed = 0
    own = str(venv / "bin")
    for script in (venv / "bin").iterdir() if (venv / "bin").is_dir() else ():
        try:
            if script.is_symlink() or not script.is_file() or script.stat().st_size > 1_000_000:
                continue
            head = script.read_bytes()
        except OSError:
            continue
        first, sep, rest = head.partition(b"\n")
        m = re.fullmatch(rb"#!(\S*)/bin/(python[0-9.]*)(\s.*)?", first)
        if not m or m.group(1).decode("utf-8", "replace") == str(venv) or not sep:
            continue
        if not m.group(1).endswith(b"/venv.new"):
            continue
        line = f"#!{own}/{m.group(2).decode()}".encode() + (m.group(3) or b"")
        tmp = script.with_name(f".{script.name}.tmp")
        tmp.write_bytes(line + b"\n" + rest)
        os.chmod(tmp, script.stat().st_mode & 0o7777)
        os.replace(tmp, script)
        fixed += 1
    return fixed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bootstrap.py")
    p.add_argument("action", choices=["ensure", "install"])
    p.add_argument("--stamp", required=True)
    p.add_argument("--event", default="")
    args = p.parse_args(argv)
    if not _STAMP.fullmatch(args.stamp):  # not the launcher's checksums: a checksum of it, so no text is written
        import zlib

        args.stamp = str(zlib.crc32(args.stamp.encode("utf-8", "replace")))
    if args.action == "install":
        return install(args.stamp)
    try:
        message = ensure(args.stamp, args.event, _payload())
    except Exception as exc:  # noqa: BLE001 - setup trouble must never break the session
        sys.stderr.write(f"remem setup: {type(exc).__name__}: {exc}\n")
        return 0
    if message and args.event == SAY_AT:
        # for the person, not the model: Claude Code shows a systemMessage to the user only
        sys.stdout.write(json.dumps({"systemMessage": message}) + "\n")
    elif message:
        sys.stderr.write(message + "\n")
    return 0


MAX_STDIN_BYTES = 4_000_000


def _payload() -> dict | None:
    """The hook's JSON on stdin, if there is one (only its session, transcript path and folder are used)."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        return None
    try:
        data = json.loads(stream.buffer.read(MAX_STDIN_BYTES) or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


if __name__ == "__main__":
    sys.exit(main())
