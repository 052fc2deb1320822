"""Endpoint health: one failing endpoint among ten subscriptions, with the circuit breaker on
and off (docs/delivery.md#endpoint-health).

A topic with 10 subscriptions: 9 to a healthy local endpoint (``bench/endpoint.py``), one to an
endpoint that (a) refuses connections, (b) answers 500 or (c) hangs until the push timeout, and a
published backlog of ``--messages`` (written straight into the store). Two ``mns-gateway
worker`` processes drain the healthy subscriptions' pushes; then the attempts made to the failing
endpoint are counted in the store. Printed per failure, one row per backend: the attempts to the
failing endpoint with the breaker off and on (and how many fewer), and the healthy
subscriptions' rate beside it against their rate in a run without the failing subscription,
with the workers' CPU per healthy push.

    .venv/bin/python bench/endpoint_health.py [--messages 1000] [--workers 2]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import http.server
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backends import Backend, add_database_arguments, backends
from fanout import drain, endpoint, prepare_backlog
from harness import free_port

from gateway.composition import open_store
from gateway.config.settings import Settings

FAILURES = ("refused", "500", "hang")


@contextmanager
def answering_500() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def failing(kind: str) -> Iterator[str]:
    if kind == "refused":
        yield f"http://127.0.0.1:{free_port()}/down"
    elif kind == "500":
        with answering_500() as port:
            yield f"http://127.0.0.1:{port}/down"
    else:
        with endpoint(hang=True) as port:
            yield f"http://127.0.0.1:{port}/down"


def attempts_to(data_dir: Path, url: str | None, subscription: str) -> int:
    """Attempts recorded for ``subscription``'s deliveries still pending or dead-lettered."""
    store = open_store(Settings(data_dir=data_dir, database_url=url or ""))
    try:
        return store.database.read(
            lambda c: c.execute(
                "SELECT COUNT(*) AS n FROM delivery_attempts a JOIN deliveries d"
                " ON d.id = a.delivery_id WHERE d.subscription_name = ?",
                (subscription,),
            ).fetchone()["n"]
        )
    finally:
        store.close()


def run(backend: Backend, messages: int, workers: int, failure: str | None, breaker: bool) -> dict:  # type: ignore[type-arg]
    """Drain the 9 healthy subscriptions' backlog (beside a failing one unless ``failure`` is
    None); their rate and CPU, and the attempts made to the failing one meanwhile."""
    with endpoint() as port, tempfile.TemporaryDirectory() as tmp:
        routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(9)]
        with failing(failure or "refused") as down:
            if failure is not None:
                routes.append(down)  # subscription s009
            url = backend.new_database()
            prepare_backlog(Path(tmp), url, routes, messages)
            extra = {"MNS_GATEWAY_BREAKER": "1" if breaker else "0"}
            result = drain(Path(tmp), backend, url, workers, port, messages * 9, extra=extra)
            span = (result["last"] or 0) - (result["first"] or 0)
            result["rate"] = result["count"] / span if span > 0 else 0.0
            result["failing_attempts"] = (
                attempts_to(Path(tmp), url, "s009") if failure is not None else 0
            )
            return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            alone = run(backend, args.messages, args.workers, None, True)
            print(
                f"{backend.label}: 9 healthy subscriptions alone: {alone['rate']:.0f} pushes/s,"
                f" {alone['worker_cpu_ms']:.2f} ms worker CPU per push",
                flush=True,
            )
            for failure in FAILURES:
                off = run(backend, args.messages, args.workers, failure, False)
                on = run(backend, args.messages, args.workers, failure, True)
                fewer = 1 - on["failing_attempts"] / max(1, off["failing_attempts"])
                print(
                    f"  {failure:>7}: attempts to it {off['failing_attempts']} off,"
                    f" {on['failing_attempts']} on ({fewer:.1%} fewer); healthy"
                    f" {on['rate'] / alone['rate']:.0%} of alone with the breaker"
                    f" ({off['rate'] / alone['rate']:.0%} without), worker CPU per healthy push"
                    f" {on['worker_cpu_ms']:.2f} ms ({off['worker_cpu_ms']:.2f} without)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
