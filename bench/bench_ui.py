"""Page loads of the memory inspector (`remem ui`) at 1k, 10k and 100k memories, the entity pages included.

    python -m remem.bench.bench_ui [--sizes 1000,10000,100000] [--requests 40]

Each page is fetched over real HTTP (uvicorn on 127.0.0.1, signed in with the token cookie) from a store with
embedder "none". Prints p50 and p95 in milliseconds per page and size, and the ratio of the page's p50 to the
one store call under it made in the same process (the baseline: what the page costs beyond Qdrant).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

os.environ.setdefault("REMEM_SERVICE", "off")

WORDS = ("deploy database python tea coffee invoice kubernetes alice bob meeting friday release budget migration "
         "postgres redis latency cache retry timeout vacation berlin tokyo laptop keyboard checkout stripe").split()
KINDS = ("fact", "preference", "decision", "event", "lesson", "summary", "note")
FIRST = ("Dana", "Priya", "Marta", "Tomasz", "Aiko", "Samuel", "Lena", "Omar", "Greta", "Jonas", "Ines", "Ravi",
         "Chloe", "Mateo", "Yara", "Felix", "Nadia", "Hugo", "Elif", "Bruno")
LAST = ("Whitfield", "Raman", "Lindqvist", "Nowak", "Tanaka", "Okafor", "Fischer", "Haddad", "Berg", "Moreau",
        "Costa", "Iyer", "Dubois", "Silva", "Rahimi")
SERVICES = ("ingest", "billing", "search", "export", "mailer", "scheduler", "gateway", "indexer", "auth", "thumbnail")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _items(rnd: random.Random, start: int, n: int, now: float) -> list[dict[str, Any]]:
    from remem import Scope

    out = []
    for i in range(start, start + n):
        tenant = "bench" if rnd.random() < 0.8 else f"other-{rnd.randrange(20)}"
        named = ""  # entities, as memories name them: a person, a service, a host (some of each, not every time)
        if rnd.random() < 0.6:
            named += f" {rnd.choice(FIRST)} {rnd.choice(LAST)} said so."
        if rnd.random() < 0.4:
            named += f" The {rnd.choice(SERVICES)} worker runs on db{rnd.randrange(40)}.internal."
        out.append({"text": f"note {i}: " + " ".join(rnd.sample(WORDS, 8)) + named, "kind": rnd.choice(KINDS),
                    "tags": [rnd.choice(WORDS)], "scope": Scope(tenant=tenant, session=f"s{rnd.randrange(300)}"),
                    "created_at": now - rnd.uniform(0, 365) * 86400, "importance": rnd.randint(1, 10)})
    return out


def _time(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--requests", type=int, default=40, help="requests per page and size")
    args = p.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))

    import httpx

    from remem import Memory, Scope
    from remem.ui import Inspector

    rnd = random.Random(7)
    now = time.time()
    scope = Scope(tenant="bench")
    rows: list[tuple[int, str, float, float, float | None]] = []
    scans: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["REMEM_HOME"] = tmp
        mem = Memory(path=Path(tmp) / "store", embedder="none", reinforce=False)
        have = 0
        for size in sizes:
            t0 = time.perf_counter()
            mem.add_many(_items(rnd, have, size - have, now), dedupe=False, batch_size=1024)
            have = size
            print(f"# {size:,} memories stored in {time.perf_counter() - t0:.1f} s", flush=True)
            with Inspector(mem, export_dir=Path(tmp) / "exports") as ins:
                jobs = ins.app.state.inspector.jobs
                jobs.summary.get()
                jobs.join(300)
                scans[size] = jobs.summary.seconds * 1000
                client = httpx.Client(base_url=ins.base, timeout=30)
                client.get(f"/?token={ins.guard.token}", follow_redirects=False)
                ids = [r.id for r in mem.list(scope=scope, limit=500)]
                oldest = mem.list(scope=scope, limit=1, until=now - 360 * 86400)
                deep = oldest[0].created_at.isoformat() if oldest else ""
                mid = (_dt.datetime.fromtimestamp(now - 180 * 86400, tz=_dt.timezone.utc)).date().isoformat()
                listed = mem.entities(scope=scope, limit=10_000)
                print(f"# {len(listed):,} entities in the bench tenant", flush=True)
                top = listed[0]  # the hub: the most mentioned entity

                def uncached(url: str) -> str:  # the list as a first visit gets it: counted, not kept from before
                    ins.app.state.inspector.entity_lists.clear()
                    return url

                one = mem.entities(scope=scope, kind="person", query="Whitfield", limit=1)[0]
                hub_url = f"/entity?t=bench&name={quote(top.name)}&kind={top.kind}"
                one_url = f"/entity?t=bench&name={quote(one.name)}&kind={one.kind}"
                pages: list[tuple[str, Callable[[], str], Callable[[], Any] | None]] = [
                    ("tenants (cached counts)", lambda: "/", None),
                    ("list, first page", lambda: "/memories?t=bench",
                     lambda: (mem.list(scope=scope, limit=51), mem.count(scope=scope))),
                    ("list, ~page 1600 (cursor)", lambda: f"/memories?t=bench&before={deep}&page=1600",
                     lambda: (mem.list(scope=scope, limit=51, until=deep), mem.count(scope=scope))),
                    ("list, kind + tag", lambda: "/memories?t=bench&kind=decision&tag=redis",
                     lambda: (mem.list(scope=scope, limit=51, kind="decision", tags=["redis"]),
                              mem.count(scope=scope, kind="decision", tags=["redis"]))),
                    ("list, time range", lambda: f"/memories?t=bench&since={mid}&until={mid}",
                     lambda: mem.list(scope=scope, limit=51, since=mid)),
                    ("list, text filter", lambda: "/memories?t=bench&q=postgres+migration+timeout",
                     lambda: mem.search("postgres migration timeout", scope=scope, limit=100)),
                    ("memory detail", lambda: f"/memory/{rnd.choice(ids)}", lambda: mem.get(rnd.choice(ids), scope=scope)),
                    ("recall preview", lambda: "/search?t=bench&q=which+database+migration+broke+the+cache",
                     lambda: mem.search("which database migration broke the cache", scope=scope, limit=20,
                                        token_budget=1600, reinforce=False)),
                    ("entities, first page", lambda: uncached("/entities?t=bench"),
                     lambda: mem.entities(scope=scope, limit=5000)),
                    ("entities, next page (kept)", lambda: "/entities?t=bench&page=2", None),
                    ("entities, find + kind", lambda: uncached("/entities?t=bench&q=whitf&kind=person"),
                     lambda: mem.entities(scope=scope, query="whitf", kind="person", limit=5000)),
                    ("entity page, one person", lambda: one_url, lambda: mem.about(one.name, scope=scope)),
                    ("entity page, the hub", lambda: hub_url, lambda: mem.about(top.name, scope=scope)),
                ]
                for name, url, core in pages:
                    for _ in range(3):  # warm up
                        client.get(url())
                    status = set()

                    def fetch() -> None:
                        resp = client.get(url())
                        status.add(resp.status_code)

                    took = _time(fetch, args.requests)
                    if status != {200}:
                        raise SystemExit(f"{name}: HTTP {status}")
                    base = _pct(_time(core, args.requests), 0.5) if core else None
                    rows.append((size, name, _pct(took, 0.5), _pct(took, 0.95), base))
                client.close()
        mem.close()
    print()
    print(f"{'memories':>9}  {'page':<28} {'p50 ms':>8} {'p95 ms':>8} {'store call p50':>15} {'page/store':>10}")
    for size, name, p50, p95, base in rows:
        ratio = f"{p50 / base:.1f}x" if base else "-"
        base_s = f"{base:.2f}" if base is not None else "-"
        print(f"{size:>9,}  {name:<28} {p50:>8.1f} {p95:>8.1f} {base_s:>15} {ratio:>10}")
    print()
    for size, ms in scans.items():
        print(f"background scan for tenant counts + chart at {size:,}: {ms:,.0f} ms (off the request path)")
    worst = max(p95 for size, _, _, p95, _ in rows if size == sizes[-1])
    print(f"worst page p95 at {sizes[-1]:,} memories: {worst:.1f} ms (target < 150 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
