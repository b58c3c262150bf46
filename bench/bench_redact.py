"""Precision/recall/throughput benchmark for :mod:`remem.core.redact.redactor`.

Run: ``python -m remem.bench.bench_redact``. A positive sample counts as a hit
only if *every* labelled secret is gone; any change to a negative, or loss of a
``keep`` substring (variable name, host, user) in a positive, is a false positive.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

from remem.bench.redaction_corpus import Sample, build_corpus
from remem.core.redact.redactor import Redactor

# Which reporting group each emitted kind belongs to (for false-positive attribution).
_KIND_GROUP = {
    "private_key": "key_material", "gcp_service_account_key": "key_material", "jwt": "key_material",
    "url_password": "url_credentials",
    "bearer_token": "auth_headers", "basic_auth": "auth_headers", "authorization": "auth_headers",
    "password": "assignments", "secret": "assignments",
    "high_entropy": "entropy",
    "email": "pii", "phone": "pii", "credit_card": "pii", "iban": "pii", "us_ssn": "pii", "uk_nino": "pii",
    "es_dni": "pii", "it_codice_fiscale": "pii", "in_aadhaar": "pii",
}


def kind_group(kind: str) -> str:
    return _KIND_GROUP.get(kind, "provider_keys")


@dataclass
class Tally:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def evaluate(corpus: list[Sample]) -> tuple[dict[str, Tally], Tally]:
    """Score every sample with the redactor configured as the sample needs."""
    redactors = {False: Redactor(pii=False), True: Redactor(pii=True)}
    groups: dict[str, Tally] = defaultdict(Tally)
    overall = Tally()
    for s in corpus:
        res = redactors[s.pii].redact(s.text)
        if s.positive:
            hit = all(sec not in res.text for sec in s.secrets)
            kept = all(k in res.text for k in s.keep)
            g = groups[s.group]
            if hit:
                g.tp += 1
                overall.tp += 1
            else:
                g.fn += 1
                overall.fn += 1
                g.misses.append(f"{s.label}: {s.text[:110]!r} -> {res.text[:110]!r}")
            if not kept:
                g.fp += 1
                overall.fp += 1
                g.false_alarms.append(f"{s.label} lost keep: {res.text[:110]!r}")
        elif res.changed:
            overall.fp += 1
            for grp in {kind_group(k) for k in res.counts}:
                groups[grp].fp += 1
                groups[grp].false_alarms.append(f"{s.label}: {s.text[:90]!r} -> {res.text[:110]!r}")
    return dict(groups), overall


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


def _latency_us(r: Redactor, text: str, n: int = 300) -> float:
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        r.redact(text)
        lat.append(time.perf_counter() - t0)
    return statistics.median(lat) * 1e6


def throughput(corpus: list[Sample], runs: int = 7) -> tuple[float, float, float, float]:
    """(KB/s default, KB/s pii=True, µs per typical 2 KB prompt, µs per secret-dense 2 KB)."""
    texts = [s.text for s in corpus]
    kb = sum(len(t.encode()) for t in texts) / 1024
    out = []
    for pii in (False, True):
        r = Redactor(pii=pii)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            for t in texts:
                r.redact(t)
            times.append(time.perf_counter() - t0)
        out.append(kb / statistics.median(times))
    r = Redactor()
    typical = _latency_us(r, _TYPICAL_PROMPT[:2048])
    dense = _latency_us(r, _two_kb_prompt(texts))
    return out[0], out[1], typical, dense


def _two_kb_prompt(texts: list[str]) -> str:
    """A realistic mixed prompt: concatenated corpus snippets up to ~2 KB."""
    buf, size = [], 0
    for t in texts[::7]:
        buf.append(t)
        size += len(t) + 1
        if size >= 2048:
            break
    return "\n".join(buf)[:2048]


def main(argv: list[str] | None = None) -> int:
    verbose = "-v" in (argv if argv is not None else sys.argv[1:])
    corpus = build_corpus()
    n_pos = sum(s.positive for s in corpus)
    print(f"corpus: {len(corpus)} samples ({n_pos} positive, {len(corpus) - n_pos} negative)")
    groups, overall = evaluate(corpus)
    print(f"\n{'group':<18}{'TP':>6}{'FN':>6}{'FP':>6}{'precision':>11}{'recall':>9}")
    for name in sorted(groups):
        t = groups[name]
        print(f"{name:<18}{t.tp:>6}{t.fn:>6}{t.fp:>6}{t.precision:>11.3f}{t.recall:>9.3f}")
    print(f"{'OVERALL':<18}{overall.tp:>6}{overall.fn:>6}{overall.fp:>6}{overall.precision:>11.3f}{overall.recall:>9.3f}")
    kbps, kbps_pii, typical, dense = throughput(corpus)
    print(f"\nthroughput (corpus, median of 7): {kbps:,.0f} KB/s (pii=False), {kbps_pii:,.0f} KB/s (pii=True)")
    print(f"2 KB prompt latency (median): typical chat+code {typical:.0f} µs; secret-dense corpus mix {dense:.0f} µs")
    if verbose:
        for name, t in sorted(groups.items()):
            for line in t.misses + t.false_alarms:
                print(f"  [{name}] {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
