"""A private network namespace with its own ``/etc/hosts``, for clients that want a hostname.

Some clients' own tests address the service by its real name (``http://{account}.mns.{region}
.aliyuncs.com``, port 80) and have no option to say otherwise. Inside a namespace made here
(``ip netns add``; the tests run as root) that name resolves to 127.0.0.1 through
``/etc/netns/NAME/hosts``, which ``ip netns exec`` mounts over ``/etc/hosts``, and port 80 is
free, so a gateway started inside it answers them and nothing leaves the namespace. Nothing of
the machine's own network changes.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.testing.process import GatewayProcess

_names = itertools.count(1)
#: Run inside the namespace: wait (bounded) until something accepts on 127.0.0.1:PORT.
_WAIT_READY = """
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("nothing listens on port " + sys.argv[1])
"""


def available() -> bool:
    """Whether namespaces can be made here: ``ip`` is installed and we are root."""
    return shutil.which("ip") is not None and os.geteuid() == 0


@dataclass(frozen=True)
class PrivateNetwork:
    name: str

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def run(self, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        kwargs.setdefault("timeout", 300)
        return subprocess.run(self.command(argv), text=True, **kwargs)

    def start_gateway(
        self, data_dir: Path, env: Mapping[str, str], port: int = 80
    ) -> GatewayProcess:
        """``mns-gateway serve`` on 127.0.0.1:``port`` inside the namespace, ready; stop it with
        its ``stop()`` (``ip netns exec`` execs the gateway, so the PID is the gateway's)."""
        log_file = data_dir.parent / f"{data_dir.name}.gateway.log"
        serve = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port)]
        with log_file.open("ab") as log:
            process = subprocess.Popen(
                self.command([*serve, "--data-dir", str(data_dir)]),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        gateway = GatewayProcess(process, port, data_dir, dict(env), log_file)
        ready = self.run([sys.executable, "-c", _WAIT_READY, str(port), "60"], timeout=90)
        if ready.returncode != 0:
            gateway.stop()
            raise RuntimeError(f"the gateway in {self.name} did not start: {log_file.read_text()}")
        return gateway


@contextmanager
def private_network(hosts: Mapping[str, str]) -> Iterator[PrivateNetwork]:
    """A fresh namespace with loopback up whose ``/etc/hosts`` maps each name in ``hosts`` to
    its address; removed afterwards, with its hosts file."""
    name = f"mnspush{os.getpid()}n{next(_names)}"
    etc = Path("/etc/netns") / name
    etc.mkdir(parents=True)
    lines = ["127.0.0.1 localhost", *(f"{address} {host}" for host, address in hosts.items())]
    (etc / "hosts").write_text("\n".join(lines) + "\n")
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, timeout=30)
        try:
            subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, timeout=30)
            yield PrivateNetwork(name)
        finally:
            subprocess.run(["ip", "netns", "del", name], check=False, timeout=30)
    finally:
        shutil.rmtree(etc, ignore_errors=True)
