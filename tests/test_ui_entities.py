"""The inspector's entity pages in the system's headless Chromium, over the real core on the embedded store: the
entities page (find by alias, kind, pages), an entity page (profile, timeline, neighbour graph), merge and split
with their confirmation, CSRF refusals, scope isolation, and hostile names rendered as text.

One store, one inspector and one browser serve the whole file; each test writes into a tenant of its own."""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import pytest

from remem import Memory, Scope
from remem.ui.headless import missing_reason

browser_missing = missing_reason()
pytestmark = pytest.mark.skipif(browser_missing is not None, reason=f"no headless browser: {browser_missing}")

NOW = _dt.datetime.now(_dt.timezone.utc)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("ui-entities") / "home"
        mp.setenv("REMEM_HOME", str(path))
        mp.setenv("REMEM_SERVICE", "off")
        yield path


@pytest.fixture(scope="module")
def mem(home: Path) -> Iterator[Memory]:
    with Memory(path=home.parent / "store", embedder="none") as m:
        yield m


@pytest.fixture(scope="module")
def served(mem: Memory, home: Path) -> Iterator[Any]:
    from remem.ui import Inspector

    with Inspector(mem, export_dir=home / "exports") as ins:
        yield ins


@pytest.fixture(scope="module")
def d(served: Any) -> Iterator[Any]:
    """The browser, signed in to the inspector."""
    from remem.ui.headless import Browser

    with Browser() as b:
        b.driver.get(served.url)
        yield b.driver


def body(drv: Any) -> str:
    return drv.find_element("tag name", "body").text


def click_and_wait(drv: Any, css: str, expect: str) -> None:
    """Click, then wait for the next page to show ``expect`` (a click does not wait for the navigation)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    drv.find_element(By.CSS_SELECTOR, css).click()
    WebDriverWait(drv, 10, ignored_exceptions=(StaleElementReferenceException, WebDriverException)).until(
        lambda x: expect in body(x))


def rows(drv: Any) -> list[str]:
    return [a.text for a in drv.find_elements("css selector", "table.entities tbody td:first-child a")]


def names_in(mem: Memory, tenant: str, **kw: Any) -> set[str]:
    return {e.name for e in mem.entities(scope=Scope(tenant=tenant), limit=1000, **kw)}


# ---------------------------------------------------------------------------------------------- the entities page
def test_the_entities_page_lists_finds_by_alias_filters_by_kind_and_pages(d: Any, served: Any, mem: Memory) -> None:
    t = Scope(tenant="list")
    mem.add("ClickHouse (aka CHouse) stores the click events", scope=t, created_at=NOW - _dt.timedelta(days=30))
    mem.add("Dana Whitfield maintains the ingest worker", scope=t)
    mem.add("Dana moved the ingest worker onto ClickHouse", scope=t)
    mem.add_many([{"text": f"host web{i:02d}.internal was rebooted"} for i in range(55)], scope=t)
    mem.add("Marta Lindqvist from the other tenant", scope=Scope(tenant="elsewhere"))
    d.get(f"{served.base}/memories?t=list")
    click_and_wait(d, "nav a[href^='/entities']", "Most mentioned first")
    assert d.find_element("css selector", "nav a[aria-current=page]").text == "Entities"
    first = rows(d)
    assert len(first) == 50 and set(first[:3]) == {"ClickHouse", "Dana Whitfield", "ingest worker"}
    table = body(d)
    assert "CHouse" in table and "Marta" not in table  # aliases shown; another tenant's entity is not
    click_and_wait(d, "a[rel=next]", "page 2")
    second = rows(d)
    assert len(second) == len(names_in(mem, "list")) - 50 and not set(first) & set(second)

    d.get(f"{served.base}/entities?t=list")
    box = d.find_element("id", "f-q")
    box.send_keys("chouse")  # an alias, in part, in another case
    click_and_wait(d, ".filters button", "matching")
    assert rows(d) == ["ClickHouse"]
    d.get(f"{served.base}/entities?t=list&kind=person")
    assert rows(d) == ["Dana Whitfield"]
    d.get(f"{served.base}/entities?t=list&q=nobody-by-that-name")
    assert "No entity in this tenant is called anything like" in body(d)
    d.get(f"{served.base}/entities?t=empty-tenant")
    assert "No entities in this tenant yet" in body(d) and "remem entities --link" in body(d)
    d.get(f"{served.base}/entities?t=list&kind=planet")
    assert "kind must be one of" in body(d)


# ---------------------------------------------------------------------------------------------- the entity page
def test_the_entity_page_shows_the_profile_its_timeline_and_its_neighbours(d: Any, served: Any, mem: Memory) -> None:
    from selenium.webdriver.common.by import By

    t = Scope(tenant="page")
    mem.add("Dana Whitfield maintains the ingest worker", scope=t, created_at=NOW - _dt.timedelta(days=90))
    old = mem.add("The ingest worker reads from RabbitMQ", scope=t, created_at=NOW - _dt.timedelta(days=60))
    new = mem.supersede(old.id, "The ingest worker moved to Redis Streams", scope=t)
    mem.add("ClickHouse stores what the ingest worker writes", scope=t)
    d.get(f"{served.base}/entities?t=page")
    click_and_wait(d, "table.entities a[href*='ingest']", "True now")
    assert d.find_element(By.TAG_NAME, "h1").text.startswith("ingest worker")
    text = body(d)
    assert "in 4 memories" in text
    now_part = d.find_element(By.CSS_SELECTOR, "section[aria-labelledby=now-h]").text
    changed = d.find_element(By.CSS_SELECTOR, "section[aria-labelledby=chg-h]").text
    assert "Redis Streams" in now_part and "RabbitMQ" not in now_part
    assert "RabbitMQ" in changed and re.search(r"\d{4}-\d\d-\d\d → \d{4}-\d\d-\d\d", changed)
    # the timeline: each line and relation counted when it became true, coloured by whether it still is
    bars = d.find_elements(By.CSS_SELECTOR, "#timeline svg.chart rect")
    titles = [b.find_element(By.TAG_NAME, "title").get_attribute("textContent") for b in bars]
    counts = [(x.split(" ", 1)[1].rsplit(":", 1)[0], int(x.rsplit(": ", 1)[1])) for x in titles]
    lines = [n for what, n in counts if what != "relation began"]
    assert sum(lines) == 4 and [n for what, n in counts if what == "changed since"] == [1]
    assert sum(n for what, n in counts if what == "relation began") == 2  # maintains, moved to
    # the neighbours: an SVG graph whose nodes are links to their pages
    nodes = d.find_elements(By.CSS_SELECTOR, "#neighbours svg a")
    labels = {n.find_element(By.TAG_NAME, "text").text: n.get_dom_attribute("href") for n in nodes}
    assert {"Dana Whitfield", "RabbitMQ", "Redis Streams", "ClickHouse"} <= set(labels)
    assert labels["Dana Whitfield"] == "/entity?t=page&name=Dana+Whitfield&kind=person"
    edge_labels = [x.text for x in d.find_elements(By.CSS_SELECTOR, "#neighbours svg text.via")]
    assert "maintains" in edge_labels and "moved to" in edge_labels  # relations, on the edges they label
    relations = d.find_element(By.CSS_SELECTOR, "section[aria-labelledby=rel-h]").text
    assert "Dana Whitfield maintains ingest worker" in relations
    assert "ingest worker moved to Redis Streams" in relations
    d.find_element(By.CSS_SELECTOR, "#neighbours svg a[href*='Dana'] circle").click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(d, 10).until(lambda x: x.find_element(By.TAG_NAME, "h1").text.startswith("Dana Whitfield"))
    # a line's source is its memory's page
    d.get(f"{served.base}/entity?t=page&name=ingest+worker&kind=service")
    click_and_wait(d, f"section[aria-labelledby=now-h] a[href='/memory/{new.id}']", "Correct it")
    assert "moved to Redis Streams" in d.find_element(By.CSS_SELECTOR, "blockquote.memtext").text
    # nothing on these pages comes from elsewhere or runs: no script, no inline handler, nothing off this host
    for path in ("/entities?t=page", "/entity?t=page&name=ingest+worker&kind=service"):
        d.get(served.base + path)
        html = d.page_source
        assert "<script" not in html and not re.search(r"\son[a-z]+=", html)
        assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)
        unlabelled = d.execute_script(
            "return [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]"
            ".filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).map(e => e.name)")
        assert unlabelled == [], f"{path}: inputs without a label: {unlabelled}"
        assert d.execute_script("return document.documentElement.scrollWidth - window.innerWidth") <= 0, path


def test_an_unknown_or_other_tenants_entity_is_not_found(d: Any, served: Any, mem: Memory) -> None:
    mem.add("Priya Raman runs the payroll service", scope=Scope(tenant="hr"))
    d.get(f"{served.base}/entity?t=hr&name=Priya+Raman&kind=person")
    assert d.find_element("tag name", "h1").text.startswith("Priya Raman")
    d.get(f"{served.base}/entity?t=sales&name=Priya+Raman&kind=person")
    assert "Not found" in d.title and "Priya" not in d.find_element("css selector", "main").text.replace(
        "no person named 'Priya Raman'", "")
    d.get(f"{served.base}/entity?t=hr&name=Nobody+Known")
    assert "Not found" in d.title


# ---------------------------------------------------------------------------------------------- merge and split
def test_merge_asks_first_then_merges_and_split_undoes_it(d: Any, served: Any, mem: Memory) -> None:
    t = Scope(tenant="merge")
    mem.add("Robert Paulson joined the soap team", scope=t)
    mem.add("Bob Paulson fixed the packaging line", scope=t)
    robert = mem.about("Robert Paulson", scope=t).entity
    assert {"Robert Paulson", "Bob Paulson"} <= names_in(mem, "merge")
    d.get(f"{served.base}/entity?t=merge&name=Robert+Paulson&kind=person")
    d.find_element("id", "m-other").send_keys("bob paulson")  # a name as typed
    click_and_wait(d, "form[action='/do/entity-merge'] button", "Merge Bob Paulson into Robert Paulson?")
    assert "Bob Paulson" in names_in(mem, "merge")  # asking changed nothing
    click_and_wait(d, ".confirm-form button.danger", "Done: merged Bob Paulson into Robert Paulson")
    assert "Bob Paulson" not in names_in(mem, "merge")
    assert mem.about("Bob Paulson", scope=t).entity.id == robert.id  # type: ignore[union-attr]
    text = body(d)
    assert "Merged in" in text and "in 2 memories" in text and "packaging line" in text
    click_and_wait(d, "button[aria-label='Split Bob Paulson off Robert Paulson']", "Split Bob Paulson off Robert")
    assert mem.about("Bob Paulson", scope=t).entity.id == robert.id  # type: ignore[union-attr]
    click_and_wait(d, ".confirm-form button.danger", "Done: split Bob Paulson off Robert Paulson")
    assert {"Robert Paulson", "Bob Paulson"} <= names_in(mem, "merge")
    assert mem.about("Bob Paulson", scope=t).entity.id != robert.id  # type: ignore[union-attr]
    assert "in 1 memory" in body(d) and "packaging line" not in body(d)


def test_a_change_without_the_right_csrf_token_or_from_another_tenant_changes_nothing(
        d: Any, served: Any, mem: Memory) -> None:
    t = Scope(tenant="csrf")
    mem.add("Robert Paulson joined the soap team", scope=t)
    mem.add("Bob Paulson fixed the packaging line", scope=t)
    mem.add("Bob Paulson is somebody else over here", scope=Scope(tenant="csrf-other"))
    mem.add("Marta Lindqvist only works over there", scope=Scope(tenant="csrf-other"))
    page = f"{served.base}/entity?t=csrf&name=Robert+Paulson&kind=person"

    def review(name: str, expect: str) -> None:
        d.get(page)
        d.find_element("id", "m-other").send_keys(name)
        click_and_wait(d, "form[action='/do/entity-merge'] button", expect)

    for token in (None, "", "0" * 40):
        review("Bob Paulson", "Merge Bob Paulson into Robert Paulson?")
        field = d.find_element("css selector", ".confirm-form input[name=csrf]")
        if token is None:
            d.execute_script("arguments[0].remove()", field)
        else:
            d.execute_script("arguments[0].value = arguments[1]", field, token)
        click_and_wait(d, ".confirm-form button.danger", "missing or wrong CSRF token")
        assert "Bob Paulson" in names_in(mem, "csrf")
    # the right token, but an entity of another tenant: by its name, or by its id slipped into the confirmation
    review("Marta Lindqvist", "no other person called anything like 'Marta Lindqvist'")
    other = mem.entities(scope=Scope(tenant="csrf-other"), query="Bob Paulson")[0]
    review("Bob Paulson", "Merge Bob Paulson into Robert Paulson?")
    field = d.find_element("css selector", ".confirm-form input[name=other]")
    d.execute_script("arguments[0].value = arguments[1]", field, other.id)
    click_and_wait(d, ".confirm-form button.danger", "names another entity than the one shown")
    assert "Bob Paulson" in names_in(mem, "csrf") and "Bob Paulson" in names_in(mem, "csrf-other")
    assert mem.about("Bob Paulson", scope=Scope(tenant="csrf-other")).entity.id == other.id  # type: ignore[union-attr]
    assert mem.about("Marta Lindqvist", scope=Scope(tenant="csrf")).entity is None


def test_the_pages_send_the_inspectors_csp_and_refuse_get_changes(served: Any, mem: Memory) -> None:
    import httpx

    mem.add("Priya Raman runs the payroll service", scope=Scope(tenant="csp"))
    with httpx.Client(base_url=served.base) as client:
        client.get(f"/?token={served.guard.token}")
        for path in ("/entities?t=csp", "/entity?t=csp&name=Priya+Raman&kind=person"):
            resp = client.get(path)
            assert resp.status_code == 200
            csp = resp.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src" not in csp
        assert client.get("/do/entity-merge?t=csp&confirm=yes").status_code == 405


# ---------------------------------------------------------------------------------------------- hostile names
HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
HOSTILE_ALIAS = "x' onmouseover='alert(3)' \" autofocus onfocus=\"alert(4)"
HOSTILE_NEIGHBOUR = "</svg></figure><svg onload=alert(5)>"


def test_hostile_entity_names_render_as_inert_text(d: Any, served: Any, mem: Memory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Names come from memory text (or an LLM reading it): anyone who writes to a scope picks them. Here the
    extractor is handed two hostile names, as a model could return them; the real index stores them."""
    from selenium.common.exceptions import NoAlertPresentException

    from remem.core.entities import hooks, names
    from remem.core.entities.extract import Mention, extract
    from remem.core.entities.store import shown

    def hostile(text: str) -> list[Mention]:
        found = list(extract(text))
        if "supplier" in text:
            found += [Mention(name=HOSTILE, kind="org", key=names.key(HOSTILE), aliases=(HOSTILE_ALIAS,)),
                      Mention(name=HOSTILE_NEIGHBOUR, kind="org", key=names.key(HOSTILE_NEIGHBOUR))]
        return found

    monkeypatch.setattr(hooks, "extract", hostile)
    t = Scope(tenant="evil")
    mem.add("the new supplier sent an invoice", scope=t)
    mem.add("the supplier is late again", scope=t)
    monkeypatch.undo()
    evil = next(e for e in mem.entities(scope=t) if e.name == shown(HOSTILE))
    neighbour = next(e for e in mem.entities(scope=t) if e.name == shown(HOSTILE_NEIGHBOUR))
    raw = quote("<img src=x onerror=alert(6)>")  # what a link someone sends may ask for: shown, never run
    for path in (f"/entities?t=evil&q={raw}", f"/entity?t=evil&name={raw}", f"/entity?t={raw}&name={raw}"):
        d.get(served.base + path)
        assert "<img src=x onerror=alert(6)>" in body(d), path
        assert not d.find_elements("css selector", "img, script, [onerror]")
    pages = ["/entities?t=evil", f"/entities?t=evil&q={quote(HOSTILE_ALIAS[:8])}",
             f"/entity?t=evil&name={quote(evil.name)}&kind=org",
             f"/entity?t=evil&name={quote(neighbour.name)}&kind=org"]
    for path in pages:
        d.get(served.base + path)
        assert evil.name in body(d) or evil.name[:20] in body(d), path
        assert not d.find_elements("css selector", "img, script, [onerror], [onmouseover], [onfocus], [onload]")
        with pytest.raises(NoAlertPresentException):
            d.switch_to.alert.text
    d.get(served.base + pages[2])
    assert d.find_element("tag name", "h1").text.startswith(evil.name)
    assert HOSTILE_ALIAS.replace("<", "\u2039") in body(d)
    # its split button posts the alias back exactly, and the confirmation shows it as text
    click_and_wait(d, "form[action='/do/entity-split'] button", "Split x' onmouseover")
    assert not d.find_elements("css selector", "img, script, [onerror], [onmouseover], [onfocus], [onload]")
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text
