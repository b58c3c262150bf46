"""One scope rule: None is the global space, by-id operations stay inside their scope, ALL_TENANTS is explicit."""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from remem import ALL_TENANTS, Memory, NotFoundError, QuotaExceededError, Scope, ScopeError
from remem.core.tooling import BackgroundCapture

ACME, GLOBEX = Scope(tenant="acme", user="alice"), Scope(tenant="globex", user="bob")


def test_by_id_operations_cannot_cross_tenants(any_mem: Memory, tmp_path: Path) -> None:
    rec = any_mem.add("Acme's deploy key rotates every Monday", scope=ACME)
    for other in (GLOBEX, None, {"tenant": "acme", "user": "mallory"}):
        with pytest.raises(NotFoundError) as missing:
            any_mem.get(rec.id, scope=other)
        with pytest.raises(NotFoundError) as absent:
            any_mem.get("4b0a8c2e-0000-4000-8000-000000000000", scope=other)
        assert str(missing.value).replace(rec.id, "X") == str(absent.value).replace(absent.value.args[0].split("'")[1], "X")
        with pytest.raises(NotFoundError):
            any_mem.update(rec.id, text="hijacked", scope=other)
        with pytest.raises(NotFoundError):
            any_mem.supersede(rec.id, "hijacked", scope=other)
        with pytest.raises(NotFoundError) as gone:
            any_mem.forget(rec.id, scope=other)
        assert str(gone.value) == str(missing.value)  # forget answers like get
    assert any_mem.get(rec.id, scope=ACME).text == "Acme's deploy key rotates every Monday"
    assert any_mem.get(rec.id, scope=ALL_TENANTS).id == rec.id  # the explicit admin switch


def test_none_is_the_global_space_for_every_read(any_mem: Memory) -> None:
    any_mem.add("a tenant memory about kiwis", scope=ACME)
    g = any_mem.add("a global memory about kiwis")
    assert [h.record.id for h in any_mem.search("kiwis")] == [g.id]
    assert [r.id for r in any_mem.list()] == [g.id]
    assert any_mem.count() == 1 and any_mem.stats().count == 1
    assert [r.id for r in any_mem.iter_records()] == [g.id]
    assert any_mem.count(scope=ALL_TENANTS) == 2 and any_mem.stats(scope=ALL_TENANTS).count == 2


def test_writes_never_take_all_tenants(mem: Memory) -> None:
    with pytest.raises(ScopeError):
        mem.add("where would this go?", scope=ALL_TENANTS)
    with pytest.raises(ScopeError, match="without a scope"):
        mem.forget(dry_run=False)


def test_a_crafted_import_cannot_move_another_tenants_record(mem: Memory, tmp_path: Path) -> None:
    victim = mem.add("Globex's launch date is March 3", scope=GLOBEX)
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text(json.dumps({"id": victim.id, "text": "moved", "scope": {"tenant": "acme"}}) + "\n")
    with pytest.raises(ScopeError, match="another tenant"):
        mem.import_(crafted, scope={"tenant": "acme"})
    with pytest.raises(ScopeError, match="outside the scope"):
        mem.import_(crafted, scope=GLOBEX)  # and a file cannot write outside the scope it was given
    assert mem.get(victim.id, scope=GLOBEX).text == "Globex's launch date is March 3"
    assert mem.count(scope={"tenant": "acme"}) == 0


def test_a_crafted_import_cannot_take_another_users_record_of_the_same_tenant(mem: Memory, tmp_path: Path) -> None:
    """A user-scoped import rewrites records in its own scope only: reusing a colleague's id is refused, and
    the whole file is refused before anything of it is written."""
    alice, mallory = Scope(tenant="acme", user="alice"), Scope(tenant="acme", user="mallory")
    victim = mem.add("Alice's recovery hint: the blue heron", scope=alice)
    crafted = tmp_path / "crafted.jsonl"
    lines = [{"id": "0b5e3f7a-0000-4000-8000-000000000001", "text": "an honest line", "scope": mallory.as_dict()},
             {"id": victim.id, "text": "pwned by mallory", "scope": mallory.as_dict()}]
    crafted.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for scope in (mallory, {"tenant": "acme"}):
        with pytest.raises(ScopeError, match="another scope"):
            mem.import_(crafted, scope=scope)
    assert mem.get(victim.id, scope=alice).text == "Alice's recovery hint: the blue heron"
    assert mem.count(scope=mallory) == 0


def test_a_tenant_wide_conversation_never_reads_or_writes_a_users_of_the_same_name(mem: Memory) -> None:
    """remember() continues a session from its own earlier messages only: a user's conversation stored under the
    same session name is not its past, is not given its words as context, and keeps none after a forget."""
    tenant, alice = Scope(tenant="acme"), Scope(tenant="acme", user="alice")
    mem.remember([{"role": "user", "content": "We agreed the release train leaves on Thursdays."},
                  {"role": "assistant", "content": "Noted, Thursday releases."}], scope=tenant, session="standup")
    mem.remember([{"role": "user", "content": "My therapist appointment is at the Harborview clinic."},
                  {"role": "assistant", "content": "I'll keep that private."}], scope=alice, session="standup")
    mem.remember([{"role": "user", "content": "The budget codeword for the merger is PELICANFALLS."},
                  {"role": "assistant", "content": "Understood."}], scope=tenant, session="standup")
    alices = mem.list(scope=alice, limit=100)
    assert alices and not [r for r in alices if "PELICANFALLS" in (r.context or "")]
    assert not mem.search("PELICANFALLS", scope=alice)
    tenants = [r for r in mem.list(scope=tenant, limit=100) if r.scope == tenant]
    assert not [r for r in tenants if "Harborview" in (r.context or "")]
    assert [r for r in tenants if "Thursdays" in (r.context or "")], "the tenant's own past is still its context"


def test_quota_holds_under_concurrent_saves_and_supersede(memory_factory) -> None:
    mem = memory_factory("none", tenant_quota=3)

    def save(i: int) -> bool:
        try:
            mem.add(f"note number {i} about topic {i * 7919}", scope=ACME)
            return True
        except QuotaExceededError:
            return False

    with ThreadPoolExecutor(max_workers=20) as pool:
        saved = sum(pool.map(save, range(20)))
    assert saved == 3 and mem.count(scope={"tenant": "acme"}) == 3
    first = mem.list(scope=ACME)[0]
    with pytest.raises(QuotaExceededError, match="quota of tenant 'acme' is full"):
        mem.supersede(first.id, "a replacement that would be a fourth record", scope=ACME)
    assert mem.count(scope={"tenant": "acme"}) == 3
    assert mem.with_settings(tenant_quota=None).add("now it fits", scope=ACME)


def test_concurrent_searches_count_every_recall(mem: Memory) -> None:
    rec = mem.add("The incident channel is #ops-war-room", scope=ACME)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: mem.search("incident channel", scope=ACME), range(40)))
    assert mem.get(rec.id, scope=ACME).access_count == 40


def test_redaction_config_edits_apply_to_add_in_a_long_lived_memory(mem: Memory, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "redact.json"
    monkeypatch.setenv("REMEM_REDACT_CONFIG", str(cfg))
    before = mem.add("internal ticket ACME-778899001122 is open", scope=ACME)
    assert "ACME-778899001122" in before.text
    cfg.write_text(json.dumps({"patterns": {"acme_ticket": r"ACME-\d{12}"}}))
    after = mem.add("internal ticket ACME-112233445566 is closed", scope=ACME)
    assert "ACME-112233445566" not in after.text and "[REDACTED:acme_ticket]" in after.text


def test_close_waits_for_background_captures(memory_factory) -> None:
    """Was: closing while an adapter's capture was in flight closed the shard under remember() and lost it."""
    mem = memory_factory("none")
    gate = threading.Event()

    class SlowCapture(BackgroundCapture):
        @staticmethod
        def _run(memory, messages, scope, session):  # noqa: ANN001, ANN205
            gate.wait(5)
            return memory.remember(messages, scope=scope, session=session)

    capture = SlowCapture()
    fut: Future = capture.submit(mem, [{"role": "user", "content": "We decided to use Postgres 16 for orders."},
                                       {"role": "assistant", "content": "Noted: Postgres 16 for orders."}], ACME)
    threading.Timer(0.3, gate.set).start()
    mem.close()
    assert fut.done() and fut.result() is not None
    with Memory(path=mem.backend.folder, embedder="none", service="off") as again:
        assert "Postgres 16" in again.context("which database for orders", scope=ACME)


def test_an_oversized_capture_is_refused_at_once_and_stores_nothing(mem: Memory) -> None:
    from remem.core.local import MAX_CAPTURE_CHARS

    huge = [{"role": "user", "content": "We use Postgres. " * (MAX_CAPTURE_CHARS // 16)}]
    with pytest.raises(ValueError, match="limit is"):
        mem.remember(huge, scope=ACME)
    assert mem.count(scope=ALL_TENANTS) == 0


def test_a_scope_label_that_holds_a_secret_is_refused_not_stored(mem: Memory, tmp_path: Path) -> None:
    """Scope labels are stored as given (they are how records are found), so one the redactor would rewrite is
    a clear error on every write path, and nothing of it reaches the store's files."""
    key = "sk-proj-Xq7vT2mLp9RwZ4kB8nYc3HdF6jGs1AeU5oIi0VbNtKrMx"
    leaky = Scope(tenant="acme", user=key)
    with pytest.raises(ValueError, match="user label looks like a secret"):
        mem.add("the deploy runs at six", scope=leaky)
    with pytest.raises(ValueError, match="user label looks like a secret"):
        mem.remember([{"role": "user", "content": "We deploy at six."}], scope=leaky, session="s1")
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text(json.dumps({"id": "0b5e3f7a-0000-4000-8000-000000000002", "text": "x",
                                   "scope": leaky.as_dict()}) + "\n")
    with pytest.raises(ValueError, match="user label looks like a secret"):
        mem.import_(crafted, scope={"tenant": "acme"})
    assert mem.count(scope={"tenant": "acme"}) == 0
    store = Path(mem.stats(scope=ALL_TENANTS).location)
    assert not [p for p in store.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]



def test_a_label_is_matched_exactly_never_trimmed_into_another_users_scope(mem: Memory) -> None:
    """Review: labels were trimmed with str.strip(), so "alice\u00a0" or " alice " read and forgot alice's."""
    alice = Scope(tenant="acme", user="alice")
    mem.add("alice's bank PIN hint is the dog's name", scope=alice)
    for look_alike in ("alice\u00a0", " alice ", "alice\u3000", "alice\x1f"):
        other = {"tenant": "acme", "user": look_alike}
        assert mem.search("PIN hint", scope=other) == []
        assert mem.forget(scope=other, dry_run=False).count == 0
    assert [h.record.text for h in mem.search("PIN hint", scope=alice)] == ["alice's bank PIN hint is the dog's name"]
    project = Scope(tenant="/home/dana/My Project ")  # a folder whose name ends in a space is a project too
    mem.add("the project's own note", scope=project)
    assert [r.text for r in mem.list(scope=project)] == ["the project's own note"]
    assert mem.list(scope=Scope(tenant="/home/dana/My Project")) == []
