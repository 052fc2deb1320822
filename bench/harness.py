"""Shared pieces of the benchmarks: start a gateway, pre-sign requests, drive wrk, read its figures.

The load generator is wrk (``apt-get install wrk``): a C event loop costs a fraction of the server's
CPU per request, so on this 2-core machine it does not become the bottleneck. Requests are signed
once; a signature stays valid for the 15-minute Date window, which covers a benchmark run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.config.settings import Settings  # noqa: E402
from tests.conftest import free_port, wait_until_ready  # noqa: E402
from tests.mns_http import RawClient  # noqa: E402

KEY_ID, SECRET = "bench-key", "bench-secret"

WRK_SCRIPT = """
local body = os.getenv("BENCH_BODY")
local headers = {}
for line in string.gmatch(os.getenv("BENCH_HEADERS"), "[^\\n]+") do
  local name, value = string.match(line, "^([^:]+): (.*)$")
  headers[name] = value
end
local method, uri = os.getenv("BENCH_METHOD"), os.getenv("BENCH_URI")
request = function() return wrk.format(method, uri, headers, body) end
done = function(summary, latency, requests)
  io.write(string.format('BENCH {"requests": %d, "seconds": %f, "p50_ms": %f, "p99_ms": %f, ' ..
    '"errors": %d, "non2xx": %d}\\n', summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
"""


def gateway_env(data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": SECRET,
        "MNS_GATEWAY_DATA_DIR": str(data_dir),
        **extra,
    }


@dataclass(frozen=True)
class BenchServer:
    """A running gateway: a client for it and the pid at the root of its process tree."""

    client: RawClient
    pid: int


def serve_command(port: int, workers: int = 1) -> list[str]:
    """``mns-gateway serve`` on ``port`` (run from the checkout in the working directory)."""
    return [
        sys.executable,
        "-m",
        "gateway.cli",
        "serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]


@contextmanager
def running_gateway(
    mode: str, workers: int = 1, *, code: Path = ROOT, **env: str
) -> Iterator[BenchServer]:
    """``mode`` is ``serve`` (mns-gateway serve) or ``gunicorn`` (gunicorn
    gateway.serving.wsgi:app);
    ``env`` adds ``MNS_GATEWAY_*`` settings (``MNS_GATEWAY_DATABASE_URL`` among them); ``code``
    is the checkout the gateway runs from (another version's, for bench/compare.py)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mns-bench-") as data_dir:
        environment = gateway_env(Path(data_dir), **env)
        if code != ROOT:
            environment["PYTHONPATH"] = str(code)
        if mode == "serve":
            command = serve_command(port, workers)
        else:
            command = [
                sys.executable,
                "-m",
                "gunicorn",
                "-w",
                str(workers),
                "-k",
                Settings(
                    worker_class=environment.get("MNS_GATEWAY_WORKER_CLASS", "gevent")
                ).gunicorn_worker_class,
                "--threads",
                "32",
                "--worker-connections",
                "1000",
                "-b",
                f"127.0.0.1:{port}",
                "--no-control-socket",
                "gateway.serving.wsgi:app",
            ]
        process = subprocess.Popen(
            command,
            env=environment,
            cwd=code,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_ready(port, process)
            yield BenchServer(RawClient("127.0.0.1", port, KEY_ID, SECRET), process.pid)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def require_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is required for this benchmark: apt-get install wrk")
    return wrk


def run_wrk(
    client: RawClient,
    method: str,
    uri: str,
    body: bytes,
    *,
    seconds: int = 10,
    connections: int = 16,
    rate: int | None = None,
) -> dict[str, float]:
    """Replay one pre-signed request for ``seconds``; return requests/s and latency percentiles."""
    headers = client.headers_for(method, uri, body)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT)
    env = {
        **os.environ,
        "BENCH_BODY": body.decode(),
        "BENCH_METHOD": method,
        "BENCH_URI": uri,
        "BENCH_HEADERS": "\n".join(f"{k}: {v}" for k, v in headers.items()),
    }
    command = [
        require_wrk(),
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "-s",
        script.name,
        f"http://{client.host}:{client.port}",
    ]
    try:
        output = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=seconds + 30, check=True
        ).stdout
    finally:
        os.unlink(script.name)
    line = next(line for line in output.splitlines() if line.startswith("BENCH "))
    figures = json.loads(line[len("BENCH ") :])
    figures["rps"] = figures["requests"] / figures["seconds"]
    return figures


def worker_pids(port: int) -> list[int]:
    """The gateway's worker processes serving ``port``: processes started with the port on their
    command line (``--port N`` or ``-b 127.0.0.1:N``) whose parent was started so too."""
    mentions = re.compile(rf"(?<![0-9]){port}(?![0-9])".encode())
    started: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if not mentions.search((stat.parent / "cmdline").read_bytes()):
                continue
            started[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return [pid for pid, parent in started.items() if parent in started]


def worker_rss_mb(port: int) -> float:
    """Resident memory of the gateway's workers."""
    total_kb = 0
    for pid in worker_pids(port):
        with contextlib.suppress(OSError, StopIteration):
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            total_kb += int(next(line for line in lines if line.startswith("VmRSS:")).split()[1])
    return total_kb / 1024
