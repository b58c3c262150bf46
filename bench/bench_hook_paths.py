"""The prompt hook's wall time on every install path the launcher knows, against a warm service.

    python -m remem.bench.bench_hook_paths [--runs 40] [--memories 300]

The launcher (hooks/remem-hook) finds remem through ``$REMEM_PYTHON``, the plugin's venv in
``$CLAUDE_PLUGIN_DATA``, ``remem-hook`` on PATH (pipx / uv tool) or ``python3`` on PATH. Each path is set up here
with this Python's remem (the venv as a symlinked interpreter with the plugin's stamp, pipx as a ``remem-hook``
script whose ``#!`` names this Python, python3 as a script on PATH that runs it), and the same recall prompt is timed from
spawning the launcher to its exit, the paths in rotation so machine load hits all alike. The baseline of the same
run: the full hook in its own process (``REMEM_HOOK_THIN=0``), which is what the pipx path cost before it used the
thin client. CPU time (the hook's processes, from ``getrusage``) is the part machine load does not inflate.

``--profiles`` adds a profile prompt ("What do we know about the job queue?", :mod:`remem.hooks.profiles`) to
the rotation and the REMEM_PYTHON path once more with profiles off (``REMEM_HOOK_PROFILE=0``): the same run's
baseline of what asking for the profile costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from remem.bench.bench_hooks import LAUNCHER, PROMPTS, ROOT, pct, run_hook, seed


def plugin_stamp() -> str:
    script = ('printf \'%s|%s\' "$(printf \'%s\' "$1" | cksum)" '
              '"$(cat "$1/.claude-plugin/plugin.json" "$1/pyproject.toml" | cksum)"')
    return subprocess.run(["/bin/sh", "-c", script, "sh", str(ROOT)], capture_output=True, text=True,
                          check=True).stdout


def pipx_bin(folder: Path) -> Path:
    """A folder with ``remem-hook`` as pipx / uv tool install it: a script whose ``#!`` names the tool venv's
    python (here, this one)."""
    folder.mkdir(parents=True, exist_ok=True)
    hook = folder / "remem-hook"
    hook.write_text(f"#!{sys.executable}\nimport sys\nsys.path[:1] = []\nfrom remem.hooks.main import main\n"
                    "sys.exit(main())\n")
    hook.chmod(0o755)
    return folder


def paths(tmp: Path, base: dict[str, str]) -> dict[str, dict[str, str]]:
    """name -> the hook environment of that install path."""
    system = "/usr/bin:/bin"
    data = tmp / "plugin-data"
    (data / "venv" / "bin").mkdir(parents=True)
    (data / "venv" / "bin" / "python").symlink_to(sys.executable)
    (data / "venv" / "remem-stamp").write_text(plugin_stamp())
    tool = pipx_bin(tmp / "pipx-bin")
    (tmp / "data-no-venv").mkdir()  # the plugin's data folder of a user whose python3 has remem: no venv
    py3 = tmp / "python3-bin"
    py3.mkdir()
    (py3 / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')  # (a symlink would lose the venv)
    (py3 / "python3").chmod(0o755)
    bare = {k: v for k, v in base.items() if k not in ("REMEM_PYTHON", "CLAUDE_PLUGIN_DATA")}
    return {
        "REMEM_PYTHON": {**bare, "REMEM_PYTHON": sys.executable, "PATH": system},
        "plugin venv (CLAUDE_PLUGIN_DATA)": {**bare, "CLAUDE_PLUGIN_DATA": str(data), "PATH": system},
        "pipx / uv tool (remem-hook on PATH)": {**bare, "PATH": f"{tool}:{system}"},
        "python3 on PATH": {**bare, "PATH": f"{py3}:{system}", "CLAUDE_PLUGIN_DATA": str(tmp / "data-no-venv")},
        "baseline: full hook, own process": {**bare, "PATH": f"{tool}:{system}", "REMEM_HOOK_THIN": "0"},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--memories", type=int, default=300)
    ap.add_argument("--profiles", action="store_true", help="a profile prompt in the rotation, profiles off too")
    args = ap.parse_args(argv)
    prompts = [*PROMPTS, "What do we know about the job queue?"] if args.profiles else PROMPTS
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-paths-"))
    project = tmp / "project"
    (project / ".git").mkdir(parents=True)
    home = tmp / "home"
    seed(home, str(project), args.memories, "none")
    base = {**os.environ, "REMEM_HOME": str(home), "REMEM_EMBEDDER": "none", "REMEM_SERVICE": "auto",
            "REMEM_SERVICE_IDLE": "120", "CLAUDE_PLUGIN_ROOT": str(ROOT)}
    for key in ("REMEM_PATH", "REMEM_URL", "REMEM_HOOK_TENANT", "CLAUDE_PLUGIN_DATA"):
        base.pop(key, None)
    from remem.core.service.client import start_service, stop_service

    envs = paths(tmp, base)
    if args.profiles:
        envs["REMEM_PYTHON, profiles off (REMEM_HOOK_PROFILE=0)"] = {**envs["REMEM_PYTHON"], "REMEM_HOOK_PROFILE": "0"}
    times: dict[str, list[float]] = {name: [] for name in envs}
    cpus: dict[str, list[float]] = {name: [] for name in envs}
    injected = {name: 0 for name in envs}
    asking: dict[str, list[float]] = {name: [] for name in envs}  # the profile prompt's own runs (--profiles)
    try:
        start_service(home / "store", embedder="none")
        for name, env in envs.items():  # first contact
            run_hook("UserPromptSubmit", {"session_id": "warm", "cwd": str(project), "prompt": PROMPTS[0]}, env)
        for i in range(args.runs):
            for name, env in envs.items():
                payload = {"session_id": f"{name}-{i}", "transcript_path": "", "cwd": str(project),
                           "prompt": prompts[i % len(prompts)]}
                ms, cpu, proc = run_hook("UserPromptSubmit", payload, env)
                times[name].append(ms)
                cpus[name].append(cpu)
                if payload["prompt"] not in PROMPTS:
                    asking[name].append(ms)
                injected[name] += b"additionalContext" in proc.stdout
    finally:
        stop_service(home / "store")
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"prompt hook (warm recall, {args.memories} memories), launcher spawn to exit, {args.runs} runs per path "
          f"in rotation; cpus={os.cpu_count()}, load average={os.getloadavg()[0]:.1f}")
    print("| install path | wall p50 ms | wall p95 ms | CPU p50 ms | CPU p95 ms | injected |")
    print("|---|---|---|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {pct(values, .5):.1f} | {pct(values, .95):.1f} | {pct(cpus[name], .5):.1f} | "
              f"{pct(cpus[name], .95):.1f} | {injected[name]}/{len(values)} |")
    if args.profiles:
        print("\nthe profile prompt alone: | install path | wall p50 ms | wall p95 ms | runs |")
        for name, values in asking.items():
            print(f"| {name} | {pct(values, .5):.1f} | {pct(values, .95):.1f} | {len(values)} |")
    assert LAUNCHER.exists()
    return 0


if __name__ == "__main__":
    sys.exit(main())
