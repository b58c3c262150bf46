"""``remem demo``: the README's main job — a sample conversation in a temporary store, recalled three ways."""

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


def run_demo(console: Console, *, embedder: str | None = None, keep: bool = False) -> int:
    data = _sample()
    folder = Path(tempfile.mkdtemp(prefix="remem-demo-"))
    started = time.perf_counter()
    mem = Memory(path=folder / "store", embedder=embedder, service="off")
    try:
        scope = Scope(tenant=data["tenant"], user=data["user"])
        console.print(f"[bold]remem demo[/bold] - temporary store {folder} - embedder: {mem.embedder.name}")
        items = [{"text": f"{t['speaker']}: {t['text']}", "kind": "event", "valid_from": s["date"],
                  "created_at": s["date"], "tags": [t["speaker"]]}
                 for s in data["sessions"] for t in s["turns"]]
        mem.add_many(items, scope=scope)
        sup = data["supersede"]
        old = mem.add(sup["old"], scope=scope, kind="fact", valid_from=sup["old_from"], created_at=sup["old_from"])
        new = mem.supersede(old.id, sup["new"], scope=scope, valid_from=sup["switch"])
        other = data["other_tenant"]
        mem.add(other["text"], scope=Scope(tenant=other["tenant"], user=other["user"]), kind="fact")
        console.print(f"loaded {len(items) + 3} memories ({len(data['sessions'])} sessions, 2 tenants)\n")

        table = Table(title="1. hybrid recall (BM25 + dense, fused in Qdrant) in tenant " + data["tenant"])
        table.add_column("query", style="cyan")
        table.add_column("top memory")
        for q in data["queries"]:
            hits = mem.search(q, scope=scope, limit=1, reinforce=False)
            table.add_row(q, hits[0].record.text if hits else "-")
        console.print(table)

        leak = mem.search("how does the company pay vendors, adyen or stripe?", scope=scope, limit=5)
        foreign = [h for h in leak if h.record.scope.tenant != data["tenant"]]
        console.print(f"\n2. scope isolation: searching tenant {data['tenant']} for Globex's vendor payments -> "
                      f"{len(foreign)} foreign memories (the Globex memory stays in its own tenant)")
        globex = mem.search("vendor payments", scope=Scope(tenant=other["tenant"]), limit=1)
        console.print(f"   the same search in tenant {other['tenant']}: {globex[0].record.text if globex else '-'}")

        now = mem.search("orders database version", scope=scope, kind="fact", limit=1)
        then = mem.search("orders database version", scope=scope, kind="fact", limit=1,
                          as_of=to_datetime("2026-09-20T00:00:00Z"))
        console.print("\n3. time: a superseded fact is kept, and as_of shows what was true then")
        console.print(f"   now:            {now[0].record.text if now else '-'}")
        console.print(f"   as of 2026-09-20: {then[0].record.text if then else '-'}")
        console.print(f"   (old memory valid until {mem.get(old.id, scope=scope).valid_until:%Y-%m-%d}, superseded by {new.id[:8]})")

        ctx = mem.context("what do I need to know before touching checkout?", scope=scope, token_budget=200)
        console.print("\n4. context for a prompt, within a 200-token budget:\n" + ctx)
        console.print(f"\ndone in {time.perf_counter() - started:.1f} s")
        ok = bool(now and then and now[0].record.id == new.id and then[0].record.id == old.id and not foreign)
        return 0 if ok else 1
    finally:
        mem.close()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
