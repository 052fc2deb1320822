"""Receiver throughput under gunicorn: verified pushes vs. the same app without verification.

Run: ``.venv/bin/python bench/verification.py [--seconds 3] [--rounds 5] [--workers 2]`` (~45 s).

What it does, all on 127.0.0.1:

1. Serves a throwaway signing certificate from a local HTTP server that counts its GETs.
2. Pre-signs an XML push (2048-bit key, like our gateway's) whose certificate URL points there.
3. Starts two gunicorn servers (``--workers 2``, sync workers, so the kernel spreads
   connections evenly): one with the ``MNSReceiver`` blueprint, and one with the same
   blueprint whose ``verify`` does nothing, so the difference is verification alone.
4. Loads them in alternating rounds, so background load on a shared machine hits both alike,
   with ``wrk`` when installed (``apt-get install -y wrk``), otherwise (or with
   ``--python-clients``) with several Python client processes; the report says which.
5. Runs a short third server with ``--preload`` and ``prefetch_certificate`` at startup, to show
   the certificate fetched once for the whole server rather than once per worker.

Prints requests/s, latency percentiles and the worker CPU time per request of each app, the
verified/unverified ratio of both (CPU time is the steadier figure when other processes compete
for the cores), and the certificate fetches. Target: verification costs under 20% of
throughput; one fetch per URL.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# Run as a script, this file's folder leads sys.path and this very file would shadow the
# `receiver` package; the repository root has to come first.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flask import Flask

from receiver import MNSReceiver, Notification, SignedPush
from receiver.testing import SignedRequest, SigningIdentity, sign_notification

ROOT = Path(__file__).resolve().parents[1]
CERT_PATH = "/certs/bench.pem"
TARGET_COST = 0.20
PYTHON_CLIENTS = 3


# ---------------------------------------------------------------- the app gunicorn serves


def accept(notification: Notification) -> None:
    """The handler: as cheap as possible, so the bench measures the receiver, not the work."""


class UnverifiedReceiver(MNSReceiver):
    """The baseline: the same blueprint, body reading, parsing and dispatch, minus verify."""

    def verify(self, push: SignedPush) -> None:
        pass


def create_app() -> Flask:
    """Gunicorn entry point; ``BENCH_MODE`` picks the verified or the unverified receiver."""
    cert_url = os.environ["BENCH_CERT_URL"]
    receiver_class = UnverifiedReceiver if os.environ["BENCH_MODE"] == "unverified" else MNSReceiver
    receiver = receiver_class(allowed_cert_url_prefixes=[cert_url.removesuffix(CERT_PATH) + "/"])
    receiver.handler()(accept)
    if os.environ.get("BENCH_PREFETCH") == "1":
        receiver.prefetch_certificate(cert_url)
    app = Flask(__name__)
    receiver.init_app(app)
    return app


# ---------------------------------------------------------------- certificate server


class CertificateServer:
    """Serves one PEM on 127.0.0.1 and counts how often it was fetched."""

    def __init__(self) -> None:
        self.pem = b""
        self.fetches = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with lock:
                    outer.fetches += 1
                body = outer.pem if self.path == CERT_PATH else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{CERT_PATH}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# ---------------------------------------------------------------- gunicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Server:
    port: int
    pid: int

    def worker_cpu_seconds(self) -> float:
        """User + system CPU time of the worker processes so far (Linux /proc)."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        ticks = 0
        for child in children:
            fields = Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")


@contextmanager
def gunicorn(mode: str, cert_url: str, workers: int, *, preload: bool = False) -> Iterator[Server]:
    """A gunicorn server for ``mode``, on a free port, stopped (and waited for) on exit."""
    port = free_port()
    env = {**os.environ, "BENCH_MODE": mode, "BENCH_CERT_URL": cert_url,
           "BENCH_PREFETCH": "1" if preload else "0"}  # fmt: skip
    command = [
        sys.executable, "-m", "gunicorn", "--chdir", str(ROOT), "--bind", f"127.0.0.1:{port}",
        "--workers", str(workers), "--worker-class", "sync", "--log-level", "warning",
        *(["--preload"] if preload else []), "bench.verification:create_app()",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env)
    try:
        wait_until_listening(port, process)
        yield Server(port, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def wait_until_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # bounded: 20 s
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited with {process.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("gunicorn did not start within 20 s")


# ---------------------------------------------------------------- load generators


@dataclass
class Load:
    requests: int
    errors: int
    seconds: float
    latency_ms: dict[str, float]
    cpu_seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds

    @property
    def cpu_us_per_request(self) -> float:
        return self.cpu_seconds / self.requests * 1e6


def run_wrk(port: int, signed: SignedRequest, seconds: int) -> Load:
    """``wrk`` with one thread (it is far faster than the server) replaying one push."""
    headers = "\n".join(
        f"wrk.headers[ {lua_string(k)} ] = {lua_string(v)}" for k, v in signed.headers.items()
    )
    script = f'wrk.method = "POST"\nwrk.body = {lua_string(signed.body.decode())}\n{headers}\n'
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as file:
        file.write(script)
    try:
        result = subprocess.run(
            ["wrk", "-t1", "-c8", f"-d{seconds}s", "--latency", "-s", file.name,
             f"http://127.0.0.1:{port}{signed.path}"],
            capture_output=True, text=True, timeout=seconds + 30,
        )  # fmt: skip
    finally:
        os.unlink(file.name)
    if result.returncode != 0:
        raise SystemExit(f"wrk exited with {result.returncode}: {result.stderr.strip()}")
    if result.stderr.strip():  # wrk reports a broken script here, then runs plain GETs anyway
        raise SystemExit(f"wrk failed: {result.stderr.strip()}")
    return parse_wrk(result.stdout, seconds)


def lua_string(text: str) -> str:
    level = "=" * 4
    assert f"]{level}]" not in text
    return f"[{level}[{text}]{level}]"


def parse_wrk(output: str, seconds: float) -> Load:
    total = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = int(bad.group(1)) if bad else 0
    latency = {}
    for percentile in ("50", "90", "99"):
        found = re.search(rf"^\s+{percentile}%\s+([\d.]+)(us|ms|s)", output, re.MULTILINE)
        if found:
            scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)]
            latency[f"p{percentile}"] = float(found.group(1)) * scale
    return Load(total - errors, errors, seconds, latency)


def python_client(port: int, signed: SignedRequest, seconds: float) -> tuple[int, int, list[float]]:
    """One client process: a keep-alive connection, reconnecting when the server closes it."""
    ok = errors = 0
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    while (now := time.monotonic()) < deadline and ok + errors < 10_000_000:  # bounded
        try:
            connection.request("POST", signed.path, body=signed.body, headers=dict(signed.headers))
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            errors += 1
            continue
        latencies.append((time.monotonic() - now) * 1000)
        ok, errors = (ok + 1, errors) if response.status == 204 else (ok, errors + 1)
    connection.close()
    return ok, errors, latencies


def run_python_clients(port: int, signed: SignedRequest, seconds: float) -> Load:
    with ProcessPoolExecutor(PYTHON_CLIENTS) as pool:
        futures = [pool.submit(python_client, port, signed, seconds) for _ in range(PYTHON_CLIENTS)]
        results = [future.result(timeout=seconds + 30) for future in futures]
    latencies = sorted(value for _, _, values in results for value in values)
    latency = {
        f"p{p}": latencies[min(len(latencies) - 1, len(latencies) * p // 100)]
        for p in (50, 90, 99)
        if latencies
    }
    return Load(sum(r[0] for r in results), sum(r[1] for r in results), seconds, latency)


# ---------------------------------------------------------------- the measurement


def run_load(server: Server, signed: SignedRequest, seconds: int, use_wrk: bool) -> Load:
    cpu_before = server.worker_cpu_seconds()
    load = (run_wrk if use_wrk else run_python_clients)(server.port, signed, seconds)
    load.cpu_seconds = server.worker_cpu_seconds() - cpu_before
    if load.errors > load.requests / 100:
        raise SystemExit(f"{load.errors} of {load.requests + load.errors} requests were not 204")
    return load


@dataclass
class Rounds:
    """Alternating runs against both servers, so background load hits both alike."""

    verified: list[Load]
    unverified: list[Load]

    def ratios(self, figure: str) -> list[float]:
        """verified/unverified throughput per round; for CPU, the inverse ratio of cost."""
        pairs = zip(self.verified, self.unverified, strict=True)
        if figure == "cpu":
            return [u.cpu_us_per_request / v.cpu_us_per_request for v, u in pairs]
        return [v.per_second / u.per_second for v, u in pairs]


def alternate(
    servers: dict[str, Server], signed: SignedRequest, args: argparse.Namespace
) -> Rounds:
    use_wrk = args.use_wrk
    for server in servers.values():  # warm-up: workers import, connect, fetch the certificate
        run_load(server, signed, 1, use_wrk)
    rounds = Rounds([], [])
    for index in range(args.rounds):
        order = ("verified", "unverified") if index % 2 == 0 else ("unverified", "verified")
        for mode in order:
            getattr(rounds, mode).append(run_load(servers[mode], signed, args.seconds, use_wrk))
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3, help="seconds per measured run")
    parser.add_argument("--rounds", type=int, default=5, help="runs per server, alternating")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument(
        "--python-clients", action="store_true", help="use the Python load generator, not wrk"
    )
    args = parser.parse_args()
    use_wrk = args.use_wrk = shutil.which("wrk") is not None and not args.python_clients
    generator = "wrk" if use_wrk else f"{PYTHON_CLIENTS} Python client processes"
    print(f"load generator: {generator}; gunicorn {args.workers} sync workers; "
          f"{args.rounds} rounds of {args.seconds:g} s per server")  # fmt: skip
    certs = CertificateServer()
    try:
        identity = SigningIdentity.generate(certs.url)
        certs.pem = identity.certificate_pem
        signed = sign_notification(identity, "x" * 256, format="XML", topic_name="bench")
        with (
            gunicorn("verified", certs.url, args.workers) as verified,
            gunicorn("unverified", certs.url, args.workers) as unverified,
        ):
            rounds = alternate({"verified": verified, "unverified": unverified}, signed, args)
        lazy_fetches, certs.fetches = certs.fetches, 0
        with gunicorn("verified", certs.url, args.workers, preload=True) as preloaded:
            run_load(preloaded, signed, 1, use_wrk)
        preloaded_fetches = certs.fetches
    finally:
        certs.close()
    report(rounds, lazy_fetches, preloaded_fetches, args.workers)


def report(rounds: Rounds, lazy: int, preloaded: int, workers: int) -> None:
    for name in ("verified", "unverified"):
        print(describe(name, getattr(rounds, name)))
    for figure, label in (("throughput", "throughput"), ("cpu", "CPU time/request")):
        ratios = rounds.ratios(figure)
        ratio = statistics.median(ratios)
        verdict = "met" if 1 - ratio < TARGET_COST else "MISSED"
        print(f"verified/unverified by {label}: median {ratio:.3f} "
              f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}); verification costs "
              f"{1 - ratio:.1%}, target < {TARGET_COST:.0%}: {verdict}")  # fmt: skip
    print(f"certificate fetches for 1 URL: {lazy} with {workers} workers fetching lazily "
          f"(one per process), {preloaded} with --preload + prefetch_certificate")  # fmt: skip


def describe(name: str, loads: list[Load]) -> str:
    requests = sum(load.requests for load in loads)
    seconds = sum(load.seconds for load in loads)
    cpu_us = sum(load.cpu_seconds for load in loads) / requests * 1e6
    latency = ", ".join(
        f"{k} {statistics.median(load.latency_ms[k] for load in loads):.2f} ms"
        for k in loads[0].latency_ms
    )
    errors = sum(load.errors for load in loads)
    return (
        f"{name:<11} {requests / seconds:7.0f} req/s, {cpu_us:5.0f} us worker CPU/request "
        f"({requests} ok, {errors} errors; median {latency})"
    )


if __name__ == "__main__":
    main()
