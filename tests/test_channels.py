"""Channels (named ingestion streams, each with its own extraction, searched alone or together): the recipe in
docs/channels.md, run as written, on the real store."""

from __future__ import annotations

from typing import Any

from remem import Memory, Scope
from remem.core.distill.keyless import KeylessDistiller

ALICE = Scope(tenant="acme", user="alice")
TALK = [
    {"id": "c1", "role": "user", "content": "We decided to use Postgres for the job queue because Redis lost jobs."},
    {"id": "c2", "role": "assistant", "content": "Got it, Postgres it is. The queue worker restarts nightly."},
    {"id": "c3", "role": "user", "content": "I prefer tabs over spaces in the Makefile, obviously."},
]
OBSERVED = ["The checkout p95 latency rose to 900 ms after the 14:00 deploy.",
            "Disk usage on db-2 reached 91% at 03:10."]


class DecisionsOnly(KeylessDistiller):
    """The "decisions" channel's extraction: the keyless distiller, keeping decisions only."""

    name = "keyless:decisions"

    def candidates(self, turns: Any, **kwargs: Any) -> list[Any]:
        return [c for c in super().candidates(turns, **kwargs) if c.kind == "decision"]


def ingest(mem: Memory) -> None:
    mem.remember(TALK, scope=ALICE, session="s1", distiller=DecisionsOnly(), metadata={"channel": "decisions"},
                 episodes=False)
    mem.add_many([{"text": o, "kind": "event", "metadata": {"channel": "observations"}} for o in OBSERVED],
                 scope=ALICE)


def channel(mem: Memory, name: str) -> list[Any]:
    return [r for r in mem.list(scope=ALICE, limit=100, where={"channel": name})]


def test_each_channel_keeps_what_its_extraction_keeps(mem: Memory) -> None:
    ingest(mem)
    assert {r.kind for r in channel(mem, "decisions")} == {"decision", "summary"}  # + the session's summary
    decisions = [r for r in channel(mem, "decisions") if r.kind == "decision"]
    assert any("Postgres" in r.text for r in decisions)
    assert not any("tabs" in r.text for r in decisions)  # a preference is not this channel's business
    assert sorted(r.text for r in channel(mem, "observations")) == sorted(OBSERVED)  # straight through


def test_search_one_channel_or_several(mem: Memory) -> None:
    ingest(mem)
    only = mem.search("Postgres queue latency disk", scope=ALICE, where={"channel": "decisions"}, kind="decision",
                      limit=10)
    assert only and all(h.record.metadata["channel"] == "decisions" and h.record.kind == "decision" for h in only)
    both = mem.search("Postgres queue latency disk", scope=ALICE, limit=10,
                      where={"channel": {"$in": ["decisions", "observations"]}})
    assert {h.record.metadata["channel"] for h in both} == {"decisions", "observations"}
    assert not mem.search("Postgres", scope=Scope(tenant="acme", user="bob"), where={"channel": "decisions"})
