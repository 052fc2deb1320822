"""What an egress proxy costs a push: CPU per push through tinyproxy against direct, one run.

The push transport (:class:`gateway.pushing.transport.PushTransport`, as the delivery worker
uses it) sends ``--pushes`` pushes, one after another, to ``bench/endpoint.py`` (plain HTTP, and
HTTPS with a certificate from a CA made for the run) in four modes: http direct, http through
the proxy (absolute form), https direct, https through the proxy (a CONNECT tunnel). Rounds
alternate the modes' order, so what else the shared machine does hits each alike. Per round and
mode it prints pushes/s, the transport's CPU per push (this process; the endpoint and the proxy
run in processes of their own) and tinyproxy's CPU per push (from /proc); then each mode's
ranges and the proxied modes' CPU against direct.

    flock /tmp/mns-heavy.lock .venv/bin/python bench/push_proxy.py [--rounds 4] [--pushes 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from backends import ROOT, tree_cpu_seconds

from gateway.delivery.proxy import ProxyRoutes, parse_proxy_url
from gateway.pushing.tls import PushTls, TlsFiles
from gateway.pushing.transport import PushTransport
from gateway.testing.process import free_port
from tests.support.egress import CertificateAuthority, tinyproxy

MODES = ("http direct", "http proxy", "https direct", "https proxy")
HEADERS = [("Content-Type", "text/xml;charset=utf-8"), ("x-mns-message-id", "B" * 32)]
BODY = b"<?xml version='1.0' encoding='utf-8'?><Notification>" + b"x" * 600 + b"</Notification>"


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def _endpoint(*tls: str) -> Iterator[int]:
    port = free_port()
    command = [sys.executable, str(ROOT / "bench" / "endpoint.py"), str(port)]
    process = subprocess.Popen([*command, *(["--tls", *tls] if tls else [])])
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("bench/endpoint.py did not start")
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def _run(
    transport: PushTransport, url: str, pushes: int, proxy_pid: int
) -> tuple[float, float, float]:
    """(pushes/s, transport CPU µs per push, proxy CPU µs per push)."""
    for _ in range(50):  # connections opened, caches warm
        transport.send(url, HEADERS, BODY)
    cpu, proxy_cpu, started = _cpu_seconds(), tree_cpu_seconds(proxy_pid), time.perf_counter()
    for _ in range(pushes):
        result = transport.send(url, HEADERS, BODY)
        if not result.ok:
            raise RuntimeError(f"{url}: {result.error}")
    elapsed = time.perf_counter() - started
    spent, proxy_spent = _cpu_seconds() - cpu, tree_cpu_seconds(proxy_pid) - proxy_cpu
    return pushes / elapsed, spent / pushes * 1e6, proxy_spent / pushes * 1e6


def _spread(values: list[float]) -> str:
    return f"{min(values):,.0f}-{max(values):,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pushes", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="push-proxy-") as temporary:
        directory = Path(temporary)
        ca = CertificateAuthority(directory / "ca")
        server = ca.issue("endpoint")
        with (
            _endpoint() as http_port,
            _endpoint(str(server.cert), str(server.key)) as https_port,
            tinyproxy(directory / "proxy", connect_ports=[https_port]) as proxy,
        ):
            proxy_pid = _pid_listening(proxy.port)
            urls = {"http": f"http://127.0.0.1:{http_port}/hook", "https": ""}
            urls["https"] = f"https://127.0.0.1:{https_port}/hook"
            figures: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in MODES}
            tls = PushTls(TlsFiles(ca_file=ca.cert_file))
            routes = ProxyRoutes(parse_proxy_url(proxy.url))
            print(f"{args.pushes} pushes per mode and round; CPU in µs per push")
            for round_number in range(args.rounds):
                order = MODES if round_number % 2 == 0 else tuple(reversed(MODES))
                for mode in order:
                    scheme, way = mode.split()
                    with PushTransport(tls=tls, proxy=routes if way == "proxy" else None) as t:
                        figures[mode].append(_run(t, urls[scheme], args.pushes, proxy_pid))
                    rate, cpu, proxy_cpu = figures[mode][-1]
                    print(
                        f"round {round_number + 1} {mode:13} {rate:8,.0f}/s  transport {cpu:6.0f}"
                        f"  tinyproxy {proxy_cpu:6.0f}"
                    )
    _report(figures)


def _report(figures: dict[str, list[tuple[float, float, float]]]) -> None:
    print("\nranges over the rounds:")
    for mode in MODES:
        rates, cpus, proxies = (list(column) for column in zip(*figures[mode], strict=True))
        print(
            f"{mode:13} {_spread(rates)}/s  transport {_spread(cpus)} µs"
            f"  tinyproxy {_spread(proxies)} µs"
        )
    for scheme in ("http", "https"):
        ratios = [
            proxied[1] / direct[1]
            for proxied, direct in zip(
                figures[f"{scheme} proxy"], figures[f"{scheme} direct"], strict=True
            )
        ]
        print(
            f"{scheme} through the proxy: transport CPU {min(ratios):.2f}-{max(ratios):.2f}x direct"
        )


def _pid_listening(port: int) -> int:
    """tinyproxy's PID: the process holding the listening socket (its fixture knows it only
    as a context manager)."""
    target = f":{port:04X}"
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(target) and fields[3] == "0A":
            inodes.add(fields[9])
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (process / "fd").iterdir():
                link = str(fd.readlink())
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(process.name)
    raise RuntimeError(f"nothing listens on {port}")


if __name__ == "__main__":
    main()
