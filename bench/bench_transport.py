"""What the transport's security checks cost: a warm call over the Unix socket (with the peer-uid check) vs over
loopback TCP (with the challenge-response), the checks alone, and the permission walk at store open.

    python -m remem.bench.bench_transport [--n 1000] [--calls 300]

Prints one table: medians (p50) and p95 in milliseconds, and each figure's ratio to the warm Unix ``get``.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

WORDS = "deploy database python tea invoice kubernetes alice meeting release budget postgres cache".split()


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000, help="memories in the store")
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args(argv)

    from remem import Memory, Scope
    from remem.core.config import loose_paths
    from remem.core.service.client import stop_service
    from remem.core.service.peer import ClientHandshake, _proof, peer_uid

    rnd = random.Random(7)
    scope = Scope(tenant="bench")
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        with Memory(path=path, embedder="none", service="off") as mem:
            recs = mem.add_many([{"text": f"note {i}: " + " ".join(rnd.sample(WORDS, 6))} for i in range(args.n)],
                                scope=scope, dedupe=False)
        rid = recs[-1].id
        files = sum(len(f) + len(d) for _, d, f in os.walk(path))
        rows.append((f"permission walk of the store ({files} entries)", _timed(lambda: loose_paths(path), 50)))
        for kind in ("unix", "tcp"):
            os.environ["REMEM_SERVICE_TRANSPORT"] = kind
            remote = Memory(path=path, embedder="none", service="require")
            remote.get(rid)
            rows.append((f"get() via the service, {kind} ({'peer uid' if kind == 'unix' else 'handshake'})",
                         _timed(lambda: remote.get(rid), args.calls)))
            remote.close()
            stop_service(path)
        os.environ.pop("REMEM_SERVICE_TRANSPORT", None)
    a, b = socket.socketpair(socket.AF_UNIX)
    rows.append(("peer-uid check alone (getsockopt)", _timed(lambda: peer_uid(a), args.calls * 10)))
    a.close()
    b.close()
    secret = "ab" * 32

    def handshake_math() -> None:  # what the client computes: a nonce, check one HMAC, make another
        hs = ClientHandshake(secret, 4242)
        hs.hello()
        reply = ('{"nonce": "%s", "proof": "%s"}\n' % ("cd" * 16, _proof(secret, "service", hs.nonce, "cd" * 16, 4242)))
        hs.answer(reply.encode())

    rows.append(("handshake nonces + HMACs alone (both sides' math)", _timed(handshake_math, args.calls * 10)))

    base = statistics.median(next(xs for name, xs in rows if "unix" in name))
    print(f"remem transport bench: {args.n} memories, {args.calls} calls, {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}")
    print(f"| {'measurement':<52} | {'n':>5} | {'p50 ms':>8} | {'p95 ms':>8} | {'p50 / unix get':>14} |")
    print(f"|{'-' * 54}|{'-' * 7}|{'-' * 10}|{'-' * 10}|{'-' * 16}|")
    for name, xs in rows:
        med = statistics.median(xs)
        print(f"| {name:<52} | {len(xs):>5} | {med:>8.3f} | {_pct(xs, 0.95):>8.3f} | {med / base:>13.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
