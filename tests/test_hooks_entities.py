"""Profiles in Claude Code: the real prompt hook, through the plugin's launcher, answered by a real local service
on a temporary store. A prompt asking about one known entity gets its profile within the recall budget; any
other prompt gets what it got before; a broken entity shard costs the profile, never the recall."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from remem import Memory, Scope
from remem.core.entities.store import ENTITY_DIR
from remem.core.recall.fencing import CLOSE, OPEN
from remem.core.recall.tokens import count_tokens
from remem.core.service.client import stop_service
from remem.hooks.profiles import asked_about
from store_services import service_pids
from test_hooks import Plugin

BUDGET = 800  # the default
NOTES = [
    ("Dana Whitfield maintains the ingest worker.", "fact"),
    ("The ingest worker runs on host ingest-prod-01 and reads its config from deploy/ingest.yaml.", "fact"),
    ("The ingest worker moved off Kafka to Redis Streams in May.", "decision"),
    ("Ticket OPS-412 tracked the flaky retries in the ingest worker; exponential backoff fixed it.", "lesson"),
    ("We deploy the billing service with fly.io from the main branch only.", "decision"),
    ("Never use tabs in this repo, always 4 spaces.", "preference"),
    ("The staging database is refreshed every night at 02:00 UTC.", "fact"),
    ("New tests use pytest, not unittest.", "preference"),
]


@pytest.fixture
def served(tmp_path: Path, store_factory) -> Plugin:  # type: ignore[no-untyped-def]
    p = Plugin(tmp_path, store_factory("none"))
    p.env.update(REMEM_SERVICE="auto", REMEM_SERVICE_IDLE="60", REMEM_HOOK_RECALL_TOKENS=str(BUDGET))
    yield p
    stop_service(p.home / "store", wait=False)
    deadline = time.monotonic() + 15
    while service_pids(p.home / "store") and time.monotonic() < deadline:
        time.sleep(0.3)
        stop_service(p.home / "store", wait=True)


def seeded(plugin: Plugin) -> Path:
    proj = plugin.project("queue-svc")
    with Memory(path=plugin.home / "store", embedder="none", service="off") as mem:
        for text, kind in NOTES:
            mem.add(text, scope=Scope(tenant=str(proj.resolve())), kind=kind)
    return proj


def ask(plugin: Plugin, proj: Path, session: str, prompt: str, **env: str) -> str:
    """The prompt's injected context, in a session whose digest was given already (by a first "hi")."""
    plugin.prompt(proj, session, "hi", **env)
    return plugin.prompt(proj, session, prompt, **env)[0]


def test_the_profile_prompt_shapes_are_narrow() -> None:
    assert asked_about("What do we know about the ingest worker?") == "the ingest worker"
    assert asked_about("Tell me about Dana Whitfield.") == "Dana Whitfield"
    assert asked_about("who's Dana") == "Dana"
    assert asked_about("ingest worker status?") == "ingest worker"
    for prompt in ("Fix the flaky retries in the ingest worker", "tell me about it",
                   "What do we know about how the ingest worker handles retries when Kafka is down and Redis too?",
                   "Who is going to review the ingest worker change?"):
        assert asked_about(prompt) is None, prompt


def test_a_profile_prompt_gets_the_profile_within_the_budget(served: Plugin) -> None:
    proj = seeded(served)
    context = ask(served, proj, "s1", "What do we know about the ingest worker?")
    assert "What is known about ingest worker" in context  # marked as a profile
    for fact in ("Redis Streams", "ingest-prod-01", "Dana Whitfield", "OPS-412"):
        assert fact in context, fact
    assert context.count(OPEN) == context.count(CLOSE) >= 1  # fenced, as recall is
    assert count_tokens(context) <= BUDGET
    # the profile's memories are not repeated by the recall beside it
    assert context.count("Redis Streams in May") == 1
    # without profiles (the same store and service), the same prompt gets scattered lines, no profile
    plain = ask(served, proj, "s2", "What do we know about the ingest worker?", REMEM_HOOK_PROFILE="0")
    assert "What is known about" not in plain and plain
    assert served.log_lines() and any(line.get("profile") == "ingest worker" for line in served.log_lines())


def test_any_other_prompt_gets_what_it_got_before(served: Plugin) -> None:
    proj = seeded(served)
    for n, prompt in enumerate(("How do we deploy the billing service?",
                                "Fix the flaky retries in the ingest worker",
                                "Tell me about the Zanzibar gateway.")):  # a name the project never heard of
        with_profiles = ask(served, proj, f"on-{n}", prompt)
        without = ask(served, proj, f"off-{n}", prompt, REMEM_HOOK_PROFILE="0")
        assert with_profiles == without, prompt
        assert "What is known about" not in with_profiles


def test_a_broken_entity_shard_falls_back_to_ordinary_recall(served: Plugin) -> None:
    proj = seeded(served)
    shards = [p for p in (served.home / "store").rglob(ENTITY_DIR) if p.is_dir()]
    assert shards, "the store has no entity shard"
    broken = 0
    for shard in shards:  # every file of it overwritten with garbage
        for f in shard.rglob("*"):
            if f.is_file() and f.name != "remem.lock":
                f.write_bytes(b"\x00garbage{" * 64)
                broken += 1
    assert broken
    context = ask(served, proj, "s1", "What do we know about the ingest worker?")
    assert "entity index unavailable" in (served.home / "store" / "service.log").read_text()  # broken, not fresh
    assert "What is known about" not in context
    assert "ingest-prod-01" in context  # ordinary recall still answers, as it does with profiles off
    assert context == ask(served, proj, "s2", "What do we know about the ingest worker?", REMEM_HOOK_PROFILE="0")
