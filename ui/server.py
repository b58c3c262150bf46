"""``remem ui``: serve the inspector for a store on 127.0.0.1, print (and open) its tokened URL."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from remem.hooks.common import remem_home

from . import launch

DEFAULT_PORT = 8767


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 only (never 0.0.0.0); ``port`` 0 lets the OS pick a free one.

    The protocol is named (IPPROTO_TCP) so asyncio turns Nagle off on accepted connections; with proto 0 it
    does not, and every response waits ~40 ms for the client's delayed ACK."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class Inspector:
    """The inspector served from a background thread (tests, benchmarks, screenshots): ``url`` carries the token."""

    def __init__(self, mem: Any, port: int = 0, **app_kwargs: Any) -> None:
        import uvicorn

        from .app import create_app

        self.sock = bind(port)
        self.port = int(self.sock.getsockname()[1])
        self.app = create_app(mem, port=self.port, **app_kwargs)
        self.guard = self.app.state.inspector.guard
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                        name="remem-ui", daemon=True)

    @property
    def url(self) -> str:
        return self.guard.url()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Inspector":
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the inspector did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(10)
        self.app.state.inspector.jobs.join()
        self.sock.close()

    def __enter__(self) -> "Inspector":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _open_soon(page: Any) -> None:
    time.sleep(0.5)  # the server is listening by then
    launch.open_browser(page)


def ui_main(args: Any, open_memory: Any) -> int:
    """Run until Ctrl-C. ``open_memory`` opens the store the CLI's --path/--url/--embedder name."""
    import uvicorn

    from .app import create_app

    try:
        sock = bind(args.port)
    except OSError as exc:
        if args.port_given:
            raise ValueError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from exc
        sock = bind(0)
    port = int(sock.getsockname()[1])
    with open_memory() as mem:
        app = create_app(mem, port=port)
        guard = app.state.inspector.guard
        from .store import GLOBAL_KEY

        tenant = getattr(args, "tenant", None) or (GLOBAL_KEY if getattr(args, "global_space", False) else None)
        where = ("/memories", {"t": tenant}) if tenant else ("/", {})
        url = guard.url(where[0], **where[1])
        print(f"remem inspector for {app.state.inspector.store_label()}\n  {url}\n"
              "Open this link (it carries the access token; keep it to yourself); Ctrl-C stops the inspector.",
              flush=True)
        page = None
        if not args.no_browser:  # the browser gets a file's path, never the token: its arguments are public
            page = launch.write_signin_file(guard, remem_home() / "ui", where[0], **where[1])
            # a daemon: a browser command that stays in the foreground must not keep `remem ui` from exiting
            threading.Thread(target=_open_soon, args=(page,), name="remem-ui-browser", daemon=True).start()
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        try:
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down on: here it is the normal stop
            pass
        finally:
            sock.close()
            launch.remove(page)
    print("remem inspector stopped", flush=True)
    return 0


__all__ = ["DEFAULT_PORT", "Inspector", "bind", "ui_main"]
