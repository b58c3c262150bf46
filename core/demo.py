"""``remem demo``: the README's main job — a sample conversation captured with ``remember()`` in a temporary
store (what users' hooks and adapters do), then recalled: hybrid search with provenance, scope isolation, time,
and a budgeted context."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from .memory import Memory
from .types import Scope, to_datetime


def _sample() -> dict[str, Any]:
    return json.loads(resources.files("remem").joinpath("data/sample_conversation.json").read_text("utf-8"))


def _messages(session: int, s: dict[str, Any]) -> list[dict[str, Any]]:
    """A sample session as a capture sends it: roles, the user's name, an id per message, the session's time."""
    return [{"role": "assistant" if t["speaker"] == "assistant" else "user", "content": t["text"],
             "id": f"s{session}-{n}", "timestamp": s["date"],
             **({} if t["speaker"] == "assistant" else {"name": t["speaker"]})}
            for n, t in enumerate(s["turns"], 1)]


def run_demo(console: Console, *, embedder: str | None = None, keep: bool = False) -> int:
    data = _sample()
    folder = Path(tempfile.mkdtemp(prefix="remem-demo-"))
    started = time.perf_counter()
    mem = Memory(path=folder / "store", embedder=embedder, service="off")
    try:
        scope = Scope(tenant=data["tenant"], user=data["user"])
        console.print(f"[bold]remem demo[/bold] - temporary store {folder} - embedder: {mem.embedder.name}")
        for n, s in enumerate(data["sessions"], 1):  # the path every capture takes: hooks, adapters, the CLI
            mem.remember(_messages(n, s), scope=scope, session=f"session-{n}", distiller="keyless")
        kinds = mem.stats(scope=scope).by_kind
        said, summaries = kinds.get("episode", 0), kinds.get("summary", 0)
        distilled = {k: v for k, v in sorted(kinds.items()) if k not in ("episode", "summary")}
        console.print(f"1. remember() of {len(data['sessions'])} sessions kept {said} messages as said, "
                      f"{sum(distilled.values())} distilled memories "
                      f"({', '.join(f'{k} {v}' for k, v in distilled.items())}) and {summaries} session summaries:")
        for rec in mem.list(scope=scope, limit=100):
            if rec.kind in distilled:
                console.print(f"   {rec.kind:<10} {rec.text}  [dim](from {', '.join(rec.sources)})[/dim]")
        sup = data["supersede"]
        old = mem.add(sup["old"], scope=scope, kind="fact", valid_from=sup["old_from"], created_at=sup["old_from"])
        new = mem.supersede(old.id, sup["new"], scope=scope, valid_from=sup["switch"])
        other = data["other_tenant"]
        mem.add(other["text"], scope=Scope(tenant=other["tenant"], user=other["user"]), kind="fact")

        table = Table(title="\n2. hybrid recall (BM25 + dense, fused in Qdrant) in tenant " + data["tenant"])
        table.add_column("query", style="cyan")
        table.add_column("top hit")
        table.add_column("kind")
        table.add_column("from")
        for q in data["queries"]:
            hits = mem.search(q, scope=scope, limit=1, reinforce=False)
            top = hits[0].record if hits else None
            table.add_row(q, top.text if top else "-", top.kind if top else "", ", ".join(top.sources) if top else "")
        console.print(table)

        leak = mem.search("how does the company pay vendors, adyen or stripe?", scope=scope, limit=5)
        foreign = [h for h in leak if h.record.scope.tenant != data["tenant"]]
        console.print(f"\n3. scope isolation: searching tenant {data['tenant']} for Globex's vendor payments -> "
                      f"{len(foreign)} foreign memories (the Globex memory stays in its own tenant)")
        globex = mem.search("vendor payments", scope=Scope(tenant=other["tenant"]), limit=1)
        console.print(f"   the same search in tenant {other['tenant']}: {globex[0].record.text if globex else '-'}")

        now = mem.search("orders database version", scope=scope, kind="fact", limit=1)
        then = mem.search("orders database version", scope=scope, kind="fact", limit=1,
                          as_of=to_datetime("2026-09-20T00:00:00Z"))
        console.print("\n4. time: a superseded fact is kept, and as_of shows what was true then")
        console.print(f"   now:            {now[0].record.text if now else '-'}")
        console.print(f"   as of 2026-09-20: {then[0].record.text if then else '-'}")
        console.print(f"   (old memory valid until {mem.get(old.id, scope=scope).valid_until:%Y-%m-%d}, superseded by {new.id[:8]})")

        ctx = mem.context("what do I need to know before touching checkout?", scope=scope, token_budget=200)
        console.print("\n5. context for a prompt, within a 200-token budget:\n" + ctx)
        console.print(f"\ndone in {time.perf_counter() - started:.1f} s")
        ok = bool(now and then and now[0].record.id == new.id and then[0].record.id == old.id and not foreign)
        return 0 if ok else 1
    finally:
        mem.close()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
