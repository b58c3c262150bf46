"""Recall, false positives and speed of :mod:`remem.core.redact`, per rule source, against the old rules.

Run: ``python -m remem.bench.bench_redact [-v] [--baseline-rev REV]``.

Corpus: gitleaks' own per-rule test cases (``bench/data/gitleaks_cases.json``, extracted from the gitleaks
sources the vendored rule set comes from) plus remem's labelled corpus (:mod:`remem.bench.redaction_corpus`:
secrets where they leak, chat phrasings, PII, and look-alikes that must stay). A positive is a hit when every
labelled secret is gone (or, for a gitleaks case without a labelled secret, when anything was redacted); a
negative that changes at all is a false positive.

Configurations, all measured in this process: each rule source alone (``gitleaks``: the vendored rule set;
``overlay``: remem's own rules and entropy check; ``pii``), everything together (``full``), and the old
hand-written rules (``old``), loaded from git at ``--baseline-rev`` (the last commit before gitleaks was
vendored) into a temporary package.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

from remem.bench.redaction_corpus import Sample, build_corpus, gitleaks_corpus
from remem.core.redact import gitleaks
from remem.core.redact.redactor import Redactor

BASELINE_REV = "957a244"  # core/redact before the gitleaks rule set: 49 hand-written secret kinds
ROOT = Path(__file__).resolve().parents[1]

_TYPICAL_PROMPT = (
    "User: I'm getting a 401 from our API when calling it from the worker. Here's the code:\n\n"
    "```python\nimport os, requests\n\nAPI_URL = os.environ.get(\"API_URL\", \"https://api.acme.io/v2\")\n"
    "token = os.environ[\"ACME_TOKEN\"]\n\ndef fetch(item_id: str) -> dict:\n"
    "    headers = {\"Authorization\": f\"Bearer {token}\", \"Accept\": \"application/json\"}\n"
    "    resp = requests.get(f\"{API_URL}/items/{item_id}\", headers=headers, timeout=10)\n"
    "    resp.raise_for_status()\n    return resp.json()\n```\n"
    "and the .env has ACME_TOKEN=Zq8rT2vL9mN4pX7wK1sD3fG6hJ0yB5cE and API_URL=https://api.acme.io/v2.\n"
    "Logs: 2024-05-01 12:00:03 ERROR worker-3 request_id=550e8400-e29b-41d4-a716-446655440000 status=401\n"
    "I already tried rotating the key and restarting the pod (commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f).\n"
    "Assistant: The token is read at import time, so the worker keeps the old value until restart.\n"
) * 3


# ------------------------------------------------------------------------------------------ configurations
def load_baseline(rev: str) -> Any | None:
    """The redactor module as it was at ``rev`` (its rules.py and redactor.py), or None without git history."""
    try:
        files = {name: subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:core/redact/{name}"], check=True,
                                      capture_output=True, text=True).stdout for name in ("rules.py", "redactor.py")}
    except (OSError, subprocess.CalledProcessError):
        return None
    root = tempfile.mkdtemp(prefix="remem-redact-baseline-")
    atexit.register(shutil.rmtree, root, True)
    pkg = Path(root) / "_redact_baseline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(text)
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module("_redact_baseline.redactor")


def configurations(baseline: Any | None) -> dict[str, Callable[[bool], Any]]:
    """name -> factory(pii) of a redactor; the factories are cached so each is built once."""
    cache: dict[tuple[str, bool], Any] = {}
    specs: dict[str, Callable[[bool], Any]] = {
        "gitleaks": lambda pii: Redactor(pii=False, sources=("gitleaks",)),
        "overlay": lambda pii: Redactor(pii=False, sources=("overlay",)),
        "pii": lambda pii: Redactor(pii=pii, sources=("pii",)),
        "full": lambda pii: Redactor(pii=pii),
    }
    if baseline is not None:
        specs = {"old": lambda pii: baseline.Redactor(pii=pii), **specs}

    def cached(name: str) -> Callable[[bool], Any]:
        def get(pii: bool) -> Any:
            key = (name, pii)
            if key not in cache:
                cache[key] = specs[name](pii)
            return cache[key]
        return get

    return {name: cached(name) for name in specs}


# ------------------------------------------------------------------------------------------ scoring
def section(s: Sample) -> str:
    if s.group == "gitleaks":
        return "gitleaks cases (TP)"
    if s.group == "gitleaks_fp":
        return "gitleaks cases (FP)"
    if not s.positive:
        return "ours: PII look-alikes" if s.pii else "ours: look-alikes"
    if s.pii:
        return "ours: PII"
    return "ours: chat phrasings" if s.group == "chat" else "ours: secrets"


def is_hit(s: Sample, text_out: str, changed: bool) -> bool:
    if s.unlabelled:
        return changed
    return all(sec not in text_out for sec in s.secrets)


def score(corpus: list[Sample], configs: dict[str, Callable[[bool], Any]]) -> dict[str, dict[str, list[int]]]:
    """section -> config -> [hits or false positives, samples]."""
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for s in corpus:
        sec = section(s)
        for name, make in configs.items():
            res = make(s.pii).redact(s.text)
            cell = table[sec][name]
            cell[1] += 1
            if s.positive:
                cell[0] += is_hit(s, res.text, res.changed)
            else:
                cell[0] += res.changed
    return table


def fp_sources(corpus: list[Sample], full: Callable[[bool], Redactor]) -> tuple[Counter, list[str]]:
    """Which source's rule fired on each negative the full configuration changed."""
    by: Counter = Counter()
    examples: list[str] = []
    for s in corpus:
        if s.positive:
            continue
        found = full(s.pii).findings(s.text)
        for f in found:
            by[f.source] += 1
        if found:
            examples.append(f"{s.group}/{s.label} [{', '.join(sorted({f.rule for f in found}))}]: {s.text[:100]!r}")
    return by, examples


def misses(corpus: list[Sample], full: Callable[[bool], Redactor]) -> list[str]:
    out = []
    for s in corpus:
        if s.positive:
            res = full(s.pii).redact(s.text)
            if not is_hit(s, res.text, res.changed):
                out.append(f"{s.group}/{s.label}: {s.text[:100]!r} -> {res.text[:100]!r}")
    return out


# ------------------------------------------------------------------------------------------ speed
# CPU time of this process, not wall time: the bench machine is shared, and a descheduled process would show
# other people's work as redaction latency (for CPU-bound code on an idle machine the two are the same).
_clock = time.process_time


def _latencies(r: Any, text: str, n: int) -> tuple[float, float]:
    r.redact(text)
    lat = []
    for _ in range(n):
        t0 = _clock()
        r.redact(text)
        lat.append(_clock() - t0)
    lat.sort()
    return statistics.median(lat) * 1e6, lat[int(0.95 * (n - 1))] * 1e6


def _dense_prompt(texts: list[str]) -> str:
    buf, size = [], 0
    for t in texts[::7]:
        buf.append(t)
        size += len(t) + 1
        if size >= 2048:
            break
    return "\n".join(buf)[:2048]


def _throughput(r: Any, texts: list[str], runs: int = 5) -> float:
    mb = sum(len(t.encode()) for t in texts) / 1e6
    times = []
    for _ in range(runs):
        t0 = _clock()
        for t in texts:
            r.redact(t)
        times.append(_clock() - t0)
    return mb / statistics.median(times)


def cold_start_ms(baseline_dir: str | None) -> float:
    """A fresh interpreter: import, build Redactor(pii=True), redact one log line (what a hook process pays)."""
    code = ("import sys, time; t = time.process_time(); "
            + (f"sys.path.insert(0, {baseline_dir!r}); from _redact_baseline.redactor import Redactor; "
               if baseline_dir else "from remem.core.redact.redactor import Redactor; ")
            + "Redactor(pii=True).redact('remember failed: ConnectionError for http://localhost:8080/v1'); "
            + "print((time.process_time() - t) * 1000)")
    runs = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
            for _ in range(5)]
    return statistics.median(runs)


def speed(configs: dict[str, Callable[[bool], Any]], texts: list[str], baseline: Any | None,
          n: int = 300) -> list[tuple[str, str, str, str, str]]:
    dense = _dense_prompt(texts)
    rows = []
    for name in [c for c in ("old", "full", "gitleaks", "overlay") if c in configs]:
        r = configs[name](False)
        t50, t95 = _latencies(r, _TYPICAL_PROMPT[:2048], n)
        d50, d95 = _latencies(r, dense, n)
        mbs = _throughput(r, texts)
        cold = ""
        if name in ("old", "full"):
            base_dir = str(Path(baseline.__file__).parents[1]) if name == "old" and baseline else None
            cold = f"{cold_start_ms(base_dir):.0f}"
        rows.append((name, f"{t50:.0f} / {t95:.0f}", f"{d50:.0f} / {d95:.0f}", f"{mbs:.2f}", cold))
    return rows


# ------------------------------------------------------------------------------------------ report
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m remem.bench.bench_redact", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="list misses and false positives")
    p.add_argument("--baseline-rev", default=BASELINE_REV)
    args = p.parse_args(argv)

    ruleset = gitleaks.load()
    ours = build_corpus()
    theirs, dropped = gitleaks_corpus({r.rule_id for r in ruleset.rules})
    corpus = theirs + ours
    baseline = load_baseline(args.baseline_rev)
    configs = configurations(baseline)
    names = list(configs)

    print(f"rule set: gitleaks {ruleset.version} (commit {str(ruleset.source.get('commit', ''))[:12]}): "
          f"{len(ruleset.rules)} rules translated to Python re, {len(ruleset.skipped)} skipped")
    for rule_id, why in sorted(ruleset.skipped.items()):
        print(f"  skipped {rule_id}: {why}")
    overlay = Redactor(sources=("overlay",)).rules
    pii_rules = Redactor(pii=True, sources=("pii",)).rules
    print(f"overlay: {len(overlay)} remem rules + entropy check; pii: {len(pii_rules)} rules")
    print(f"corpus: {len(theirs)} gitleaks cases ({dropped['cases_of_rules_not_loaded']} cases of "
          f"{dropped['rules_not_loaded']} rules not loaded left out, {dropped['fp_that_are_other_rules_tp']} "
          f"false positives that are another rule's true positive left out) + {len(ours)} remem samples")
    if baseline is None:
        print(f"old rules: git revision {args.baseline_rev} not available, no baseline column")

    table = score(corpus, configs)
    print("\nrecall (hits / positives) and false positives (changed / negatives), per rule source")
    head = f"{'section':<26}{'n':>6}" + "".join(f"{n:>14}" for n in names)
    print(head)
    order = ["gitleaks cases (TP)", "ours: secrets", "ours: chat phrasings", "ours: PII",
             "gitleaks cases (FP)", "ours: look-alikes", "ours: PII look-alikes"]
    for sec in order:
        if sec not in table:
            continue
        cells = table[sec]
        n = next(iter(cells.values()))[1]
        kind = "FP" if "FP" in sec or "look-alikes" in sec else "recall"
        row = "".join(f"{cells[c][0] / n:>13.1%} " if kind == "recall" else f"{cells[c][0]:>13d} " for c in names)
        print(f"{sec + (' (FP)' if kind == 'FP' and '(FP)' not in sec else ''):<26}{n:>6}{row}")

    full = configs["full"]
    by, fp_examples = fp_sources(corpus, full)
    print(f"\nfull configuration: findings on negatives by source: {dict(by) or 'none'}")

    print("\nspeed (CPU time, same process: µs p50 / p95 per 2 KB; MB/s over the whole corpus; cold: a fresh "
          "interpreter's import + build + first redact, ms)")
    print(f"{'config':<10}{'2 KB typical prompt':>22}{'2 KB secret-dense':>22}{'MB/s':>8}{'cold':>8}")
    for name, typ, dense, mbs, cold in speed(configs, [s.text for s in corpus], baseline):
        print(f"{name:<10}{typ:>22}{dense:>22}{mbs:>8}{cold:>8}")

    if args.verbose:
        print("\nmisses (full):")
        for line in misses(corpus, full):
            print("  " + line)
        print("\nfalse positives (full):")
        for line in fp_examples:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
