"""The launcher as the /remem:memory command runs it: Claude Code writes ${CLAUDE_PLUGIN_DATA} into the command's
step but does not set it, and drops the whole command when the step fails. So ``remem-hook slash`` finds the
plugin's venv where Claude Code keeps it, says what is wrong with real paths, and always exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remem.hooks.bootstrap import fix_shebangs
from test_hooks import LAUNCHER, ROOT
from test_hooks_durable import plugin_stamp

SYSTEM_PATH = "/usr/bin:/bin"


def fake_venv(data: Path, stamp: str) -> Path:
    """A plugin venv whose python is this one (a script: a symlink would lose this venv's site-packages)."""
    bin_dir = data / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "python").chmod(0o755)
    (data / "venv" / "remem-stamp").write_text(stamp)
    return data


def slash(home: Path, *args: str, data_arg: str = "") -> subprocess.CompletedProcess:
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "REMEM_HOME": str(home / ".remem"), "REMEM_EMBEDDER": "none",
           "REMEM_SERVICE": "off", "LANG": "C.UTF-8"}
    return subprocess.run(["/bin/sh", str(LAUNCHER), "slash", data_arg, *args], capture_output=True, text=True,
                          env=env, cwd=home, timeout=120)


def test_the_slash_step_finds_the_venv_built_from_this_plugin_folder_without_the_variable(tmp_path: Path) -> None:
    plugins = tmp_path / ".claude" / "plugins" / "data"
    fake_venv(plugins / "remem-other", "1 2|3 4")             # another marketplace's remem, another version
    ours = fake_venv(plugins / "remem-remem", plugin_stamp())
    proc = slash(tmp_path, "status")
    assert proc.returncode == 0 and proc.stderr == ""
    assert f"plugin data: {ours} (setup:" in proc.stdout and "memory scope: the global space" in proc.stdout
    # ${CLAUDE_PLUGIN_DATA} as Claude Code writes it in: that folder, whatever the stamps say
    other = slash(tmp_path, "status", data_arg=str(plugins / "remem-other"))
    assert f"plugin data: {plugins / 'remem-other'}" in other.stdout
    # not substituted (an older Claude Code): found as above
    literal = slash(tmp_path, "status", data_arg="${CLAUDE_PLUGIN_DATA}")
    assert f"plugin data: {ours}" in literal.stdout
    listed = slash(tmp_path, "list")
    assert listed.returncode == 0 and "No memories in" in listed.stdout
    # what the user typed arrives as one string (commands/memory.md quotes $ARGUMENTS), apostrophes and all
    saved = slash(tmp_path, "save We don't use tabs, always 4 spaces --kind preference")
    assert "Saved memory" in saved.stdout, saved.stdout
    found = slash(tmp_path, 'search "4 spaces" tabs')
    assert "We don't use tabs, always 4 spaces" in found.stdout and "preference" in found.stdout


def test_the_slash_step_says_what_is_wrong_on_stdout_and_exits_zero(tmp_path: Path) -> None:
    nothing = slash(tmp_path, "list")
    assert nothing.returncode == 0 and nothing.stderr == ""
    assert "no Python environment with remem found" in nothing.stdout and "pipx install remem" in nothing.stdout
    data = tmp_path / ".claude" / "plugins" / "data" / "remem-remem"
    (data / "venv" / "bin").mkdir(parents=True)              # a setup under way: no stamp yet
    (data / "setup.json").write_text("{}")
    setting_up = slash(tmp_path, "list", data_arg=str(data))
    assert setting_up.returncode == 0
    assert f"still setting up its Python environment in {data}/venv" in setting_up.stdout
    assert f"{data}/setup.log" in setting_up.stdout
    bad = slash(tmp_path, "frobnicate", data_arg=str(fake_venv(tmp_path / "d", plugin_stamp())))
    assert bad.returncode == 0 and "invalid choice" in bad.stdout  # argparse's message reaches the user


def test_scripts_of_a_venv_built_elsewhere_and_renamed_are_pointed_at_the_venv(tmp_path: Path) -> None:
    venv = tmp_path / "data" / "venv"
    (venv / "bin").mkdir(parents=True)
    old = tmp_path / "data" / "venv.new" / "bin"
    scripts = {"remem": f"#!{old}/python\nprint('remem')\n", "pip": f"#!{old}/python3 -E\nprint('pip')\n",
               "activate": "# not a script with #!\n", "other": "#!/usr/bin/env python3\nprint(1)\n"}
    for name, text in scripts.items():
        (venv / "bin" / name).write_text(text)
        (venv / "bin" / name).chmod(0o755)
    assert fix_shebangs(venv) == 2
    assert (venv / "bin" / "remem").read_text() == f"#!{venv}/bin/python\nprint('remem')\n"
    assert (venv / "bin" / "pip").read_text().startswith(f"#!{venv}/bin/python3 -E\n")
    assert (venv / "bin" / "other").read_text() == scripts["other"]
    assert os.access(venv / "bin" / "remem", os.X_OK)
    assert ROOT.exists()


def test_a_failed_setup_is_told_to_the_person_once_with_its_log_and_never_to_the_model(tmp_path: Path) -> None:
    import json

    data = tmp_path / "data"
    data.mkdir()
    (data / "setup.json").write_text(json.dumps({"stamp": plugin_stamp(), "status": "failed", "pid": None,
                                                 "said": []}))
    env = {"PATH": SYSTEM_PATH, "HOME": str(tmp_path), "REMEM_HOME": str(tmp_path / ".remem"),
           "CLAUDE_PLUGIN_DATA": str(data), "CLAUDE_PLUGIN_ROOT": str(ROOT)}
    payload = json.dumps({"session_id": "s1", "prompt": "hi", "cwd": str(tmp_path)}).encode()
    outs = [subprocess.run([sys.executable, str(ROOT / "hooks" / "bootstrap.py"), "ensure", "--stamp", plugin_stamp(),
                            "--event", "UserPromptSubmit"], input=payload, capture_output=True, env=env, timeout=60)
            for _ in range(2)]
    said = json.loads(outs[0].stdout)
    assert set(said) == {"systemMessage"}  # no hookSpecificOutput: nothing reaches the model
    assert "could not set up" in said["systemMessage"] and str(data / "setup.log") in said["systemMessage"]
    assert outs[1].stdout == b""  # once


def test_a_python3_with_remem_is_asked_once_an_hour_not_at_every_hook(tmp_path: Path) -> None:
    """remem installed into the python3 on PATH (no plugin venv): the launcher remembers that python3 has remem
    (its path, 0600, in the plugin's data folder), so a hook does not pay one more Python start to ask."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = {"PATH": f"{bin_dir}:{SYSTEM_PATH}", "HOME": str(tmp_path), "REMEM_HOME": str(tmp_path / ".remem"),
           "REMEM_EMBEDDER": "none", "REMEM_SERVICE": "off", "CLAUDE_PLUGIN_DATA": str(data),
           "CLAUDE_PLUGIN_ROOT": str(ROOT), "REMEM_HOOK_DETACH": "0"}
    payload = b'{"session_id": "s1", "prompt": "hello there, which database do we use?", "cwd": "/"}'
    for _ in range(2):
        proc = subprocess.run([str(LAUNCHER), "UserPromptSubmit"], input=payload, capture_output=True, env=env,
                              timeout=120)
        assert proc.returncode == 0 and b"not installed" not in proc.stderr, proc.stderr
    known = data / "python3-remem"
    assert known.read_text() == f"{bin_dir / 'python3'}\n" and oct(known.stat().st_mode & 0o777) == oct(0o600)
    assert not (data / "venv").exists()  # python3's remem is used: no setup started
