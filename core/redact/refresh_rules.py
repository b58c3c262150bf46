"""Refresh the vendored gitleaks rule set: ``python -m remem.core.redact.refresh_rules --from PATH``.

PATH is a gitleaks ``config/gitleaks.toml``, a gitleaks work tree, or a gitleaks git directory (a bare clone;
``--rev`` picks the commit). The TOML is copied byte for byte with gitleaks' licence, and the version/commit
it came from is recorded in ``data/gitleaks.source.json``; the translation to Python ``re`` is stored in
``data/gitleaks.translated.json`` (keyed by the TOML's hash, so hooks skip ~20 ms of parsing). It reports how
many rules translate (untranslatable ones are skipped at run time, never a crash). Only data is copied, never gitleaks' code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).with_name("data")
TOML_NAME = "gitleaks.toml"
LICENSE_NAME = "gitleaks.LICENSE"
SOURCE_NAME = "gitleaks.source.json"


def _git(args: list[str], cwd: Path | None = None, git_dir: Path | None = None) -> str:
    cmd = ["git"] + ([f"--git-dir={git_dir}"] if git_dir else []) + args
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _from_git(git_dir: Path | None, work: Path | None, rev: str, out: Path) -> dict[str, str]:
    """Export the TOML and LICENSE at ``rev`` into ``out``; returns commit facts."""
    def git(*a: str) -> str:
        return _git(list(a), cwd=work, git_dir=git_dir)

    commit = git("rev-parse", f"{rev}^{{commit}}")
    (out / TOML_NAME).write_bytes(subprocess.run(
        ["git"] + ([f"--git-dir={git_dir}"] if git_dir else []) + ["show", f"{commit}:config/gitleaks.toml"],
        cwd=work, check=True, capture_output=True).stdout)
    (out / LICENSE_NAME).write_text(git("show", f"{commit}:LICENSE") + "\n", "utf-8")
    try:
        describe = git("describe", "--tags", commit)
        tag = git("describe", "--tags", "--abbrev=0", commit)
        same = not git("diff", "--name-only", tag, commit, "--", "config/gitleaks.toml")
    except subprocess.CalledProcessError:
        describe, tag, same = commit[:12], "", False
    return {"commit": commit, "describe": describe, "version": tag if same else describe,
            "committed": git("log", "-1", "--format=%cI", commit)}


def refresh(source: Path, rev: str = "HEAD", version: str | None = None, dest: Path = DATA) -> dict[str, object]:
    """Vendor the rule set found at ``source`` into ``dest``; returns the recorded source facts."""
    source = source.expanduser().resolve()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        facts: dict[str, object]
        if source.is_file():
            shutil.copyfile(source, out / TOML_NAME)
            lic = next((p / "LICENSE" for p in source.parents if (p / "LICENSE").is_file()), None)
            if lic is None:
                raise SystemExit(f"no gitleaks LICENSE found above {source}; refusing to vendor without it")
            shutil.copyfile(lic, out / LICENSE_NAME)
            facts = {"commit": "", "describe": "", "version": version or "unknown", "committed": ""}
        elif (source / "config" / TOML_NAME).is_file() and (source / ".git").exists():
            facts = dict(_from_git(None, source, rev, out))
        elif (source / "HEAD").is_file() and (source / "objects").is_dir():
            facts = dict(_from_git(source, None, rev, out))
        else:
            raise SystemExit(f"{source} is neither a gitleaks.toml, a gitleaks work tree nor a git directory")
        if version:
            facts["version"] = version
        raw = (out / TOML_NAME).read_bytes()
        from .gitleaks import CACHE_PATH, build_rules, cache_key, parse_toml, translate_data

        data = parse_toml(raw)
        translated = translate_data(data)
        rules, skipped = build_rules(translated), translated["skipped"]
        facts.update(project="gitleaks", file="config/gitleaks.toml", licence="MIT",
                     sha256=hashlib.sha256(raw).hexdigest(), rules=len(data.get("rules", [])))
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / TOML_NAME, dest / TOML_NAME)
        shutil.copyfile(out / LICENSE_NAME, dest / LICENSE_NAME)
        (dest / SOURCE_NAME).write_text(json.dumps(facts, indent=2) + "\n", "utf-8")
        (dest / CACHE_PATH.name).write_text(json.dumps({**cache_key(raw), **translated}) + "\n", "utf-8")
    facts["translated"] = len(rules)
    facts["skipped"] = skipped
    return facts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m remem.core.redact.refresh_rules", description=__doc__)
    p.add_argument("--from", dest="source", required=True, type=Path,
                   help="gitleaks.toml, a gitleaks work tree, or a gitleaks git directory")
    p.add_argument("--rev", default="HEAD", help="commit or tag to take from a git checkout (default HEAD)")
    p.add_argument("--version", help="version label to record (default: from git describe)")
    args = p.parse_args(argv)
    facts = refresh(args.source, args.rev, args.version)
    skipped = facts.pop("skipped")
    print(json.dumps(facts, indent=2))
    print(f"skipped {len(skipped)} rule(s) (kept out at run time):")  # type: ignore[arg-type]
    for rule_id, why in sorted(skipped.items()):  # type: ignore[union-attr]
        print(f"  {rule_id}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
