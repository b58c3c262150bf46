"""Extract gitleaks' own per-rule test cases (true and false positives) as data for the redaction bench.

    python -m remem.bench.gitleaks_cases --from /path/to/gitleaks [--rev HEAD]

Each gitleaks rule is written in Go under ``cmd/generate/config/rules/*.go`` together with the strings it
must find (``tps``) and must not (``fps``). This reads those files as text and evaluates the small subset of
Go they use to build the strings (literals, ``+``, ``[]string{...}``, ``append``, ``fmt.Sprintf`` and the
generator helpers ``utils.GenerateSampleSecret(s)``, ``secrets.NewSecret(regex)``, ...). Random secrets are
drawn from the regex with a seeded generator, so the output is reproducible. Cases it cannot evaluate are
counted, not guessed. Nothing of gitleaks' code is kept: the output is the list of strings, as JSON data,
written to ``bench/data/gitleaks_cases.json`` next to the commit it came from.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from .go_eval import Evaluator, Val, go_string, tokens
from .regex_sample import RegexSampler

OUT = Path(__file__).with_name("data") / "gitleaks_cases.json"
RULES_DIR = "cmd/generate/config/rules"


def _generic_stopwords() -> tuple[str, ...]:
    global _STOPWORDS
    if _STOPWORDS is None:
        from remem.core.redact.gitleaks import TOML_PATH, parse_toml

        spec = next(r for r in parse_toml(TOML_PATH.read_bytes())["rules"] if r["id"] == "generic-api-key")
        _STOPWORDS = tuple(w.lower() for a in spec.get("allowlists", ()) for w in a.get("stopwords", ()))
    return _STOPWORDS


_STOPWORDS: tuple[str, ...] | None = None


def _functions(src: str) -> tuple[list[list[tuple[str, str]]], list[tuple[str, str]]]:
    """(function bodies, the file's top-level tokens: package-level ``var`` declarations)."""
    toks = tokens(src)
    funcs, top, i = [], [], 0
    while i < len(toks):
        if toks[i][1] == "func":
            j = i
            while j < len(toks) and toks[j][1] != "{":
                j += 1
            depth, k = 0, j
            while k < len(toks):
                if toks[k][1] == "{":
                    depth += 1
                elif toks[k][1] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            funcs.append(toks[j + 1 : k])
            i = k + 1
            continue
        top.append(toks[i])
        i += 1
    return funcs, top


def _rule_id(body: list[tuple[str, str]]) -> str | None:
    for a, b, c in zip(body, body[1:], body[2:]):
        if a[1] == "RuleID" and b[1] == ":" and c[0] == "str":
            return go_string(c[1])
    return None


def extract(files: dict[str, str], seed: int = 20240501) -> dict[str, Any]:
    """{rule id: {"tp": [{"text", "secret"}], "fp": [text]}} plus counts of what could not be evaluated."""
    cases: dict[str, Any] = {}
    unevaluated = 0
    for name in sorted(files):
        bodies, top = _functions(files[name])
        package = Evaluator(top, RegexSampler(random.Random(f"{seed}:{name}")))
        package.run()
        for body in bodies:
            rule_id = _rule_id(body)
            if not rule_id:
                continue
            func = Evaluator(body, RegexSampler(random.Random(f"{seed}:{rule_id}")), _generic_stopwords)
            func.vars.update(package.vars)
            res = func.run()
            if "tps" not in res:
                unevaluated += 1
                continue
            entry = cases.setdefault(rule_id, {"tp": [], "fp": []})
            for key, out in (("tps", "tp"), ("fps", "fp")):
                values = res.get(key) or []
                if not isinstance(values, list):
                    values = [values]
                for v in values:
                    if not isinstance(v, Val):
                        unevaluated += 1
                        continue
                    entry[out].append({"text": v.text, "secret": v.secret} if out == "tp" else v.text)
    return {"cases": cases, "unevaluated": unevaluated}


def _read_rules(source: Path, rev: str) -> tuple[dict[str, str], dict[str, str]]:
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        git = ["git", f"--git-dir={source}"]
    elif (source / ".git").exists():
        git = ["git", "-C", str(source)]
    else:
        raise SystemExit(f"{source} is not a gitleaks git checkout")
    commit = subprocess.run(git + ["rev-parse", f"{rev}^{{commit}}"], check=True, capture_output=True,
                            text=True).stdout.strip()
    names = subprocess.run(git + ["ls-tree", "--name-only", f"{commit}:{RULES_DIR}"], check=True,
                           capture_output=True, text=True).stdout.split()
    files = {n: subprocess.run(git + ["show", f"{commit}:{RULES_DIR}/{n}"], check=True, capture_output=True,
                               text=True).stdout for n in names if n.endswith(".go")}
    describe = subprocess.run(git + ["describe", "--tags", commit], capture_output=True, text=True).stdout.strip()
    return files, {"commit": commit, "describe": describe}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m remem.bench.gitleaks_cases", description=__doc__)
    p.add_argument("--from", dest="source", required=True, type=Path, help="gitleaks work tree or git directory")
    p.add_argument("--rev", default="HEAD")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    files, facts = _read_rules(args.source.expanduser().resolve(), args.rev)
    data = extract(files)
    n_tp = sum(len(c["tp"]) for c in data["cases"].values())
    n_fp = sum(len(c["fp"]) for c in data["cases"].values())
    out = {"source": {"project": "gitleaks", "licence": "MIT", "path": RULES_DIR, **facts},
           "rules": len(data["cases"]), "tp": n_tp, "fp": n_fp, "unevaluated": data["unevaluated"],
           "cases": data["cases"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"{args.out}: {len(data['cases'])} rules, {n_tp} true and {n_fp} false positives, "
          f"{data['unevaluated']} cases not evaluated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
