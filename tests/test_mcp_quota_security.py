"""The MCP quota holds against a model that tries to grow its tenant past it: chains of supersedes, parallel
saves in one server and across two server processes sharing one store through its local service, and an
import that spreads its records over the tenant's users. Calls go through the official MCP client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Callable

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from remem import ALL_TENANTS, Memory, QuotaExceededError, Scope  # noqa: E402
from remem.core.service.client import stop_service  # noqa: E402
from remem.mcp_server import Limits, build_server  # noqa: E402

ACME = Scope(tenant="acme")


def _saved_id(text: str) -> str:
    return text.split("memory ", 1)[1].split(":", 1)[0]


def _records(mem: Memory, tenant: str = "acme") -> int:
    """Every record the tenant holds: its users', superseded history and all."""
    return sum(1 for r in mem.iter_records(ALL_TENANTS) if r.scope.tenant == tenant)


async def test_a_chain_of_supersedes_stops_at_the_quota(mem: Memory) -> None:
    async with Client(build_server(mem, scope=ACME, limits=Limits(quota=3))) as c:
        r = await c.call_tool("memory_save", {"text": "The deploy window is Monday 09:00"})
        assert not r.is_error, r.content[0].text
        current, refused = _saved_id(r.content[0].text), []
        for day in ("Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"):
            r = await c.call_tool("memory_supersede", {"memory_id": current,
                                                       "new_text": f"The deploy window is {day} 09:00"})
            if r.is_error:
                refused.append(r.content[0].text)
            else:
                current = r.content[0].text.split("superseded by ", 1)[1].split(":", 1)[0]
    assert _records(mem) == 3, "six supersedes under quota 3 must leave 3 records, history included"
    assert len(refused) == 4 and all("quota of tenant 'acme' is full" in t for t in refused)
    assert mem.get(current, scope=ACME).text == "The deploy window is Wednesday 09:00"


async def test_twelve_parallel_saves_store_exactly_the_quota(mem: Memory) -> None:
    async with Client(build_server(mem, scope=ACME, limits=Limits(quota=3))) as c:
        results = await asyncio.gather(*(c.call_tool("memory_save", {"text": f"fact {i}: service s{i} "
                                                                              f"listens on port {8000 + i}"})
                                         for i in range(12)))
    assert sum(not r.is_error for r in results) == 3
    assert all("quota" in r.content[0].text for r in results if r.is_error)
    assert _records(mem) == 3


async def test_parallel_saves_from_two_server_processes_sharing_the_service_stop_at_the_quota(
        store_factory: Callable[..., Path]) -> None:
    """Each stdio server counts nothing itself: the local service counts and writes under its one write lock."""
    path = store_factory("none")
    env = {"REMEM_SERVICE": "auto", "REMEM_SERVICE_IDLE": "60", "REMEM_MCP_QUOTA": "3", "PATH": "/usr/bin:/bin"}

    def params() -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, env=env, args=[
            "-m", "remem.cli", "mcp", "--path", str(path), "--embedder", "none", "--tenant", "acme"])

    try:
        async with Client(params()) as a, Client(params()) as b:
            for c in (a, b):  # both servers have opened the store (through the service) before the race
                assert json.loads((await c.call_tool("memory_stats", {})).content[0].text)["count"] == 0
            results = await asyncio.gather(*(c.call_tool("memory_save", {"text": f"note {i} from server {n}: "
                                                                                  f"cache ttl is {i * 11} s"})
                                             for i in range(6) for n, c in enumerate((a, b))))
        assert sum(not r.is_error for r in results) == 3, [r.content[0].text for r in results]
        with Memory(path=path, embedder="none", service="require") as mem:
            assert _records(mem) == 3
    finally:
        stop_service(path, wait=False)


def test_an_import_spread_over_a_tenants_users_is_counted_for_the_tenant(memory_factory: Callable[..., Memory],
                                                                         tmp_path: Path) -> None:
    source = memory_factory("none")
    for user in ("alice", "bob"):
        for i in range(2):
            source.add(f"{user} note {i} about build cache {i * 13}", scope=Scope(tenant="acme", user=user))
    dump = tmp_path / "acme.jsonl"
    assert source.export(dump, scope=ALL_TENANTS) == 4
    target = memory_factory("none", tenant_quota=3)
    with pytest.raises(QuotaExceededError, match="quota of tenant 'acme' is full"):
        target.import_(dump, scope=ALL_TENANTS)
    assert _records(target) == 0, "an import past the quota stores nothing"


async def test_repeating_a_memory_with_new_tags_cannot_grow_it_without_end(mem: Memory) -> None:
    """A duplicate merges into the memory it repeats (no new record, so the count quota does not see it): its
    tags and metadata must stay within one write's limits, or repeats would grow one record without bound."""
    from remem.core.store.validation import MAX_METADATA_BYTES, MAX_TAGS

    async with Client(build_server(mem, scope=ACME, limits=Limits(quota=3))) as c:
        for i in range(12):
            r = await c.call_tool("memory_save", {"text": "The deploy window is Monday 09:00",
                                                  "tags": [f"round{i}-tag{j}" for j in range(20)]})
            assert not r.is_error, r.content[0].text
    (rec,) = mem.list(scope=ACME)
    assert rec.merged_count == 11 and len(rec.tags) == MAX_TAGS
    for i in range(30):
        mem.add("The deploy window is Monday 09:00", scope=ACME, metadata={f"note{i}": "x" * 3000})
    assert len(json.dumps(mem.get(rec.id, scope=ACME).metadata)) <= MAX_METADATA_BYTES
