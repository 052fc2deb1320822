"""How many idle or slow connections one worker process holds while ``/healthz`` still answers.

Runs ``mns-gateway serve`` (one worker process) and opens connections to it in steps, half of
them slow (a request head that stops halfway: ``GET /healthz HTTP/1.1``, ``Host``, ``X-slow: ``)
and half idle (one request answered, then kept alive). After each step it probes ``/healthz``
the way a kubelet does, on a new connection each time, and prints the probe latency and how many
of the opened connections the worker still holds.

Two runs:

* **hold**: ``MNS_GATEWAY_MAX_CONNECTIONS`` and ``MNS_GATEWAY_HEADER_TIMEOUT`` set high, so
  nothing is given up: the largest step at which every probe answered within 100 ms is the
  number of connections a worker holds and stays responsive (printed last, as ``HOLD``).
* **flood**: the defaults (``MNS_GATEWAY_MAX_CONNECTIONS``, ``MNS_GATEWAY_HEADER_TIMEOUT``) and up
  to three times as many connections as the cap: probes must still answer, the worker giving up
  the longest-waiting connections. "open" counts what the client side sees open, which includes
  connections the kernel has queued for the worker to accept.

    .venv/bin/python bench/connections.py [--steps 1000,2000,4000,8000] [--probes 20]

The bench process opens every client connection itself, so the steps are bounded by its
open-file limit (``ulimit -n``) as well as the server's.
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import time
from collections.abc import Iterator

from harness import running_gateway, worker_rss_mb

from gateway.config.settings import Settings
from gateway.serving.http1.peer import client_closed

SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-slow: "
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
PROBE_BUDGET_MS = 100.0


def open_connections(port: int, count: int) -> Iterator[socket.socket]:
    """``count`` connections, alternately slow (half a head) and idle (answered, kept alive)."""
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if i % 2:
            sock.sendall(SLOW_HEAD)
        else:
            sock.sendall(HEALTHZ)
            sock.recv(4096)
        yield sock


def probe(port: int) -> float:
    """Milliseconds for a /healthz on a new connection (connect included); inf if unanswered."""
    started = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(HEALTHZ)
            if not sock.recv(4096).startswith(b"HTTP/1.1 200"):
                return float("inf")
    except OSError:
        return float("inf")
    return (time.perf_counter() - started) * 1000


def still_held(sockets: list[socket.socket]) -> int:
    return sum(not client_closed(sock) for sock in sockets)


def probe_figures(port: int, probes: int) -> tuple[float, float, float]:
    times = sorted(probe(port) for _ in range(probes))
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    return statistics.median(times), p99, times[-1]


def run(steps: list[int], probes: int, env: dict[str, str], label: str) -> int:
    """Print one line per step; the largest step whose probes all met the budget."""
    print(f"\n{label}")
    print(
        f"{'opened':>8}{'open':>8}{'probe p50 ms':>14}{'p99 ms':>9}{'max ms':>9}{'worker MB':>11}"
    )
    best = 0
    sockets: list[socket.socket] = []
    with running_gateway("serve", 1, MNS_GATEWAY_DELIVERY_THREADS="0", **env) as server:
        client = server.client
        try:
            for step in steps:
                sockets += open_connections(client.port, step - len(sockets))
                time.sleep(0.5)  # let the worker take in the last of them
                p50, p99, worst = probe_figures(client.port, probes)
                held = still_held(sockets)
                rss = worker_rss_mb(client.port)
                print(
                    f"{step:>8}{held:>8}{p50:>14.1f}{p99:>9.1f}{worst:>9.1f}{rss:>11.0f}",
                    flush=True,
                )
                if worst <= PROBE_BUDGET_MS:
                    best = max(best, held)
        finally:
            for sock in sockets:
                sock.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", default="1000,2000,4000,8000")
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    steps = [int(step) for step in args.steps.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"open-file limit {hard} (was {soft}); probes on new connections, budget 100 ms")
    hold = run(
        steps,
        args.probes,
        {"MNS_GATEWAY_MAX_CONNECTIONS": str(max(steps) + 100), "MNS_GATEWAY_HEADER_TIMEOUT": "600"},
        "hold: no cap in reach, no head deadline in reach",
    )
    defaults = Settings()
    cap = defaults.max_connections
    run(
        [cap, 2 * cap, 3 * cap],
        args.probes,
        {},
        f"flood: the defaults (cap {cap}, head deadline {defaults.header_timeout:g} s)",
    )
    print(f"\nHOLD {hold} connections held by one worker with every /healthz probe <= 100 ms")


if __name__ == "__main__":
    main()
