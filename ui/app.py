"""The inspector's Starlette app: read pages (tenants, list, detail, entities, an entity, recall, hook recalls,
audit) and the few forms that change the store (edit, supersede, forget, merge, export, merge and split an
entity), each behind a confirmation page."""

from __future__ import annotations

import collections
import datetime as _dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Route

from remem import NotFoundError, RememError
from remem.core.entities import KINDS

from . import actions, charts, entities, hooklog
from .jobs import Jobs
from .render import page, qs
from .security import SIGNIN_PATH, Guard, guarded, signin
from .store import GLOBAL_KEY, ListQuery, detail, list_page, scope_of

STATIC = Path(__file__).parent / "static"
UI_SEARCHES = 200


@dataclass
class State:
    """Everything one running inspector holds: the store, its secrets, background jobs, and where exports go."""

    mem: Any
    guard: Guard
    export_dir: Path
    jobs: Jobs = field(init=False)
    searches: collections.deque = field(default_factory=lambda: collections.deque(maxlen=UI_SEARCHES))
    chart: tuple[Any, Any] = (None, None)
    entity_lists: entities.ListCache = field(default_factory=entities.ListCache)

    def __post_init__(self) -> None:
        self.jobs = Jobs(self.mem)

    def tenants(self, current: str) -> list[str]:
        summary = self.jobs.summary.value
        names = [k for k, _ in sorted(summary.tenants.items(), key=lambda kv: -kv[1].count)][:500] if summary else []
        if current not in names:
            names.insert(0, current)
        return names

    def ctx(self, request: Request, nav: str, tenant: str, **more: Any) -> dict[str, Any]:
        """What every page template gets: the CSRF token, the tenant picker, the store's name."""
        return {"request": request, "csrf": request.state.csrf, "nav": nav, "tenant": tenant,
                "tenants": self.tenants(tenant), "store": self.store_label(), "GLOBAL": GLOBAL_KEY, **more}

    def store_label(self) -> str:
        backend = getattr(self.mem, "backend", None)
        return f"{getattr(backend, 'location', '?')} · embedder {self.mem.embedder.name}"


def _tenant(request: Request) -> str:
    return (request.query_params.get("t") or "").strip() or GLOBAL_KEY


# ---------------------------------------------------------------------------------------------- read pages
def tenants_page(st: State, request: Request) -> Response:
    summary = st.jobs.summary.get(wait=0.5)
    if st.chart[0] is not summary:  # drawn once per scan, not per page load
        st.chart = (summary, charts.kinds_over_time(summary.all_days if summary else collections.Counter(),
                                                    summary.kinds if summary else []))
    svg, bars, unit = st.chart[1]
    now = _dt.datetime.now(_dt.timezone.utc)
    lat = hooklog.recall_latencies()
    ms = [p.ms for p in lat]
    return page("tenants.html", **st.ctx(
        request, "tenants", _tenant(request), title="Tenants", summary=summary, job=st.jobs.summary,
        chart=svg, bars=bars, unit=unit, colours=charts.kind_colours(summary.kinds if summary else []),
        latency_chart=charts.latency_chart([(p.at, p.ms) for p in lat], now), latency_count=len(ms),
        p50=hooklog.percentile(ms, 0.5), p95=hooklog.percentile(ms, 0.95)))


def list_view(st: State, request: Request) -> Response:
    q = ListQuery.from_params(request.query_params)
    error = None
    try:
        result = list_page(st.mem, q)
    except (ValueError, RememError) as exc:
        result, error = None, str(exc)
    summary = st.jobs.summary.value
    kinds = sorted(set(summary.kinds) | {q.kind} - {""}) if summary else ([q.kind] if q.kind else [])
    return page("list.html", status=400 if error else 200, **st.ctx(
        request, "memories", q.tenant, title="Memories", q=q, result=result, error=error, kinds=kinds,
        decay=getattr(st.mem, "decay", None), now=time.time()))


def detail_view(st: State, request: Request) -> Response:
    d = detail(st.mem, request.path_params["memory_id"])
    tenant = GLOBAL_KEY if d.record.scope.tenant is None else d.record.scope.tenant
    return page("detail.html", **st.ctx(request, "memories", tenant, title="Memory", d=d, rec=d.record))


def entities_view(st: State, request: Request) -> Response:
    error, q, result = None, None, None
    try:
        q = entities.EntityQuery.from_params(request.query_params)
        result = entities.entity_page(st.mem, q, cache=st.entity_lists)
    except (ValueError, RememError) as exc:
        error = str(exc)
    q = q or entities.EntityQuery(tenant=_tenant(request))
    return page("entities.html", status=400 if error else 200, **st.ctx(
        request, "entities", q.tenant, title="Entities", q=q, result=result, error=error, kinds=KINDS))


def entity_view(st: State, request: Request) -> Response:
    tenant = _tenant(request)
    profile = entities.profile_of(st.mem, tenant, request.query_params.get("name", ""),
                                  request.query_params.get("kind", ""))
    e = profile.entity
    colours = charts.kind_colours(KINDS)
    link = lambda name, kind: f"/entity?{qs(t=tenant, name=name, kind=kind)}"  # noqa: E731
    graph = charts.neighbours(charts.Node(e.name, e.kind, e.mentions, link(e.name, e.kind)),
                              [charts.Node(r.name, r.kind, r.shared, link(r.name, r.kind), tuple(r.via))
                               for r in profile.related],
                              colours)
    days = entities.timeline_days(profile)
    drawn = {label for _, label in days}
    lines = {k: c for k, c in (("true now", "#0072B2"), ("changed since", "#E69F00"), ("relation began", "#009E73"))
             if k in drawn}  # the same colour for a series on every page, the legend only for what is drawn
    timeline, bars, unit = charts.kinds_over_time(days, list(lines), chart_id="timeline",
                                                  noun="lines that became true", by="what", colours=lines)
    return page("entity.html", **st.ctx(
        request, "entities", tenant, title=e.name, p=profile, e=e, graph=graph, colours=colours, link=link,
        timeline=timeline, bars=bars, unit=unit, line_colours=lines,
        budget=entities.PROFILE_TOKENS))


def search_view(st: State, request: Request) -> Response:
    tenant = _tenant(request)
    text = request.query_params.get("q", "")
    result = None
    if text.strip():
        result = actions.recall_preview(st.mem, text, scope_of(tenant))
        st.searches.append((_dt.datetime.now(_dt.timezone.utc), result.ms))
    return page("search.html", **st.ctx(request, "search", tenant, title="Recall", text=text, result=result))


def recalls_view(st: State, request: Request) -> Response:
    lat = hooklog.recall_latencies()
    ms = [p.ms for p in lat]
    now = _dt.datetime.now(_dt.timezone.utc)
    mine = [(at, v) for at, v in st.searches if (now - at).total_seconds() < 86400]
    return page("recalls.html", **st.ctx(
        request, "recalls", _tenant(request), title="Hook recalls", recalls=hooklog.recent_recalls(),
        latency_chart=charts.latency_chart([(p.at, p.ms) for p in lat], now), latency=lat,
        p50=hooklog.percentile(ms, 0.5), p95=hooklog.percentile(ms, 0.95), mine=mine,
        mine_p50=hooklog.percentile([v for _, v in mine], 0.5),
        mine_p95=hooklog.percentile([v for _, v in mine], 0.95)))


def audit_view(st: State, request: Request) -> Response:
    tenant = _tenant(request)
    job = st.jobs.audit(tenant)
    report = actions.audit_rows(st.mem, job.value, st.jobs.removed) if job.value else None
    return page("audit.html", **st.ctx(request, "audit", tenant, title="Audit", job=job, report=report))


def export_view(st: State, request: Request) -> Response:
    tenant = _tenant(request)
    return page("export.html", **st.ctx(request, "export", tenant, title="Export", done=None,
                                      folder=st.export_dir))


def download(st: State, request: Request) -> Response:
    name = request.path_params["name"]
    path = st.export_dir / name
    if "/" in name or name.startswith(".") or not path.is_file():
        raise NotFoundError(f"no export named {name!r}")
    return FileResponse(path, filename=name, media_type="application/octet-stream")


def stylesheet(st: State, request: Request) -> Response:
    return FileResponse(STATIC / "style.css", media_type="text/css")


# ---------------------------------------------------------------------------------------------- changes
def audit_run(st: State, request: Request) -> Response:
    tenant = (request.state.form.get("t") or GLOBAL_KEY).strip()
    st.jobs.removed.clear()
    st.jobs.audit(tenant).start()
    return RedirectResponse(f"/audit?{qs(t=tenant)}", status_code=303)


def change(st: State, request: Request) -> Response:
    """Every store change: without ``confirm=yes`` it shows what would happen; with it, it happens."""
    return actions.perform(st, request.path_params["action"], request.state.form, request)


# ---------------------------------------------------------------------------------------------- app
def create_app(mem: Any, *, port: int, guard: Guard | None = None, export_dir: Path | None = None) -> Starlette:
    """The inspector for ``mem``. ``port`` must be the one it is served on (the Host check relies on it)."""
    from remem.hooks.common import remem_home

    guard = guard or Guard(port=port)
    st = State(mem, guard, export_dir or remem_home() / "exports")

    def route(path: str, fn: Callable[[State, Request], Response], methods: tuple[str, ...] = ("GET",)) -> Route:
        async def endpoint(request: Request) -> Response:
            try:
                return await run_in_threadpool(fn, st, request)
            except NotFoundError as exc:
                return page("error.html", status=404, **st.ctx(request, "", _tenant(request), title="Not found",
                                                            message=str(exc)))
            except (ValueError, TypeError, RememError) as exc:
                return page("error.html", status=400, **st.ctx(request, "", _tenant(request), title="Refused",
                                                            message=str(exc)))

        return Route(path, guarded(guard, endpoint), methods=list(methods))

    routes = [
        route("/", tenants_page), route("/memories", list_view), route("/memory/{memory_id}", detail_view),
        route("/entities", entities_view), route("/entity", entity_view), route("/search", search_view),
        route("/recalls", recalls_view), route("/audit", audit_view),
        route("/export", export_view), route("/exports/{name}", download), route("/static/style.css", stylesheet),
        route("/audit/run", audit_run, ("POST",)), route("/do/{action}", change, ("POST",)),
        Route(SIGNIN_PATH, signin(guard), methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.inspector = st
    st.jobs.summary.start()
    return app


__all__ = ["State", "create_app"]
