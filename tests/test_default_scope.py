"""One default scope for the CLI, the MCP server and the Claude Code hooks: the git repository of the folder
(every worktree and subfolder share it), else the global space; flags and variables override."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from remem import Memory, Scope
from remem.cli import main as cli
from remem.core.scope import ALL_TENANTS, default_scope, find_project

VARIABLES = ("REMEM_TENANT", "REMEM_PROJECT", "REMEM_USER", "REMEM_AGENT", "REMEM_HOOK_TENANT", "CLAUDE_PROJECT_DIR")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A real repository with a linked worktree (``git worktree add``), a subfolder, and a folder outside."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    main, outside = tmp_path / "app", tmp_path / "elsewhere"
    main.mkdir()
    outside.mkdir()
    git("init", "-q", cwd=main)
    git("commit", "-q", "--allow-empty", "-m", "first", cwd=main)
    git("worktree", "add", "-q", str(tmp_path / "app-feature"), cwd=main)
    (tmp_path / "app-feature" / "src" / "deep").mkdir(parents=True)
    return {"main": main.resolve(), "worktree": (tmp_path / "app-feature").resolve(),
            "sub": (tmp_path / "app-feature" / "src" / "deep").resolve(), "outside": outside.resolve()}


@pytest.fixture
def run(repo: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """The real ``remem`` CLI in-process, in a folder, on one embedded store."""
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REMEM_SERVICE", "off")
    monkeypatch.setenv("REMEM_EMBEDDER", "none")

    def call(where: Path, *args: str) -> str:
        monkeypatch.chdir(where)
        capsys.readouterr()
        assert cli([*args]) == 0, capsys.readouterr()
        return capsys.readouterr().out

    return call


def test_every_worktree_and_subfolder_of_a_repository_is_one_project(repo: dict[str, Path]) -> None:
    tenants = {name: find_project(path) for name, path in repo.items()}
    assert tenants["outside"] is None
    assert {p.tenant for name, p in tenants.items() if p} == {str(repo["main"])}  # type: ignore[union-attr]
    assert tenants["sub"].folder == repo["worktree"]  # type: ignore[union-attr]  # paths stay worktree-relative
    # a plain repository keeps the tenant it always had: its top folder
    assert default_scope(cwd=repo["main"] / ".git" / "..", env={}).scope == Scope(tenant=str(repo["main"]))


def test_flags_and_variables_override_in_the_documented_order(repo: dict[str, Path]) -> None:
    here = repo["sub"]
    assert default_scope(cwd=here, env={}).source == "project"
    assert default_scope(cwd=repo["outside"], env={}).scope == Scope()
    env = {"REMEM_PROJECT": "proj", "REMEM_TENANT": "acme", "REMEM_HOOK_TENANT": "hooked", "REMEM_USER": "ann"}
    assert default_scope(cwd=here, env=env).scope == Scope(tenant="acme", user="ann")
    assert default_scope(cwd=here, env=env, hook=True).scope.tenant == "hooked"  # type: ignore[union-attr]
    assert default_scope(cwd=here, env={"REMEM_PROJECT": "proj"}).scope.tenant == "proj"  # type: ignore[union-attr]
    assert default_scope(cwd=here, env=env, global_space=True).scope == Scope(user="ann")
    assert default_scope(cwd=here, env=env, tenant="cli").scope.tenant == "cli"  # type: ignore[union-attr]
    assert default_scope(cwd=here, env=env, all_tenants=True).scope is ALL_TENANTS
    with pytest.raises(ValueError, match="cannot be combined"):
        default_scope(tenant="x", all_tenants=True)


def test_the_cli_the_mcp_server_and_the_hooks_agree(repo: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.hooks.common import HookInput, project_tenant
    from remem.mcp_server import server_scope

    monkeypatch.chdir(repo["sub"])
    assert server_scope() == Scope(tenant=str(repo["main"]))
    assert project_tenant() == str(repo["main"]) == HookInput(cwd=str(repo["worktree"])).tenant
    assert HookInput(cwd=str(repo["sub"])).folder == repo["worktree"]
    monkeypatch.chdir(repo["outside"])
    assert server_scope() == Scope() and project_tenant() is None  # outside a repository: the global space
    monkeypatch.setenv("REMEM_HOOK_TENANT", "shared")
    assert project_tenant() == "shared" and server_scope() == Scope()  # the hooks' own override


def test_what_one_worktree_saves_the_others_list_and_outside_an_empty_list_says_where_it_is(
        repo: dict[str, Path], run) -> None:
    run(repo["sub"], "add", "We deploy with fly.io", "--kind", "decision")
    listed = json.loads(run(repo["main"], "list", "--json"))
    assert [r["text"] for r in listed["memories"]] == ["We deploy with fly.io"]
    assert listed["scope_read"] == {"tenant": str(repo["main"]), "user": None, "agent": None, "session": None,
                                    "source": "project"}
    shown = run(repo["worktree"], "list")
    assert shown.splitlines()[0] == f"scope: project {repo['main']}" and "fly.io" in shown
    empty = run(repo["outside"], "list")
    assert empty.splitlines()[0] == "scope: the global space (not in a git repository)"
    assert "no memories here; 1 in other scopes" in empty and "remem list --all-tenants" in empty
    assert json.loads(run(repo["outside"], "search", "deploy", "--json"))["elsewhere"] == 1
    assert "fly.io" in run(repo["outside"], "search", "deploy", "--all-tenants")
    doctor = json.loads(run(repo["sub"], "doctor", "--json"))
    assert doctor["project tenant here"] == str(repo["main"])


def test_retag_moves_a_worktree_keyed_tenant_into_its_project(repo: dict[str, Path], run, tmp_path: Path) -> None:
    with Memory(embedder="none") as mem:  # as an older remem stored it: the worktree's own folder
        old = Scope(tenant=str(repo["worktree"]), user="ann")
        first = mem.add("The staging database is pg-stage-2", scope=old, kind="fact")
        mem.supersede(first.id, "The staging database is pg-stage-3", scope=old)
    dry = json.loads(run(repo["sub"], "retag", "--worktrees", "--json"))
    assert dry == [{"from": str(repo["worktree"]), "to": str(repo["main"]), "count": 2, "dry_run": True}]
    run(repo["sub"], "retag", "--worktrees", "--yes")
    with Memory(embedder="none") as mem:
        moved = mem.list(scope=Scope(tenant=str(repo["main"])), include_superseded=True)
        assert sorted(r.text for r in moved) == ["The staging database is pg-stage-2",
                                                  "The staging database is pg-stage-3"]
        assert {r.scope.user for r in moved} == {"ann"} and mem.count(scope=Scope(tenant=str(repo["worktree"]))) == 0
        assert mem.get(first.id, scope=Scope(tenant=str(repo["main"]))).superseded_by  # the link survives
    assert not list((tmp_path / "home" / "retag").iterdir())  # the 0600 working copy is gone once it is done


def test_the_library_default_stays_the_global_space(repo: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.chdir(repo["sub"])
    monkeypatch.setenv("REMEM_TENANT", "acme")
    with Memory(tmp_path / "lib", embedder="none", service="off") as mem:
        rec = mem.add("a library call is not run in a project")
        assert rec.scope == Scope()
