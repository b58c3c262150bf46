"""The inspector's changes to a store (edit, supersede, forget, merge, export) and the recall preview.

A change arrives as a POST (the guard has checked its CSRF token). Without ``confirm=yes`` it is not applied:
the confirmation page shows exactly what would change and posts the same fields back with ``confirm=yes``.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from remem import ALL_TENANTS, MemoryRecord, NotFoundError, SearchHit

from .render import page, qs, short
from .store import GLOBAL_KEY, lookup, merge_group, parse_day, parse_tags, scope_of

SEARCH_LIMIT = 20


# ---------------------------------------------------------------------------------------------- recall preview
@dataclass
class RecallPreview:
    query: str
    trivial: bool
    hits: list[SearchHit]
    injected_ids: list[str]
    injected: str  # the exact recall part of additionalContext the UserPromptSubmit hook would send ("" = none)
    digest: str    # what a session's first prompt gets before it (the project digest), "" when nothing
    budget: int
    ms: float


def recall_preview(mem: Any, prompt: str, scope: Any) -> RecallPreview:
    """What the UserPromptSubmit hook would inject for ``prompt`` in this tenant, in a session that has been
    shown nothing yet: the hook's own query cut, search call, selection, rendering and preamble (its
    functions, not a copy), the digest a session's first prompt also gets, and the ranked hits with scores."""
    from remem.hooks.common import DEFAULT_DIGEST_TOKENS, DEFAULT_RECALL_TOKENS, env_int
    from remem.hooks.digest import build_digest
    from remem.hooks.injected import Shown
    from remem.core.tooling import RECALL_QUERY_CHARS
    from remem.hooks.recall import DIGEST_KINDS, SEARCH_LIMIT, digest_keep, is_trivial, select, within_chars

    budget = env_int("REMEM_HOOK_RECALL_TOKENS", DEFAULT_RECALL_TOKENS)
    query = prompt.strip()[:RECALL_QUERY_CHARS]
    start = time.perf_counter()
    fitted = mem.search(query, scope=scope, limit=SEARCH_LIMIT, token_budget=budget * 2, reinforce=False)
    fresh = Shown("")  # a session shown nothing yet
    groups = select(list(fitted), fresh, budget)
    ms = (time.perf_counter() - start) * 1000
    chosen = [rec for recs in groups for rec in recs]
    records = mem.list(scope=scope, kind=DIGEST_KINDS, limit=100, include_superseded=False)
    digest, _ = build_digest(records, env_int("REMEM_HOOK_DIGEST_TOKENS", DEFAULT_DIGEST_TOKENS),
                             keep=digest_keep(chosen, fresh))
    # the hook's own fit to Claude Code's cap: its fenced block (the preamble is inside the fence), whole
    injected, digest = within_chars(groups, digest, "")
    chosen = [rec for recs in groups for rec in recs]  # what the fit kept
    hits = mem.search(query, scope=scope, limit=SEARCH_LIMIT, reinforce=False)
    return RecallPreview(query, is_trivial(prompt), hits, [r.id for r in chosen], injected, digest, budget, ms)


# ---------------------------------------------------------------------------------------------- audit
@dataclass
class AuditRows:
    counts: dict[str, int]
    reasons: dict[str, int]
    duplicates: list[list[MemoryRecord]]
    junk: list[tuple[MemoryRecord, str]]
    stale: list[MemoryRecord]


def audit_rows(mem: Any, report: Mapping[str, Any], removed: set[str]) -> AuditRows:
    """The audit's examples as records (what was forgotten since it ran is left out)."""
    def load(memory_id: str) -> MemoryRecord | None:
        if memory_id in removed:
            return None
        try:
            return lookup(mem, memory_id)
        except NotFoundError:
            return None

    ex = report.get("examples") or {}
    groups = [[r for r in map(load, group) if r is not None] for group in ex.get("duplicates", [])]
    junk = [(r, reason) for memory_id, reason in ex.get("junk", []) if (r := load(memory_id)) is not None]
    stale = [r for r in map(load, ex.get("stale", [])) if r is not None]
    counts = {k: int(report.get(k, 0)) for k in ("total", "duplicates", "duplicate_groups", "junk", "stale")}
    return AuditRows(counts, dict(report.get("junk_reasons") or {}), [g for g in groups if len(g) > 1], junk, stale)


# ---------------------------------------------------------------------------------------------- changes
def _safe_next(value: Any, default: str) -> str:
    text = str(value or "")
    return text if text.startswith("/") and not text.startswith("//") and "\\" not in text else default


def _ids(form: FormData) -> list[str]:
    return [str(v) for v in form.getlist("id") if str(v).strip()][:100]


def _confirm(st: Any, request: Request, action: str, form: FormData, heading: str, rows: Sequence[tuple[str, str]],
             button: str, danger: bool, cancel: str) -> Response:
    hidden = [(k, str(v)) for k, v in form.multi_items() if k not in ("csrf", "confirm")]
    tenant = str(form.get("t") or GLOBAL_KEY)
    return page("confirm.html", **st.ctx(request, "", tenant, title="Confirm", action=action, heading=heading,
                                       rows=rows, hidden=hidden, button=button, danger=danger, cancel=cancel))


def perform(st: Any, action: str, form: FormData, request: Request) -> Response:
    mem = st.mem
    confirmed = form.get("confirm") == "yes"
    if action == "export":
        return export(st, request, form)
    if action in ("entity-merge", "entity-split"):
        return entity_change(st, action, form, request)
    ids = _ids(form)
    if not ids:
        raise ValueError("no memory given")
    if action == "edit":
        rec = lookup(mem, ids[0])
        changes = _edits(rec, form)
        if not changes:
            return RedirectResponse(f"/memory/{rec.id}", status_code=303)
        if not confirmed:
            rows = [(name, f"{short(str(old), 300)}  →  {short(str(new), 300)}") for name, (old, new) in changes.items()]
            return _confirm(st, request, "edit", form, "Save these changes?", rows, "Save changes", False,
                            f"/memory/{rec.id}")
        mem.update(rec.id, scope=rec.scope, **{name: new for name, (_, new) in changes.items()})
        st.jobs.changed()
        return RedirectResponse(f"/memory/{rec.id}?{qs(done='saved')}", status_code=303)
    if action == "supersede":
        rec = lookup(mem, ids[0])
        text = str(form.get("text") or "").strip()
        if not text:
            raise ValueError("the new version needs a text")
        start = parse_day(str(form.get("valid_from") or ""))
        if not confirmed:
            rows = [("now true", short(text, 600)), ("replaces", short(rec.text, 600)),
                    ("switch time", start.date().isoformat() if start else "now")]
            return _confirm(st, request, "supersede", form, "Replace this memory with a new version?", rows,
                            "Supersede", False, f"/memory/{rec.id}")
        new = mem.supersede(rec.id, text, valid_from=start, scope=rec.scope)
        st.jobs.changed()
        return RedirectResponse(f"/memory/{new.id}?{qs(done='superseded')}", status_code=303)
    if action == "forget":
        recs = [lookup(mem, i) for i in ids]
        back = _safe_next(form.get("next"), f"/memories?{qs(t=form.get('t'))}")
        if not confirmed:
            rows = [(r.kind, short(r.text, 300)) for r in recs]
            word = "this memory" if len(recs) == 1 else f"these {len(recs)} memories"
            cancel = back if len(recs) > 1 or "/memory/" not in back else f"/memory/{recs[0].id}"
            return _confirm(st, request, "forget", form, f"Forget {word}? This deletes it for good.", rows,
                            "Forget", True, cancel)
        gone = [r.id for r in recs if mem.forget(r.id, scope=r.scope)]
        st.jobs.changed(gone)
        return RedirectResponse(_with(back, done=f"forgot {len(gone)}"), status_code=303)
    if action == "merge":
        recs = [lookup(mem, i) for i in ids]
        back = _safe_next(form.get("next"), "/audit")
        if not confirmed:
            rows = [(r.kind, short(r.text, 300)) for r in recs]
            return _confirm(st, request, "merge", form, "Merge these duplicates into one memory? The most used one is "
                            "kept with every tag and the highest importance; the others are forgotten.", rows,
                            "Merge", True, back)
        kept, gone = merge_group(mem, ids)
        st.jobs.changed(gone)
        return RedirectResponse(_with(back, done=f"merged {len(gone) + 1} into one"), status_code=303)
    raise NotFoundError(f"unknown action {action!r}")


def _entity_url(tenant: str, name: str, kind: str, **more: str) -> str:
    return f"/entity?{qs(t=tenant, name=name, kind=kind, **more)}"


def entity_change(st: Any, action: str, form: FormData, request: Request) -> Response:
    """Merge another entity into this one, or split a name off it: both shown first, done on ``confirm=yes``,
    inside the tenant on screen only (the store refuses ids of another tenant, and so another tenant's entity)."""
    from .entities import describe, other_named, profile_of

    tenant = str(form.get("t") or GLOBAL_KEY)
    scope = scope_of(tenant)
    confirmed = form.get("confirm") == "yes"
    name, kind = str(form.get("name") or ""), str(form.get("kind") or "")
    entity = profile_of(st.mem, tenant, name, kind, budget=0).entity
    assert entity is not None  # profile_of raises NotFoundError otherwise
    if str(form.get("id") or "") != entity.id:
        raise ValueError(f"{entity.name!r} is no longer the entity this form was for: reload its page")
    back = _entity_url(tenant, entity.name, entity.kind)
    if action == "entity-merge":
        other = other_named(st.mem, tenant, str(form.get("other_name") or ""), entity)
        if form.get("other", other.id) != other.id:
            raise ValueError(f"{form.get('other_name')!r} names another entity than the one shown: review it again")
        if not confirmed:
            form = FormData([*form.multi_items(), ("other", other.id)])  # confirmed: exactly this one
            rows = [("keep", describe(entity)), ("merge in", describe(other)),
                    ("then", f"{other.name!r} and its other names find {entity.name!r}; recall and its profile "
                             f"read the memories of both. Nothing is deleted: split it off again any time.")]
            return _confirm(st, request, "entity-merge", form, f"Merge {other.name} into {entity.name}?", rows,
                            "Merge", True, back)
        st.mem.merge_entities(entity.id, other.id, scope=scope)
        st.entity_lists.clear()
        return RedirectResponse(_entity_url(tenant, entity.name, entity.kind,
                                            done=f"merged {other.name} into {entity.name}"), status_code=303)
    part = str(form.get("part") or "").strip()
    merged = dict(zip(entity.merged_names, entity.merged))
    if part not in entity.aliases and part not in merged:
        raise ValueError(f"{part!r} is neither another name of {entity.name!r} nor an entity merged into it")
    what = "the entity merged into it" if part in merged else "the alias"
    if not confirmed:
        rows = [("entity", describe(entity)), ("split off", f"{part} ({what})"),
                ("then", f"{part!r} is an entity of its own again and finds its own memories only"
                         + ("." if part in merged else f"; {entity.name!r} refuses it as an alias from now on."))]
        return _confirm(st, request, "entity-split", form, f"Split {part} off {entity.name}?", rows, "Split",
                        True, back)
    new = st.mem.split_entity(entity.id, part, scope=scope)
    st.entity_lists.clear()
    return RedirectResponse(_entity_url(tenant, entity.name, entity.kind,
                                        done=f"split {new.name} off {entity.name}"), status_code=303)


def _with(url: str, **params: str) -> str:
    return url + ("&" if "?" in url else "?") + qs(params)


def _edits(rec: MemoryRecord, form: FormData) -> dict[str, tuple[Any, Any]]:
    """The fields the edit form changed, as (old, new)."""
    out: dict[str, tuple[Any, Any]] = {}
    text = str(form.get("text") or "").strip()
    if text and text != rec.text:
        out["text"] = (rec.text, text)
    kind = str(form.get("kind") or "").strip()
    if kind and kind != rec.kind:
        out["kind"] = (rec.kind, kind)
    if "tags" in form:
        tags = parse_tags(str(form.get("tags") or ""))
        if tuple(tags) != rec.tags:
            out["tags"] = (", ".join(rec.tags) or "(none)", tags)
    raw = str(form.get("importance") or "").strip()
    if raw:
        try:
            importance = int(raw)
        except ValueError as exc:
            raise ValueError(f"importance must be a whole number from 1 to 10, got {raw!r}") from exc
        if importance != rec.importance:
            out["importance"] = (rec.importance, importance)
    return out


# ---------------------------------------------------------------------------------------------- export
def private_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def export_scope(choice: str, tenant: str) -> Any:
    """``all``: every tenant, through the explicit admin switch; otherwise the tenant on screen."""
    return ALL_TENANTS if choice == "all" else scope_of(tenant)


def export(st: Any, request: Request, form: FormData) -> Response:
    tenant = str(form.get("t") or GLOBAL_KEY)
    choice = "all" if form.get("what") == "all" else "tenant"
    label = "all" if choice == "all" else re.sub(r"[^A-Za-z0-9_-]+", "_", tenant).strip("_")[:40] or "global"
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = private_dir(st.export_dir)
    path = folder / f"remem-{label}-{stamp}.jsonl.gz"
    n = st.mem.export(path, scope=export_scope(choice, tenant))
    os.chmod(path, 0o600)
    return page("export.html", **st.ctx(request, "export", tenant, title="Export", folder=folder,
                                      done={"path": path, "count": n, "name": path.name}))


__all__ = ["AuditRows", "RecallPreview", "audit_rows", "entity_change", "export", "perform", "recall_preview"]
