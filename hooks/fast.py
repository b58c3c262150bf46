"""The thin hook client: hand a Claude Code hook to the warm local service, or run the full hook.

    python -I -S hooks/fast.py EVENT [--background] -- FULL HOOK COMMAND...     < hook JSON on stdin

The hooks Claude Code waits for (the prompt's recall, the session start) cost mostly a Python start-up and
remem's imports, not the search. This script needs nothing but the standard library (the launcher runs it with
``-I -S``: no site-packages to scan), sends the hook's stdin, its ``REMEM_*``/``CLAUDE_*`` settings and working
folder to the store's service over its Unix socket, and prints the answer, computed by the same hook code in the
service (:mod:`remem.hooks.served`). When no service of this account answers (the first prompt of the day, a
TCP-only platform, ``REMEM_SERVICE=off``, a service without this protocol), it runs the full hook command with
the same stdin instead, so nothing is lost; with ``--background`` that command runs detached. A capture (Stop,
PreCompact, SessionEnd) or a detached start waits only for the service's acknowledgement, at most :data:`HANDOFF`
seconds: a hung service must not hold Claude Code, and a capture it did not acknowledge goes to the full hook,
detached, which spools it (the service, once it resumes, finds that turn captured already).

It finds the socket exactly as :func:`remem.core.service.paths.service_paths` does (a test holds the two
together), and like :func:`remem.core.service.client._connect` it sends nothing to a socket served by another
account. A hook always exits 0.
"""

from __future__ import annotations

import os
import stat
import sys
import time

try:  # the C halves of json and socket: the pure-Python modules import re and enum, a third of our start
    import _json
    import _socket
    import _struct
except ImportError:  # another Python: no thin path (main runs the full hook)
    _json = _socket = _struct = None  # type: ignore[assignment]

PROTOCOL = 1
MAX_STDIN_BYTES = 4_000_000
MAX_SOCKET_PATH = 100
CONNECT_TIMEOUT = 0.3
DEFAULT_DEADLINE = 0.95   # the recall deadline (remem.hooks.common.DEFAULT_RECALL_DEADLINE), from process start
GRACE = 0.3               # waiting for the answer past the deadline the service enforces
DEFAULT_DIGEST_DEADLINE = 2.0  # a compaction's digest (remem.hooks.common.DEFAULT_DIGEST_DEADLINE)
HANDOFF = 0.4             # a capture or a background start: the service acknowledges it before doing the work
CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
SENT_PREFIXES = ("REMEM_", "CLAUDE_")
SENT_NAMES = ("HOME", "XDG_RUNTIME_DIR")
# credentials: no hook code reads them, so none crosses (REMEM_HOOK_RECALL_TOKENS is a budget, not a token)
UNSENT_ENDINGS = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_CREDENTIALS")
_T0 = time.monotonic()


class NoService(Exception):
    """No service of ours answered before anything was sent: run the full hook instead."""


def _off(value: str | None) -> bool:
    return (value or "").strip().lower() in ("off", "0", "false", "no", "none")


def store_folder(env: dict[str, str]) -> str:
    """``REMEM_PATH``, else ``$REMEM_HOME/store`` (default ``~/.remem/store``), absolute with links resolved."""
    path = env.get("REMEM_PATH") or os.path.join(env.get("REMEM_HOME") or os.path.join("~", ".remem"), "store")
    return os.path.realpath(os.path.expanduser(path))


def socket_path(env: dict[str, str]) -> tuple[str, bool]:
    """(the service's socket for this environment's store, whether it lives outside the store folder), exactly
    as :func:`remem.core.service.paths.service_paths` places it (a test holds the two together)."""
    folder = store_folder(env)
    sock = os.path.join(folder, "service.sock")
    if len(os.fsencode(sock)) <= MAX_SOCKET_PATH:
        return sock, False
    return socket_candidates(env, folder)[0], True


def socket_candidates(env: dict[str, str], folder: str | None = None) -> list[str]:
    """Where a store path too long for AF_UNIX puts its socket, the service's choice first
    (:func:`remem.core.service.paths.fallback_socket_dir`): ``$XDG_RUNTIME_DIR``, else ``~/.remem-run`` when that
    path is short enough, else ``/tmp/remem-<uid>``. The others follow: a service started from another
    environment (without the hook's ``XDG_RUNTIME_DIR``, or with the usual ``/run/user/<uid>``) is still found."""
    import hashlib

    folder = folder or store_folder(env)
    name = hashlib.sha1(folder.encode()).hexdigest()[:16] + ".sock"
    runtime = env.get("XDG_RUNTIME_DIR") or ""
    home = env.get("HOME") or os.path.expanduser("~")
    run = os.path.join(home, ".remem-run") if home and os.path.isdir(home) else ""
    fits = bool(run) and len(os.fsencode(os.path.join(run, name))) <= MAX_SOCKET_PATH
    seen: list[str] = []
    for base in (runtime, run if fits else "", f"/tmp/remem-{os.getuid()}", f"/run/user/{os.getuid()}"):
        path = os.path.join(base, name)
        if base and path not in seen:
            seen.append(path)
    return seen


def _private_folder(folder: str) -> bool:
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _peer_uid(sock: _socket.socket) -> int | None:
    try:
        if hasattr(_socket, "SO_PEERCRED"):
            data = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _struct.calcsize("iII"))
            return int(_struct.unpack("iII", data)[1])
        if sys.platform == "darwin" or "bsd" in sys.platform:
            data = sock.getsockopt(0, getattr(_socket, "LOCAL_PEERCRED", 1), 76)
            return int(_struct.unpack_from("=II", data)[1])
    except OSError:
        return None
    return None


def connect(env: dict[str, str]) -> _socket.socket:
    """A connection to this account's service for the store; :class:`NoService` when there is none to use."""
    if _socket is None or _off(env.get("REMEM_SERVICE")) or env.get("REMEM_URL") or not hasattr(_socket, "AF_UNIX") \
            or (env.get("REMEM_SERVICE_TRANSPORT") or "").strip().lower() == "tcp":
        raise NoService("the local service is not used here")
    path, elsewhere = socket_path(env)
    paths = socket_candidates(env) if elsewhere else [path]
    last: Exception | None = None
    for path in paths:
        try:
            return _connect(path, elsewhere)
        except NoService as exc:
            last = exc
    raise NoService(str(last))


def _connect(path: str, elsewhere: bool) -> _socket.socket:
    if elsewhere and not _private_folder(os.path.dirname(path)):
        raise NoService("the socket folder is not private")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(path)
        if _peer_uid(sock) != os.getuid():
            raise NoService("the socket is not served by this account")
    except (OSError, NoService) as exc:
        sock.close()
        raise NoService(str(exc)) from None
    return sock


def _string(value: str) -> str:
    return _json.encode_basestring_ascii(value)


def request_line(request: dict) -> bytes:
    """The ``_hook`` request as one JSON line, written by hand: strings, booleans, finite numbers and flat
    string maps are all it holds (a test checks it against ``json``)."""
    def value(v: object) -> str:
        if v is True or v is False:
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, dict):
            return "{" + ",".join(f"{_string(str(k))}:{_string(str(x))}" for k, x in v.items()) + "}"
        return _string(str(v))

    body = ",".join(f"{_string(k)}:{value(v)}" for k, v in request.items())
    return ('{"m":"_hook","a":[],"k":{' + body + "}}\n").encode("ascii")


ANSWER_HEAD = '{"r":{'


def parse_answer(raw: bytes) -> dict[str, str]:
    """The hook's output (``stdout``, and ``stderr`` when it warned) from the service's answer line. An answer
    is a flat map of strings, read here with the C string scanner; anything else, e.g. an error reply from a
    service that cannot serve this hook (nothing was done), is :class:`NoService`."""
    text = raw.decode("utf-8", "replace").rstrip("\n")
    out: dict[str, str] = {}
    i = len(ANSWER_HEAD)
    if not text.startswith(ANSWER_HEAD):
        raise NoService(f"the service did not answer the hook: {text[:200]}")
    try:
        while True:
            if text[i] != '"':
                raise ValueError(i)
            key, i = _json.scanstring(text, i + 1, True)
            if text[i:i + 2] != ':"':
                raise ValueError(i)
            out[key], i = _json.scanstring(text, i + 2, True)
            if text[i] == ",":
                i += 1
                continue
            if text[i:] == "}}":
                return out
            raise ValueError(i)
    except (ValueError, IndexError):
        raise NoService(f"the service did not answer the hook: {text[:200]}") from None


def ask(sock: _socket.socket, request: dict, timeout: float) -> dict[str, str]:
    """Send one request line and read the answer line: the hook's output."""
    sock.settimeout(max(0.05, timeout))
    sock.sendall(request_line(request))
    chunks = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return parse_answer(b"".join(chunks))


def _deadline(event: str, env: dict[str, str], background: bool) -> float | None:
    """Seconds from process start the answer is waited for; None: :data:`HANDOFF` from the send, for an event
    whose answer carries nothing (a capture, a detached start), so a hung service never holds Claude Code."""
    if event in CAPTURE_EVENTS or background:
        return None
    name, default = (("REMEM_HOOK_RECALL_DEADLINE", DEFAULT_DEADLINE) if event == "UserPromptSubmit" else
                     ("REMEM_HOOK_DIGEST_DEADLINE", DEFAULT_DIGEST_DEADLINE))
    try:
        return float(env.get(name) or default) + GRACE
    except ValueError:
        return default + GRACE


def process_age() -> float:
    """Seconds since this process started (Linux /proc), so the service's deadline counts our start-up."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return age if 0 <= age < 60 else time.monotonic() - _T0
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic() - _T0


def run_full(command: list[str], data: bytes, background: bool, env: dict[str, str]) -> None:
    """The full hook, with the same stdin: in the foreground (its output is ours), or detached. Detached, its
    stdin is an unlinked temporary file (0600), so a payload larger than a pipe never holds this process."""
    import subprocess

    if not command:
        return
    if background and env.get("REMEM_HOOK_DETACH", "1") != "0":
        import tempfile

        with tempfile.TemporaryFile() as stdin:
            stdin.write(data)
            stdin.seek(0)
            subprocess.Popen(command, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, env={**os.environ, "REMEM_HOOK_DETACHED": "1"})
        return
    sys.stdout.flush()
    subprocess.run(command, input=data)


def sent_env(env: dict[str, str]) -> dict[str, str]:
    """What of the hook's environment the service gets: remem's and Claude Code's settings, no credentials."""
    return {k: v for k, v in env.items()
            if (k.startswith(SENT_PREFIXES) or k in SENT_NAMES) and not k.upper().endswith(UNSENT_ENDINGS)
            and "OAUTH" not in k.upper()}


def main(argv: list[str]) -> int:
    if "--" in argv:
        cut = argv.index("--")
        own, command = argv[:cut], argv[cut + 1:]
    else:
        own, command = argv, []
    event = own[0] if own else ""
    background = "--background" in own[1:]
    try:
        data = sys.stdin.buffer.read(MAX_STDIN_BYTES) if sys.stdin is not None and not sys.stdin.isatty() else b""
    except OSError:
        data = b""
    env = dict(os.environ)
    try:
        sock = connect(env)
    except NoService:
        run_full(command, data, background, env)
        return 0
    sent = sent_env(env)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = env.get("PWD", "/")
    request = {"v": PROTOCOL, "event": event, "payload": data.decode("utf-8", "replace"), "env": sent,
               "cwd": cwd, "age": process_age(), "background": background}
    deadline = _deadline(event, env, background)
    try:
        out = ask(sock, request, HANDOFF if deadline is None else deadline - process_age())
    except NoService:
        run_full(command, data, background, env)  # e.g. a service from before this protocol: nothing was done
        return 0
    except (OSError, ValueError):
        if event in CAPTURE_EVENTS:  # not acknowledged (a hung service): the full hook spools it, detached
            run_full(command, data, True, env)
        return 0  # a prompt goes on without memory
    finally:
        sock.close()
    if out.get("stderr"):
        sys.stderr.write(out["stderr"])
    if out.get("stdout"):
        sys.stdout.write(out["stdout"])
    return 0


if __name__ == "__main__":
    code = 0
    try:
        code = main(sys.argv[1:])
    except BaseException as exc:  # noqa: BLE001 - a hook never breaks the session
        try:
            sys.stderr.write(f"remem hook: {type(exc).__name__}: {str(exc)[:300]}\n")
        except Exception:  # noqa: BLE001
            pass
    try:
        sys.stdout.flush()
    finally:
        os._exit(code)
