"""Who may talk to the inspector: the person who ran ``remem ui``, from this machine, through their browser.

The page can read and change every memory, so it is guarded like a Jupyter server, only stricter:
- a random token in the URL ``remem ui`` prints; the first load swaps it for an HttpOnly, SameSite=Strict
  session cookie and redirects to a URL without it (so it is not left in history or a Referer);
- the browser ``remem ui`` opens never sees that token on its command line (any local account can read
  ``/proc/*/cmdline``): it is given a 0600 file (:mod:`.launch`) whose link carries a one-time code, dead once
  used and after :data:`CODE_TTL` seconds;
- the Host header must name the loopback address we bound (a DNS-rebinding page reaches us with its own host);
- a request that says it comes from another origin (Origin, or Sec-Fetch-Site: cross-site) is refused;
- every change is a POST carrying a CSRF token bound to the session.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

COOKIE_PREFIX = "remem_ui_"
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make browsers send "Origin: null" on our own forms
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
SAFE_METHODS = ("GET", "HEAD")
CODE_TTL = 120.0  # seconds a one-time sign-in code lives: long enough for a cold browser start
SIGNIN_PATH = "/signin"


@dataclass
class Guard:
    """The secrets of one ``remem ui`` run: the URL token, live sessions, and the key CSRF tokens derive from."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _sessions: set[str] = field(default_factory=set)
    # one-time sign-in code -> when it dies (monotonic), and what to clean up once it is used or dead
    _codes: dict[str, tuple[float, Callable[[], None] | None]] = field(default_factory=dict)
    _codes_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def cookie_name(self) -> str:
        return f"{COOKIE_PREFIX}{self.port}"  # one per port: two inspectors on one host keep their own sessions

    @property
    def allowed_hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def allowed_origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.allowed_hosts)

    def url(self, path: str = "/", **params: str) -> str:
        """The sign-in link: ``path`` with the token (and ``params``) in its query."""
        return f"http://127.0.0.1:{self.port}{path}?{urlencode({**params, 'token': self.token})}"

    def one_time_code(self, ttl: float = CODE_TTL, on_spent: Callable[[], None] | None = None) -> str:
        """A sign-in code good for one use within ``ttl`` seconds (for a link that may leave this process);
        ``on_spent`` runs once it is used (or found expired), e.g. to delete the file that held it."""
        code = secrets.token_urlsafe(32)
        with self._codes_lock:
            self._codes[code] = (time.monotonic() + ttl, on_spent)
        return code

    def signin_url(self, code: str, path: str = "/", **params: str) -> str:
        """The link a one-time ``code`` signs in through, landing on ``path`` (with ``params``)."""
        target = f"{path}?{urlencode(params)}" if params else path
        return f"http://127.0.0.1:{self.port}{SIGNIN_PATH}?{urlencode({'code': code, 'next': target})}"

    def redeem(self, code: str | None) -> bool:
        """Use up ``code``: True once, if it was issued and has not expired; never again after."""
        if not code:
            return False
        now = time.monotonic()
        with self._codes_lock:
            match = next((c for c in self._codes if hmac.compare_digest(c.encode(), code.encode())), None)
            valid = match is not None and self._codes[match][0] > now
            spent = [c for c in self._codes if c == match or self._codes[c][0] <= now]
            cleanups = [self._codes.pop(c)[1] for c in spent]
        for cleanup in cleanups:
            if cleanup is not None:
                cleanup()
        return valid

    def new_session(self) -> str:
        sid = secrets.token_urlsafe(32)
        self._sessions.add(sid)
        return sid

    def session_of(self, request: Request) -> str | None:
        sid = request.cookies.get(self.cookie_name)
        if sid and any(hmac.compare_digest(sid, known) for known in self._sessions):
            return sid
        return None

    def csrf_for(self, sid: str) -> str:
        return hmac.new(self._key, sid.encode(), hashlib.sha256).hexdigest()[:40]

    def csrf_ok(self, sid: str, value: Any) -> bool:
        return isinstance(value, str) and hmac.compare_digest(self.csrf_for(sid), value)

    def token_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value.encode(), self.token.encode())  # type: ignore[union-attr]

    # -- checks every request passes before any handler runs -------------------------------------------
    def refusal(self, request: Request) -> Response | None:
        """Why this request may not be served, or None."""
        host = (request.headers.get("host") or "").lower()
        if host not in self.allowed_hosts:
            return _refuse(400, "unexpected Host header: this inspector only answers on 127.0.0.1 (DNS rebinding?)")
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.allowed_origins:
            return _refuse(403, "cross-origin request refused")
        if request.headers.get("sec-fetch-site") == "cross-site":
            return _refuse(403, "cross-site request refused")
        if request.method not in SAFE_METHODS:
            referer = request.headers.get("referer")
            if origin is None and referer and _origin_of(referer) not in self.allowed_origins:
                return _refuse(403, "cross-origin request refused")
        return None


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _refuse(status: int, message: str) -> Response:
    return PlainTextResponse(message + "\n", status_code=status, headers=SECURITY_HEADERS)


Handler = Callable[[Request], Awaitable[Response]]


def local_path(target: str | None) -> str:
    """``target`` if it is a path on this inspector (``/...``, not ``//host`` or a scheme), else ``/``."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or any(ord(ch) < 0x20 for ch in target):
        return "/"
    return target


def signin(guard: Guard) -> Handler:
    """``GET /signin?code=...&next=/path``: a one-time code becomes a session cookie, then the page moves on.

    The link comes from a file the browser opened (``file://``), so the request is a cross-site navigation:
    Sec-Fetch-Site is not checked here (the code is the proof, and it dies on first use), the Host still is.
    A 303 would carry the navigation's cross-site origin on to the next page, where a browser does not send a
    SameSite=Strict cookie; a page of ours that refreshes to the target starts a same-site navigation."""

    async def run(request: Request) -> Response:
        host = (request.headers.get("host") or "").lower()
        if host not in guard.allowed_hosts:
            return _refuse(400, "unexpected Host header: this inspector only answers on 127.0.0.1 (DNS rebinding?)")
        if request.method not in SAFE_METHODS:
            return _refuse(405, "sign in with GET")
        if not guard.redeem(request.query_params.get("code")):
            return _refuse(403, "this sign-in link was used already or has expired: open the link `remem ui` "
                                "printed")
        target = html.escape(local_path(request.query_params.get("next")), quote=True)
        body = (f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={target}">'
                f'<title>remem: signed in</title><p>Signed in. <a href="{target}">Open the inspector</a></p>\n')
        resp = HTMLResponse(body, headers=SECURITY_HEADERS)
        resp.set_cookie(guard.cookie_name, guard.new_session(), httponly=True, samesite="strict", path="/")
        return resp

    return run


def guarded(guard: Guard, handler: Handler) -> Handler:
    """Wrap a route: host/origin checks, token-to-cookie login, session required, CSRF on every change."""

    async def run(request: Request) -> Response:
        refused = guard.refusal(request)
        if refused is not None:
            return refused
        token = request.query_params.get("token")
        if token is not None and request.method in SAFE_METHODS:
            if not guard.token_ok(token):
                return _refuse(403, "wrong token: open the link `remem ui` printed")
            sid = guard.new_session()
            query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            resp = RedirectResponse(request.url.path + (f"?{query}" if query else ""), status_code=303)
            resp.set_cookie(guard.cookie_name, sid, httponly=True, samesite="strict", path="/")
            return resp
        sid = guard.session_of(request)
        if sid is None:
            return _refuse(403, "not signed in: open the link (with its token) that `remem ui` printed")
        request.state.sid = sid
        request.state.csrf = guard.csrf_for(sid)
        if request.method not in SAFE_METHODS:
            form = await request.form()
            if not guard.csrf_ok(sid, form.get("csrf")):
                return _refuse(403, "missing or wrong CSRF token: reload the page and try again")
            request.state.form = form
        response = await handler(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    return run


__all__ = ["CODE_TTL", "Guard", "SECURITY_HEADERS", "SIGNIN_PATH", "guarded", "local_path", "signin"]
