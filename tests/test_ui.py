"""The memory inspector (`remem ui`): its guard over HTTP, its pages on a real store, and the page itself in
the system's headless Chromium (search, edit, forget, and an attack page from another origin)."""

from __future__ import annotations

import datetime as _dt
import gzip
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from html import unescape
from pathlib import Path
from typing import Any, Iterator

import pytest
from starlette.testclient import TestClient

from remem import Memory, NotFoundError, Scope
from remem.hooks.recall import RECALL_PREAMBLE
from remem.ui.app import create_app
from remem.ui.headless import missing_reason

PORT = 8767
BASE = f"http://127.0.0.1:{PORT}"
ACME = Scope(tenant="acme")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def app(mem: Memory, home: Path) -> Iterator[Any]:
    app = create_app(mem, port=PORT, export_dir=home / "exports")
    yield app
    app.state.inspector.jobs.join()


def signed_in(app: Any) -> TestClient:
    client = TestClient(app, base_url=BASE, follow_redirects=False)
    resp = client.get(f"/?token={app.state.inspector.guard.token}")
    assert resp.status_code == 303
    return client


def csrf_of(client: TestClient, path: str = "/export") -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert match, "the page has no CSRF field"
    return match.group(1)


def text_of(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


# ---------------------------------------------------------------------------------------------- the guard
def test_without_the_token_nothing_is_served(app: Any, mem: Memory) -> None:
    mem.add("the launch code is in the blue binder", scope=ACME)
    client = TestClient(app, base_url=BASE, follow_redirects=False)
    for path in ("/", "/memories?t=acme", "/search?t=acme&q=launch+code", "/static/style.css"):
        resp = client.get(path)
        assert resp.status_code == 403 and "blue binder" not in resp.text
    assert client.get("/?token=wrong-token").status_code == 403
    assert "remem_ui" not in client.cookies.keys().__repr__()


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_url(app: Any) -> None:
    client = TestClient(app, base_url=BASE, follow_redirects=False)
    token = app.state.inspector.guard.token
    resp = client.get(f"/memories?t=acme&token={token}")
    assert resp.status_code == 303 and resp.headers["location"] == "/memories?t=acme"
    cookie = resp.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and token.lower() not in cookie
    page = client.get("/memories?t=acme")
    assert page.status_code == 200
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store"


def test_other_hosts_are_refused_even_with_a_valid_session(app: Any) -> None:
    client = signed_in(app)
    for host in ("evil.example", f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", "0.0.0.0"):
        assert client.get("/", headers={"Host": host}).status_code == 400
    assert client.get("/", headers={"Host": f"localhost:{PORT}"}).status_code == 200


def test_cross_origin_requests_change_nothing(app: Any, mem: Memory) -> None:
    rec = mem.add("keep me: cross origin test", scope=ACME)
    client = signed_in(app)
    csrf = csrf_of(client)
    form = {"csrf": csrf, "id": rec.id, "t": "acme", "confirm": "yes"}
    assert client.post("/do/forget", data=form, headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.post("/do/forget", data=form, headers={"Origin": "null"}).status_code == 403
    assert client.post("/do/forget", data=form, headers={"Referer": "http://evil.example/x"}).status_code == 403
    assert client.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert mem.get(rec.id, scope=ACME).text == "keep me: cross origin test"


def test_a_change_without_the_right_csrf_token_is_refused(app: Any, mem: Memory) -> None:
    rec = mem.add("keep me: csrf test", scope=ACME)
    client = signed_in(app)
    other = signed_in(app)
    for data in ({}, {"csrf": ""}, {"csrf": "0" * 40}, {"csrf": csrf_of(other)}):
        resp = client.post("/do/forget", data={**data, "id": rec.id, "confirm": "yes"}, headers={"Origin": BASE})
        assert resp.status_code == 403
    assert client.get(f"/do/forget?id={rec.id}&confirm=yes").status_code == 405  # GET never changes anything
    assert mem.get(rec.id, scope=ACME).text == "keep me: csrf test"


# ---------------------------------------------------------------------------------------------- changes
def test_forget_asks_first_then_deletes(app: Any, mem: Memory) -> None:
    rec = mem.add("an obsolete memory about the old CI", scope=ACME)
    client = signed_in(app)
    form = {"csrf": csrf_of(client), "id": rec.id, "t": "acme"}
    ask = client.post("/do/forget", data=form)
    assert ask.status_code == 200 and "Forget this memory?" in ask.text and "old CI" in ask.text
    assert mem.get(rec.id, scope=ACME)  # asking changed nothing
    done = client.post("/do/forget", data={**form, "confirm": "yes"})
    assert done.status_code == 303
    with pytest.raises(NotFoundError):
        mem.get(rec.id, scope=ACME)


def test_edit_and_supersede_change_the_store_and_show_the_history(app: Any, mem: Memory) -> None:
    rec = mem.add("The API limit is 100 requests per minute", scope=ACME, kind="fact", tags=["api"],
                  created_at=_dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(days=3))
    client = signed_in(app)
    csrf = csrf_of(client, f"/memory/{rec.id}")
    edit = {"csrf": csrf, "id": rec.id, "text": rec.text, "kind": "fact", "tags": "api, limits", "importance": "8"}
    ask = client.post("/do/edit", data=edit)
    assert "Save these changes?" in ask.text and mem.get(rec.id, scope=ACME).importance == 5
    client.post("/do/edit", data={**edit, "confirm": "yes"})
    got = mem.get(rec.id, scope=ACME)
    assert got.tags == ("api", "limits") and got.importance == 8
    sup = {"csrf": csrf, "id": rec.id, "text": "The API limit is 300 requests per minute", "confirm": "yes"}
    resp = client.post("/do/supersede", data=sup)
    new_id = resp.headers["location"].split("/memory/")[1].split("?")[0]
    assert mem.get(new_id, scope=ACME).supersedes == rec.id and mem.get(rec.id, scope=ACME).superseded_by == new_id
    page = text_of(client.get(f"/memory/{new_id}").text)
    assert "Supersede history" in page and "100 requests" in page and "300 requests" in page


def test_audit_merges_duplicates_and_forgets_junk(app: Any, mem: Memory) -> None:
    dup = [mem.add("Use ruff for linting in this repository", scope=ACME, kind="preference", tags=[t], dedupe=False)
           for t in ("lint", "style")]
    junk = mem.add("ok", scope=ACME)
    client = signed_in(app)
    csrf = csrf_of(client, "/audit?t=acme")
    client.post("/audit/run", data={"csrf": csrf, "t": "acme"})
    app.state.inspector.jobs.join()
    page = client.get("/audit?t=acme").text
    assert "Merge these 2" in page and "pleasantry" in page
    client.post("/do/merge", data={"csrf": csrf, "t": "acme", "id": [d.id for d in dup], "confirm": "yes"})
    left = [r for r in mem.list(scope=ACME) if "ruff" in r.text]
    assert len(left) == 1 and set(left[0].tags) == {"lint", "style"}
    client.post("/do/forget", data={"csrf": csrf, "t": "acme", "id": junk.id, "confirm": "yes"})
    assert "pleasantry" not in client.get("/audit?t=acme").text


def test_export_writes_an_owner_only_file_that_imports(app: Any, mem: Memory, home: Path,
                                                      memory_factory: Any) -> None:
    mem.add("exported memory one", scope=ACME)
    mem.add("not in this tenant", scope=Scope(tenant="other"))
    client = signed_in(app)
    resp = client.post("/do/export", data={"csrf": csrf_of(client), "t": "acme", "what": "tenant"})
    path = Path(re.search(r"memories to <code>([^<]+)</code>", resp.text).group(1))
    assert path.parent == home / "exports"
    assert (path.stat().st_mode & 0o777) == 0o600 and (path.parent.stat().st_mode & 0o777) == 0o700
    lines = [json.loads(line) for line in gzip.open(path, "rt")]
    assert [r["text"] for r in lines[1:]] == ["exported memory one"]
    assert client.get(f"/exports/{path.name}").content == path.read_bytes()
    every = client.post("/do/export", data={"csrf": csrf_of(client), "t": "acme", "what": "all"})
    assert "Exported 2 memories" in every.text  # the whole store, through the admin switch
    assert client.get("/exports/..%2Fstore").status_code == 404
    assert memory_factory("none").import_(path, scope=ACME) == 1


# ---------------------------------------------------------------------------------------------- read pages
def test_the_list_pages_through_every_memory_newest_first(app: Any, mem: Memory) -> None:
    now = _dt.datetime.now(_dt.timezone.utc)
    times = [now - _dt.timedelta(minutes=i) for i in range(120)]
    times[48:53] = [times[48]] * 5  # ties across the page boundary
    mem.add_many([{"text": f"memory number {i}", "created_at": t} for i, t in enumerate(times)], scope=ACME,
                 dedupe=False)
    client = signed_in(app)
    seen: list[str] = []
    url = "/memories?t=acme"
    while url:
        html = client.get(url).text
        seen += re.findall(r'href="/memory/[^"]+">memory number (\d+)<', html)
        nxt = re.search(r'href="(/memories\?[^"]+)" rel="next"', html)
        url = unescape(nxt.group(1)) if nxt else ""
    assert sorted(map(int, seen)) == list(range(120))  # each exactly once
    assert seen[:3] == ["0", "1", "2"] and seen[-1] == "119"
    assert "120 memories match" in text_of(client.get("/memories?t=acme").text)


def test_the_list_filters_by_kind_tag_session_time_and_text(app: Any, mem: Memory) -> None:
    now = _dt.datetime.now(_dt.timezone.utc)
    mem.add("Postgres is the database", scope=Scope(tenant="acme", session="s1"), kind="decision", tags=["db"])
    mem.add("Redis caches sessions", scope=Scope(tenant="acme", session="s2"), kind="fact", tags=["cache"])
    mem.add("An old note from last year", scope=ACME, created_at=now - _dt.timedelta(days=400))
    client = signed_in(app)

    def texts(query: str) -> set[str]:
        return set(re.findall(r'href="/memory/[^"]+">([^<]+)<', client.get(f"/memories?t=acme&{query}").text))

    assert texts("kind=decision") == {"Postgres is the database"}
    assert texts("tag=cache") == {"Redis caches sessions"}
    assert texts("session=s1") == {"Postgres is the database"}
    assert texts(f"until={(now - _dt.timedelta(days=300)).date()}") == {"An old note from last year"}
    assert texts(f"since={now.date()}") == {"Postgres is the database", "Redis caches sessions"}
    assert texts("q=which+database") == {"Postgres is the database"}
    assert client.get("/memories?t=acme&since=not-a-date").status_code == 400


def test_recall_page_shows_what_the_hook_injects(mem: Memory, home: Path, store_factory: Any) -> None:
    """The real UserPromptSubmit hook runs first (in its own process); the page must show its very text."""
    path = store_factory("none")
    with Memory(path=path, embedder="none") as seeded:
        seeded.add("Checkout uses Stripe payment intents", scope=ACME, kind="decision")
        seeded.add("Prices are integer cents, never floats", scope=ACME, kind="fact")
        seeded.add("The office plant needs water on Mondays", scope=ACME)
        talk = ["Let's rename the nightly export job to export-nightly.", "Renamed it in the cron file.",
                "Refunds at checkout: do we refund payments in full or in part?",
                "Checkout refunds payments in part, down to the cent, through the Stripe refunds API.",
                "Good. Then partial refunds of payments need an audit row.",
                "The linter now runs ruff with the default rules.", "Bump the docs theme to version 3, please.",
                "Done: the docs theme is on version 3."]
        seeded.remember([{"role": "user" if i % 2 == 0 else "assistant", "content": text, "id": f"m{i}"}
                         for i, text in enumerate(talk)], scope=ACME, session="s0")
    prompt = "how does checkout take payments and store prices?"
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_PATH": str(path), "REMEM_SERVICE": "off",
           "REMEM_EMBEDDER": "none", "REMEM_HOOK_TENANT": "acme", "REMEM_HOOK_RECALL_DEADLINE": "60"}
    proc = subprocess.run([sys.executable, "-m", "remem.hooks.main", "UserPromptSubmit"], env=env,
                          input=json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1",
                                            "prompt": prompt, "cwd": str(home)}),
                          capture_output=True, text=True, timeout=120)
    injected = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    with Memory(path=path, embedder="none") as store:
        app = create_app(store, port=PORT, export_dir=home / "exports")
        client = signed_in(app)
        html = client.get("/search", params={"t": "acme", "q": prompt}).text
        shown = unescape(re.search(r'<pre class="injected" id="injected"[^>]*>(.*?)</pre>', html, re.S).group(1))
        recorded = json.loads(next((home / "hooks" / "last_recall").glob("*.json")).read_text())["context"]
        assert shown == recorded and shown in injected and "Stripe" in shown
        assert shown.startswith("<remem-memories>\n" + RECALL_PREAMBLE) and shown.count(RECALL_PREAMBLE) == 1
        assert "\n  [" in shown  # a passage: its later messages indented under the first, in the hook and here
        digest = re.search(r'<pre class="injected" id="digest"[^>]*>(.*?)</pre>', html, re.S)
        if digest:  # this was the session's first prompt: the hook injected the digest first
            assert injected.startswith(unescape(digest.group(1)) + "\n\n" + shown)
        assert re.search(r"<td class=\"c-num\">\d+\.\d{4}</td>", html)  # scores are shown
        recalls = text_of(client.get("/recalls").text)
        assert "acme" in recalls and "Stripe payment intents" in recalls and "1 hook runs" in recalls
        app.state.inspector.jobs.join()


def test_tenants_page_counts_each_tenant_and_charts_kinds(app: Any, mem: Memory) -> None:
    mem.add_many([{"text": f"acme fact {i}", "kind": "fact"} for i in range(3)], scope=ACME)
    mem.add("beta decision", scope=Scope(tenant="beta"), kind="decision")
    mem.add("global note")
    client = signed_in(app)
    app.state.inspector.jobs.join()
    page = client.get("/").text
    rows = {m[0]: int(m[1]) for m in re.findall(r'<th scope="row" class="wrap">([^<]+)</th>\s*<td class="num">(\d+)',
                                                 page)}
    assert rows == {"acme": 3, "beta": 1, "(global space)": 1}
    assert "<svg" in page and "5 memories stored per day" in page


def test_detail_shows_event_time_and_provenance(app: Any, mem: Memory) -> None:
    happened = _dt.datetime(2025, 3, 2, 14, 30, tzinfo=_dt.timezone.utc)
    rec = mem.add("Checkout was down for 40 minutes", scope=ACME, kind="event", occurred_at=happened,
                  sources=["msg-001", "msg-002"], source="claude-code:stop")
    client = signed_in(app)
    page = text_of(client.get(f"/memory/{rec.id}").text)
    assert "2025-03-02 14:30 UTC (when it happened)" in page
    assert "2 source messages: msg-001, msg-002" in page and "claude-code:stop" in page
    listing = text_of(client.get("/memories?t=acme").text)
    assert "event 2025-03-02" in listing


def test_unknown_memory_is_a_404_page(app: Any) -> None:
    client = signed_in(app)
    assert client.get("/memory/00000000-0000-0000-0000-000000000000").status_code == 404
    assert client.get("/memory/not-an-id").status_code == 404


# ---------------------------------------------------------------------------------------------- the browser
browser_missing = missing_reason()
needs_browser = pytest.mark.skipif(browser_missing is not None, reason=f"no headless browser: {browser_missing}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from remem.ui.headless import Browser

    with Browser() as b:
        yield b.driver


@pytest.fixture
def served(mem: Memory, home: Path) -> Iterator[Any]:
    from remem.ui import Inspector

    with Inspector(mem, export_dir=home / "exports") as ins:
        yield ins


def click_and_wait(d: Any, css: str, expect: str) -> None:
    """Click, then wait for the next page to show ``expect`` (a click does not wait for the navigation)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d.find_element(By.CSS_SELECTOR, css).click()
    # while the next page replaces the old one, Chromium may answer with a stale node (either exception)
    WebDriverWait(d, 10, ignored_exceptions=(StaleElementReferenceException, WebDriverException)).until(
        lambda drv: expect in drv.find_element(By.TAG_NAME, "body").text)


@needs_browser
def test_in_the_browser_search_edit_and_forget_change_the_store(browser: Any, served: Any, mem: Memory) -> None:
    from selenium.webdriver.common.by import By

    rec = mem.add("The staging database is refreshed every night", scope=ACME, kind="fact", tags=["staging"])
    other = mem.add("Deploys happen on Tuesdays", scope=ACME, kind="decision")
    d = browser
    d.get(served.url)
    assert "token=" not in d.current_url and d.find_element(By.TAG_NAME, "h1").text == "Tenants"
    d.get(f"{served.base}/search?t=acme")
    box = d.find_element(By.ID, "q")
    box.send_keys("when is the staging database refreshed?")
    click_and_wait(d, "form.searchbox button", "Injected text")
    assert "staging database is refreshed every night" in d.find_element(By.CSS_SELECTOR, "pre.injected").text
    click_and_wait(d, f"a[href='/memory/{rec.id}']", "Correct it")
    text = d.find_element(By.ID, "e-text")
    text.clear()
    text.send_keys("The staging database is refreshed every night at 02:00 UTC")
    click_and_wait(d, "form[action='/do/edit'] button", "Save these changes?")
    click_and_wait(d, ".confirm-form button", "Done: saved")
    assert mem.get(rec.id, scope=ACME).text == "The staging database is refreshed every night at 02:00 UTC"
    d.get(f"{served.base}/memory/{other.id}")
    click_and_wait(d, "form[action='/do/forget'] button", "This deletes it for good")
    click_and_wait(d, ".confirm-form button.danger", "Done: forgot 1")
    with pytest.raises(NotFoundError):
        mem.get(other.id, scope=ACME)


@needs_browser
def test_a_page_from_another_origin_cannot_change_the_store(browser: Any, served: Any, mem: Memory) -> None:
    """A signed-in user visits an attacker's page that auto-submits a forget form to the inspector."""
    rec = mem.add("the attacker wants this gone", scope=ACME)
    browser.get(served.url)  # signed in
    attack = (f'<form id="f" method="post" action="{served.base}/do/forget"><input name="id" value="{rec.id}">'
              f'<input name="confirm" value="yes"></form><script>document.getElementById("f").submit()</script>')

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = attack.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Evil)  # Chromium opens a spare connection
    evil.daemon_threads = True
    thread = threading.Thread(target=evil.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(f"http://localhost:{evil.server_address[1]}/")
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(browser, 10).until(lambda d: d.current_url.startswith(served.base))
        assert "refused" in browser.find_element("tag name", "body").text
    finally:
        evil.shutdown()
        evil.server_close()
    assert mem.get(rec.id, scope=ACME).text == "the attacker wants this gone"


@needs_browser
def test_every_page_is_labelled_keyboard_reachable_and_never_wider_than_the_screen(
        browser: Any, served: Any, mem: Memory) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    long_word = "x" * 3000
    rec = mem.add(f"A memory with a very long unbroken token {long_word} and more", scope=ACME,
                  tags=["t" * 200], kind="note")
    mem.add("ok", scope=ACME)
    browser.get(served.url)
    pages = ["/", "/memories?t=acme", f"/memory/{rec.id}", "/search?t=acme&q=very+long+unbroken+token", "/recalls",
             "/audit?t=acme", "/export?t=acme"]
    for path in pages:
        browser.get(served.base + path)
        unlabelled = browser.execute_script(
            "return [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]"
            ".filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).map(e => e.name)")
        assert unlabelled == [], f"{path}: inputs without a label: {unlabelled}"
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than a 1280px screen"
    browser.get(served.base + "/memories?t=acme")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.text == "Skip to content" and focused.is_displayed()


def test_remem_ui_prints_a_loopback_link_that_signs_in_and_stops_on_ctrl_c(store_factory: Any, home: Path) -> None:
    import signal

    import httpx

    path = store_factory("none")
    with Memory(path=path, embedder="none") as seeded:
        seeded.add("served by the CLI", scope=ACME)
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_SERVICE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "remem.cli", "ui", "--no-browser", "--port", "0", "--path",
                             str(path), "--embedder", "none", "--tenant", "acme"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = ""
        for line in proc.stdout:  # type: ignore[union-attr]
            if "token=" in line:
                url = line.strip()
                break
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/memories\?t=acme&token=[\w-]{40,}", url), url
        base = url.split("/memories")[0]
        assert httpx.get(base + "/memories?t=acme").status_code == 403
        with httpx.Client(base_url=base, follow_redirects=True) as client:
            assert "served by the CLI" in client.get(url).text
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0


# ---------------------------------------------------------------------------------------------- no token in argv
def test_a_one_time_code_signs_in_once_and_expires(app: Any) -> None:
    guard = app.state.inspector.guard
    client = TestClient(app, base_url=BASE, follow_redirects=False)
    code = guard.one_time_code()
    # the request comes from a file:// page: a cross-site navigation, which the code alone must be enough for
    resp = client.get(f"/signin?code={code}&next=/memories%3Ft%3Dacme", headers={"Sec-Fetch-Site": "cross-site"})
    assert resp.status_code == 200 and 'content="0;url=/memories?t=acme"' in resp.text
    assert "samesite=strict" in resp.headers["set-cookie"].lower() and code not in resp.headers["set-cookie"]
    assert client.get("/memories?t=acme").status_code == 200
    fresh = TestClient(app, base_url=BASE, follow_redirects=False)
    assert fresh.get(f"/signin?code={code}").status_code == 403, "a used code is dead"
    assert fresh.get(f"/signin?code={guard.one_time_code(ttl=0)}").status_code == 403, "an expired code is dead"
    assert fresh.get(f"/signin?code={guard.token}").status_code == 403, "the token is not a code"
    assert fresh.get("/").status_code == 403
    other = guard.one_time_code()
    assert fresh.get(f"/signin?code={other}", headers={"Host": "evil.example"}).status_code == 400
    for target in ("//evil.example/x", "http://evil.example/", "/\\evil.example", "javascript:alert(1)"):
        resp = fresh.get("/signin", params={"code": guard.one_time_code(), "next": target})
        assert resp.status_code == 200 and 'content="0;url=/"' in resp.text, target


def test_the_signin_file_is_owner_only_holds_no_token_and_goes_once_used(app: Any, tmp_path: Path) -> None:
    from remem.ui.launch import write_signin_file

    guard = app.state.inspector.guard
    page = write_signin_file(guard, tmp_path / "ui", "/memories", t="acme")
    assert (page.stat().st_mode & 0o777, page.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    body = page.read_text()
    assert guard.token not in body
    link = unescape(re.search(r'url=([^"]+)"', body).group(1))  # type: ignore[union-attr]
    client = TestClient(app, base_url=BASE, follow_redirects=False)
    assert client.get(link.replace(BASE, "")).status_code == 200
    assert not page.exists(), "the file goes once its code is used"


BROWSER_WRAPPER = '''
import json, os, sys, time
from pathlib import Path
from remem.ui.headless import Browser

url, out = sys.argv[1], Path(sys.argv[2])
report = {"argv": sys.argv[1:]}
page = Path(url[len("file://"):]) if url.startswith("file://") else None
if page is not None and page.exists():
    report["mode"] = oct(page.stat().st_mode & 0o777)
    report["file"] = page.read_text()
with Browser() as b:
    b.driver.get(url)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "served by the CLI" not in b.driver.page_source:
        time.sleep(0.1)
    report["url"], report["text"] = b.driver.current_url, b.driver.find_element("tag name", "body").text
    report["cmdlines"] = []  # every process's arguments, as any local account can read them, the browser's too
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            report["cmdlines"].append(Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace"))
        except OSError:
            pass
    report["file_after"] = page.exists() if page is not None else None
    b.driver.get(url)  # the same file (or its link) a second time: the code is spent
    time.sleep(1)
    report["again"] = b.driver.find_element("tag name", "body").text
out.write_text(json.dumps(report))
'''


@needs_browser
def test_remem_ui_opens_a_real_browser_without_its_token_on_any_command_line(store_factory: Any, home: Path,
                                                                             tmp_path: Path) -> None:
    """`remem ui` starts the browser $BROWSER names (as webbrowser does for every browser): a script that records
    its arguments, then opens them in headless Chromium and lists every process's command line meanwhile."""
    import signal
    import time

    path = store_factory("none")
    with Memory(path=path, embedder="none") as seeded:
        seeded.add("served by the CLI", scope=ACME)
    wrapper, report_file = tmp_path / "browser.py", tmp_path / "report.json"
    wrapper.write_text(BROWSER_WRAPPER)
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_SERVICE": "off",
           "BROWSER": f"{sys.executable} {wrapper} %s {report_file}"}
    proc = subprocess.Popen([sys.executable, "-m", "remem.cli", "ui", "--port", "0", "--path", str(path),
                             "--embedder", "none", "--tenant", "acme"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        token = ""
        for line in proc.stdout:  # type: ignore[union-attr]
            if "token=" in line:
                token = line.strip().split("token=", 1)[1]
                break
        deadline = time.monotonic() + 90
        while not report_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        report = json.loads(report_file.read_text())
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    assert len(token) >= 40
    assert report["argv"][0].startswith("file://") and report["mode"] == "0o600"
    code = re.search(r"code=([\w-]+)", report["file"]).group(1)  # type: ignore[union-attr]
    assert token not in report["file"]
    assert not [c for c in report["cmdlines"] if token in c or code in c], "a secret is on a command line"
    assert "served by the CLI" in report["text"] and "code=" not in report["url"] and "token=" not in report["url"]
    assert report["file_after"] is False, "the sign-in file is removed once used"
    assert "served by the CLI" not in report["again"]
    assert not list((home / "ui").glob("*.html"))


def test_the_signin_file_never_lands_in_a_folder_others_may_write(app: Any, tmp_path: Path) -> None:
    from remem.ui.launch import write_signin_file

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # e.g. a REMEM_HOME under a world-writable folder: another account could swap the page
    page = write_signin_file(app.state.inspector.guard, shared)
    try:
        assert page.parent != shared and page.parent.stat().st_mode & 0o777 == 0o700
        assert page.stat().st_mode & 0o777 == 0o600
    finally:
        from remem.ui.launch import remove

        remove(page)
    assert not page.parent.exists()
