"""What entities cost: write throughput (``add_many``, ``remember()``), search latency at 100k memories and store
size, each against the same run's baseline with entities off (``Memory(entities=False)``).

Three sides, in alternating order each round: entities **off**; entities on with linking **in the write**
(``linking.BACKGROUND = False``: how every write linked before, kept as the same run's "before"); entities on
with linking **after the write returns** (the shipped default). For the last, two rates: what the caller sees
(the calls return) and until every memory is linked (the calls, then ``settle``: what a read right after pays).

* ``add_many``: the synthetic memories of ``bench/latency.py`` (people, services, versions, files, ticket ids),
  in calls of 500, BM25 only; and a smaller run with the default local embedder.
* ``remember()``: the first LoCoMo conversations, session by session, keyless distiller.
* search: ``--size`` memories in 20 tenants loaded through the store's own write path (entities linked), one
  tenant per query, limit 10, query embedding excluded (BM25 only), entity recall on and off on the same store;
  after a first pass of other queries (a store just loaded is cold).
* store size: the folder on disk for the ``add_many`` stores, after ``compact()``.
* extraction: CPU time of one 32,000-character paste (the cost is linear in the text).

    python -m remem.bench.entities_cost [--n 3000] [--size 100000] [--convs 2] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remem import Memory, Scope

from .latency import OBJECTS, SUBJECTS, VERBS, fill, p, synth_text, time_searches
from .locomo_remember import DEFAULT_DATA, load_remember


def size_of(folder: Path) -> int:
    """Bytes on disk (Edge's files are sparse: their apparent size is what they may grow to)."""
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


WARM = "Dana Whitfield warmed up the ingest worker on db-prod-01."  # opens the entity shard, loads the lists


SIDES = ("off", "in the write", "after the write")


def _open(path: Path, side: str, embedder: str) -> Memory:
    from remem.core.entities import linking

    linking.BACKGROUND = side != "in the write"
    return Memory(path=path, embedder=embedder, service="off", entities=side != "off")


def _settle(mem: Memory) -> None:
    from remem.core.entities import linking

    linking.settle(mem._connection.local)


def add_many_rate(path: Path, n: int, side: str, embedder: str = "none") -> tuple[float, float, int, float, float]:
    """(memories/s as the calls return, memories/s until all are linked, bytes on disk after compact, CPU us a
    memory of the calling thread as the calls return, CPU us a memory of the whole process until linked). On a
    loaded machine the CPU times are the steadier measure: wall time there is mostly waiting for a core."""
    rng = random.Random(3)
    items = [{"text": synth_text(rng, i)} for i in range(n)]
    with _open(path, side, embedder) as mem:
        mem.add(WARM, scope=Scope(tenant="warm"))  # steady state: a store's first write opens it (not timed)
        _settle(mem)
        t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        for start in range(0, n, 500):
            mem.add_many(items[start:start + 500], scope=Scope(tenant=f"t{start % 7}"), dedupe=False)
        returned, cpu = time.perf_counter() - t0, time.thread_time() - c0
        _settle(mem)
        linked, cpu_linked = time.perf_counter() - t0, time.process_time() - p0
        mem.compact()
    return n / returned, n / linked, size_of(path), cpu / n * 1e6, cpu_linked / n * 1e6


def remember_seconds(path: Path, convs: list, side: str) -> tuple[float, float]:
    """(seconds until the calls return, seconds until every memory is linked)."""
    with _open(path, side, "none") as mem:
        mem.add(WARM, scope=Scope(tenant="warm"))
        _settle(mem)
        t0 = time.perf_counter()
        load_remember(mem, convs, "names", lambda *a: None, 0)
        returned = time.perf_counter() - t0
        _settle(mem)
        return returned, time.perf_counter() - t0


def search_times(mem: Memory, queries: list[str], rng: random.Random) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms of the calling thread) of each search: on a loaded machine the CPU time says what the
    search costs, the wall time mostly how long it waited for a core."""
    wall, cpu = [], []
    for q in queries:
        scope = Scope(tenant=f"t{rng.randrange(20)}")
        t0, c0 = time.perf_counter(), time.thread_time()
        mem.search(q, scope=scope, limit=10, reinforce=False)
        wall.append(1000 * (time.perf_counter() - t0))
        cpu.append(1000 * (time.thread_time() - c0))
    return wall, cpu


def paste_cpu(convs: list) -> float:
    from remem.core.entities.extract import extract

    said = [m["text"] for c in convs for k, v in c["conversation"].items() if k.startswith("session_")
            and isinstance(v, list) for m in v]
    text = (" ".join(said) or synth_text(random.Random(1), 1) * 300)[:32_000]
    t0 = time.process_time()
    extract(text)
    return time.process_time() - t0


def _cell(values: list[float], fmt: str = "{:.0f}", best: Any = max) -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(best(values))})" if values else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--convs", type=int, default=2)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the write measures")
    ap.add_argument("--dense-n", type=int, default=600, help="add_many with the default local embedder too")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo (locomo10.json)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    console = Console(width=160)
    convs = json.loads(args.data.read_text("utf-8"))[: args.convs] if args.data.exists() else []
    load = [os.getloadavg()[0]]
    rates: dict[str, list[float]] = {s: [] for s in SIDES}
    linked: dict[str, list[float]] = {s: [] for s in SIDES}
    dense: dict[str, list[float]] = {s: [] for s in SIDES}
    dense_linked: dict[str, list[float]] = {s: [] for s in SIDES}
    rem: dict[str, list[float]] = {s: [] for s in SIDES}
    rem_linked: dict[str, list[float]] = {s: [] for s in SIDES}
    cpus: dict[str, list[float]] = {s: [] for s in SIDES}
    cpus_linked: dict[str, list[float]] = {s: [] for s in SIDES}
    sizes: dict[str, int] = {}
    lat: dict[str, list[float]] = {"entity recall on": [], "entity recall off": []}
    lat_cpu: dict[str, list[float]] = {"entity recall on": [], "entity recall off": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):  # alternating, so load on the machine falls on every side
            order = SIDES[r % 3:] + SIDES[:r % 3]
            for side in (order if r % 2 == 0 else order[::-1]):
                tag = f"{r}{SIDES.index(side)}"
                rate, until, size, cpu, cpu_until = add_many_rate(Path(tmp) / f"a{tag}", args.n, side)
                cpus[side].append(cpu)
                cpus_linked[side].append(cpu_until)
                rates[side].append(rate)
                linked[side].append(until)
                sizes[side] = size
                if convs:
                    back, done = remember_seconds(Path(tmp) / f"r{tag}", convs, side)
                    rem[side].append(back)
                    rem_linked[side].append(done)
                if args.dense_n:
                    rate, until, _, _, _ = add_many_rate(Path(tmp) / f"d{tag}", args.dense_n, side, "auto")
                    dense[side].append(rate)
                    dense_linked[side].append(until)
            console.log(f"round {r + 1}: add_many " + " / ".join(f"{rates[s][-1]:.0f}" for s in SIDES) + " per s")
        load.append(os.getloadavg()[0])
        rng = random.Random(7)
        queries = [f"why did {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}?"
                   for _ in range(2 * args.queries)]
        if args.size:
            with _open(Path(tmp) / "big", "after the write", "none") as mem:
                pool = [(synth_text(random.Random(i), i), None) for i in range(2000)]
                secs = fill(mem, args.size, pool, random.Random(args.size))
                console.log(f"{args.size} memories loaded with entities in {secs:.0f} s")
                off = mem.with_settings(entity_recall=False)
                time_searches(mem, queries[args.queries:], random.Random(2))  # warm
                for r in range(2):
                    for name, m in ((("entity recall on", mem), ("entity recall off", off)) if r == 0 else
                                    (("entity recall off", off), ("entity recall on", mem))):
                        wall, cpu = search_times(m, queries[:args.queries], random.Random(1))
                        lat[name] += wall
                        lat_cpu[name] += cpu
        load.append(os.getloadavg()[0])
    paste = paste_cpu(convs)
    t = Table(title=f"entities: cost against the same run's baseline (entities off); medians of {args.rounds} "
                    f"alternating rounds (best round); load average {' / '.join(f'{x:.1f}' for x in load)}")
    for col in ("measure", *SIDES, "in the write / off", "after the write / off"):
        t.add_column(col, justify="right")

    def ratio(values: dict[str, list[float]], side: str, higher_better: bool = True) -> str:
        if not values[side] or not values["off"]:
            return "-"
        med = statistics.median(values[side]) / statistics.median(values["off"])
        pick = max if higher_better else min
        best = pick(values[side]) / pick(values["off"])
        return f"{med:.2f} ({best:.2f})"

    def row(label: str, values: dict[str, list[float]], fmt: str = "{:.0f}", higher_better: bool = True) -> None:
        best = max if higher_better else min
        t.add_row(label, *(_cell(values[s], fmt, best) for s in SIDES), ratio(values, "in the write", higher_better),
                  ratio(values, "after the write", higher_better))

    row(f"add_many memories/s, BM25 only ({args.n:,}): calls return", rates)
    row("  the same, until every memory is linked", linked)
    row("  CPU us a memory, calling thread, as the calls return", cpus, "{:.0f}", False)
    row("  CPU us a memory, whole process, until every memory is linked", cpus_linked, "{:.0f}", False)
    if args.dense_n:
        row(f"add_many memories/s, default local embedder ({args.dense_n}): calls return", dense)
        row("  the same, until every memory is linked", dense_linked)
    if convs:
        row(f"remember() s, {len(convs)} LoCoMo conversations: calls return", rem, "{:.2f}", False)
        row("  the same, until every memory is linked", rem_linked, "{:.2f}", False)
    size_row = {s: [sizes[s] / 1e6] for s in SIDES if s in sizes}
    row(f"store size MB after compact ({args.n:,} memories)", size_row, "{:.1f}", False)
    console.print(t)
    if lat["entity recall on"]:
        on, offl = lat["entity recall on"], lat["entity recall off"]
        s = Table(title=f"search at {args.size:,} memories (BM25, query embedding excluded), ms")
        for col in ("", "entity recall off", "entity recall on", "on / off"):
            s.add_column(col, justify="right")
        s.add_row("p50", f"{statistics.median(offl):.2f}", f"{statistics.median(on):.2f}",
                  f"{statistics.median(on) / statistics.median(offl):.2f}")
        s.add_row("p95", f"{p(offl, 0.95):.2f}", f"{p(on, 0.95):.2f}", f"{p(on, 0.95) / p(offl, 0.95):.2f}")
        con, coff = lat_cpu["entity recall on"], lat_cpu["entity recall off"]
        s.add_row("CPU p50", f"{statistics.median(coff):.2f}", f"{statistics.median(con):.2f}",
                  f"{statistics.median(con) / statistics.median(coff):.2f}")
        s.add_row("CPU p95", f"{p(coff, 0.95):.2f}", f"{p(con, 0.95):.2f}", f"{p(con, 0.95) / p(coff, 0.95):.2f}")
        console.print(s)
    console.print(f"extraction of one 32,000-character paste: {paste * 1000:.0f} ms CPU")
    if args.json:
        args.json.write_text(json.dumps({"add_many": rates, "add_many_linked": linked, "cpu": cpus, "cpu_linked": cpus_linked, "add_many_dense": dense,
                                         "add_many_dense_linked": dense_linked, "remember": rem,
                                         "remember_linked": rem_linked, "sizes": sizes, "latency": lat, "latency_cpu": lat_cpu,
                                         "load": load, "paste_cpu_s": paste}, default=str))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("REMEM_SERVICE", "off")
    raise SystemExit(main())
