"""The API refuses what it should: kinds are a closed set unless the store is opened with more, a missing id is
a NotFoundError for forget as for get, and the CLI explains every option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem import Memory, NotFoundError, Scope
from remem.cli import build_parser
from remem.core.types import KINDS

ACME = Scope(tenant="acme")


def test_an_unknown_kind_is_refused_everywhere_and_the_error_names_the_kinds(mem: Memory, tmp_path: Path) -> None:
    rec = mem.add("We deploy with fly.io", scope=ACME, kind="decision")
    calls = [lambda: mem.add("Tabs, never spaces", scope=ACME, kind="preferance"),
             lambda: mem.update(rec.id, kind="decison", scope=ACME),
             lambda: mem.supersede(rec.id, "We deploy with k8s", scope=ACME, kind="Decision"),
             lambda: mem.search("deploy", scope=ACME, kind="preferance"),
             lambda: mem.list(scope=ACME, kind=["decision", "preferance"]),
             lambda: mem.count(scope=ACME, kind="preferance")]
    for call in calls:
        with pytest.raises(ValueError) as refused:
            call()
        assert all(kind in str(refused.value) for kind in KINDS) and "Memory(kinds=" in str(refused.value)
    assert [r.id for r in mem.list(scope=ACME)] == [rec.id]  # nothing was written, nothing was lost
    assert mem.get(rec.id, scope=ACME).kind == "decision"
    export = tmp_path / "with-a-custom-kind.jsonl"
    mem.export(export, scope=ACME)
    lines = export.read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "id": "0b5e3f7a-0000-4000-8000-00000000000a", "kind": "runbook"})
    export.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="unknown kind 'runbook'"):
        mem.import_(export, scope=ACME)


def test_a_store_opened_with_extra_kinds_takes_them(memory_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memory_factory("none", kinds=["runbook"])
    assert mem.add("Restart the queue with systemctl restart q", scope=ACME, kind="runbook").kind == "runbook"
    assert [r.kind for r in mem.list(scope=ACME, kind="runbook")] == ["runbook"]
    with pytest.raises(ValueError, match="runbook"):  # the error lists the extra kinds too
        mem.add("x", scope=ACME, kind="playbook")
    monkeypatch.setenv("REMEM_KINDS", "playbook, runbook")
    env_mem = memory_factory("none")
    assert env_mem.add("Page the on-call first", scope=ACME, kind="playbook").kind == "playbook"
    with pytest.raises(ValueError, match="lowercase"):
        memory_factory("none", kinds=["Run Book"])


def test_extra_kinds_reach_the_shared_service(store_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.core.service.client import stop_service

    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    path = store_factory("none")
    try:
        with Memory(path, embedder="none", service="require", kinds=["runbook"]) as mem:
            assert mem.remote and mem.add("Rotate the logs weekly", scope=ACME, kind="runbook").kind == "runbook"
            with Memory(path, embedder="none", service="require") as plain:  # same service, default kinds
                with pytest.raises(ValueError, match="unknown kind 'runbook'"):
                    plain.add("Rotate the certs monthly", scope=ACME, kind="runbook")
    finally:
        stop_service(path)


def test_forget_of_a_missing_id_answers_like_get(any_mem: Memory) -> None:
    rec = any_mem.add("a note to drop", scope=ACME)
    assert any_mem.forget(rec.id, scope=ACME) is True
    for call in (any_mem.get, any_mem.forget):
        with pytest.raises(NotFoundError, match=rec.id):
            call(rec.id, scope=ACME)


def test_every_cli_option_has_help_and_kind_lists_the_kinds() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    missing = [f"{name} {'/'.join(action.option_strings) or action.dest}"
               for name, sub in commands.items() for action in sub._actions
               if action.help is None and action.dest != "help"]
    assert missing == []
    for name in ("add", "search", "list", "forget"):
        text = commands[name].format_help()
        assert all(kind in text for kind in KINDS), name
