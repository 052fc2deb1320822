"""A real ``mns-gateway serve`` in a child process: started on a free port, waited for until its
``/readyz`` answers, stopped with SIGTERM (its whole process group killed if it will not go).

Used by :class:`gateway.testing.EmbeddedGateway` and by the project's own test suite, so both
start gateways the way users do.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Self

#: How long a gateway may take to become ready, and to stop, before it is given up on.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
_POLL_SECONDS = 0.05
_LOG_TAIL_BYTES = 4000


def log_tail(log_file: Path | None, size: int = _LOG_TAIL_BYTES) -> str:
    """The last ``size`` bytes of a gateway's log ("" if it keeps none)."""
    if log_file is None or not log_file.exists():
        return ""
    with log_file.open("rb") as log:
        log.seek(max(0, log.seek(0, os.SEEK_END) - size))
        return log.read().decode("utf-8", "replace")


class GatewayStartError(RuntimeError):
    """The gateway exited or never became ready; the message ends with its log's tail."""


#: Under pytest-xdist each worker takes its ports from a block of its own, below the kernel's
#: ephemeral range (32768 and up by default): a port one worker picked and let go of cannot be
#: handed to another worker (nor to an outgoing connection) before the first one binds it.
_WORKER_PORTS_START = 20000
_WORKER_PORTS_EACH = 400
_worker_ports = itertools.count()


def worker_port_block(worker: str) -> range | None:
    """The ports an xdist worker (``PYTEST_XDIST_WORKER``, ``gw0``, ``gw1``...) picks from, or
    None outside xdist."""
    if not (match := re.fullmatch(r"gw(\d+)", worker)) or int(match[1]) >= 30:
        return None
    start = _WORKER_PORTS_START + int(match[1]) * _WORKER_PORTS_EACH
    return range(start, start + _WORKER_PORTS_EACH)


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on right now: the OS picks it, or, in a
    pytest-xdist worker, the next free one of the worker's own block (:func:`worker_port_block`),
    in turn, so that a port is not reused soon after it was given out."""
    block = worker_port_block(os.environ.get("PYTEST_XDIST_WORKER", ""))
    for _ in range(len(block) if block else 0):
        port = block[next(_worker_ports) % len(block)]  # type: ignore[index]
        if _bindable(port):
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def is_ready(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


@dataclass
class GatewayProcess:
    """A running ``mns-gateway serve``; ``env`` is the whole environment it was started with."""

    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    env: dict[str, str]
    log_file: Path | None = None
    #: Asked to stop (:meth:`terminate`), not necessarily gone yet.
    _stopping: bool = field(default=False, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(
        cls,
        data_dir: Path,
        env: Mapping[str, str],
        *,
        args: Sequence[str] = (),
        port: int | None = None,
        log_file: Path | None = None,
        timeout: float = START_TIMEOUT,
    ) -> Self:
        """Start it and return once it is ready; :class:`GatewayStartError` if it is not
        within ``timeout`` seconds. Its output goes to ``log_file`` (else nowhere)."""
        port = port or free_port()
        command = [
            sys.executable,
            "-m",
            "gateway.cli",
            "serve",
            *("--port", str(port), "--data-dir", str(data_dir)),
            *args,
        ]
        output: IO[bytes] | int = log_file.open("ab") if log_file else subprocess.DEVNULL
        try:
            process = subprocess.Popen(
                command,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() reaches every worker
            )
        finally:
            if not isinstance(output, int):
                output.close()
        gateway = cls(process, port, data_dir, dict(env), log_file)
        try:
            gateway.wait_until_ready(timeout)
        except BaseException:
            gateway.stop()
            raise
        return gateway

    def wait_until_ready(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise GatewayStartError(
                    f"mns-gateway exited with {self.process.returncode}{self._log_tail()}"
                )
            if is_ready(self.port):
                return
            time.sleep(_POLL_SECONDS)
        raise GatewayStartError(f"mns-gateway was not ready within {timeout:g} s{self._log_tail()}")

    def _log_tail(self) -> str:
        tail = log_tail(self.log_file)
        return f"; its log ends:\n{tail}" if tail else ""

    def kill(self) -> None:
        """SIGKILL the whole process group: the arbiter and every worker, mid-whatever."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=STOP_TIMEOUT)

    def terminate(self) -> None:
        """SIGTERM, without waiting for the exit (:meth:`stop` waits). To stop several gateways,
        terminate them all first: their graceful stops then overlap instead of adding up."""
        if self.process.poll() is None and not self._stopping:
            self.process.send_signal(signal.SIGTERM)
            self._stopping = True

    def stop(self, *, graceful: bool = True) -> None:
        """SIGTERM and wait for a graceful exit (requests and pushes in flight finish), or
        with ``graceful=False`` SIGINT, gunicorn's quick shutdown; SIGKILL the group if it
        takes too long. After :meth:`terminate`, only waits."""
        if self.process.poll() is None:
            if not self._stopping:
                self.process.send_signal(signal.SIGTERM if graceful else signal.SIGINT)
                self._stopping = True
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
        # A worker the arbiter left behind (it was killed) must not outlive it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
