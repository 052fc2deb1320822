"""What ``mns-gateway serve`` runs in gunicorn's arbiter: checks before start, and gunicorn itself.

This module imports nothing of the app. Each worker process builds its own app after the worker
class has set itself up, and the gevent worker monkey-patches the standard library first: a
module imported before that (urllib3 holds ``ssl.SSLContext`` directly) would keep blocking
versions, and gevent warns about exactly that on every start. So the arbiter loads
:mod:`gateway.composition` only inside :meth:`GatewayServer.load`, which runs in the worker.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from gunicorn.app.base import BaseApplication

from gateway.config.settings import Settings
from gateway.errors.commands import CannotListenError

if TYPE_CHECKING:
    from flask import Flask

    from gateway.composition import Runtime


def check_can_listen(host: str, port: int) -> None:
    """Bind the address once, as gunicorn will, and let go of it; raise when that fails.

    Gunicorn finds a taken port only after the arbiter started, then retries five times and
    prints five errors; checked here, it is one line before anything claims to be listening.
    ``SO_REUSEADDR`` as gunicorn sets it, so a port in TIME_WAIT is not mistaken for a taken one.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise CannotListenError(f"cannot listen on {host}:{port}: {error.strerror}") from error
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            reason = (
                "the port is in use (another gateway?)"
                if error.errno == errno.EADDRINUSE
                else error.strerror or str(error)
            )
            raise CannotListenError(f"cannot listen on {host}:{port}: {reason}") from error


class GatewayServer(BaseApplication):  # type: ignore[misc]
    """gunicorn, configured from :class:`Settings` instead of a config file."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        options: dict[str, Any] = {
            "bind": f"{self.settings.host}:{self.settings.port}",
            "workers": self.settings.workers,
            "worker_class": self.settings.gunicorn_worker_class,
            "threads": self.settings.threads,
            # gthread's cap; the default worker class reads MNS_GATEWAY_MAX_CONNECTIONS itself.
            "worker_connections": self.settings.max_connections,
            "keepalive": 75,
            "timeout": 60,
            # After SIGTERM: stop accepting, answer what is in flight (long polls included).
            "graceful_timeout": self.settings.graceful_timeout,
            "post_worker_init": _begin_shutdown_on_sigterm,
            "worker_exit": _exit_without_teardown,
            "proc_name": "mns-gateway",
        }
        if "control_socket_disable" in self.cfg.settings:
            # gunicorn 26 and later open a control socket at a fixed path; several gateways may
            # run on one host (tests, demos), so none is opened. Earlier versions have none and
            # would refuse the unknown setting (pyproject.toml allows gunicorn 22 on).
            options["control_socket_disable"] = True
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        from gateway.composition import build_app, build_runtime  # in the worker, after it patched

        # The worker process keeps its runtime for the SIGTERM hook below.
        self.runtime = build_runtime(self.settings, with_worker=True)
        return build_app(self.settings, self.runtime)


def _begin_shutdown_on_sigterm(worker: Any) -> None:
    """gunicorn hook: on SIGTERM the worker process also stops claiming deliveries at once.

    gunicorn then spends up to the graceful timeout answering requests in flight; pushes in
    flight finish and are recorded meanwhile, rather than being cut off when the process exits
    (docs/deploy.md#stopping-gracefully). ``begin_shutdown`` only sets events, which never
    blocks the handler: gevent runs signal handlers in its hub, where nothing may wait.
    """
    runtime: Runtime = worker.app.runtime
    gunicorn_handler = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        runtime.begin_shutdown()
        if callable(gunicorn_handler):
            gunicorn_handler(signum, frame)

    signal.signal(signal.SIGTERM, on_sigterm)


def _exit_without_teardown(arbiter: Any, worker: Any) -> None:
    """gunicorn hook, in a worker process about to exit: after a clean stop, do what the exit
    handlers would (finish the runtime: pushes in flight, the operation log, the spans, the
    store; flush the logs) and leave at once.

    Python's own exit would go on to take every module and object of the process apart, one by
    one: a good part of a gateway's stop, spent on memory the operating system reclaims anyway
    (docs/benchmarks.md#a-gateways-stop-and-what-a-command-imports). Only a clean stop takes
    this path: gunicorn calls the hook while the worker's ``SystemExit`` propagates, and a
    failure to boot or to load the app (codes the arbiter reads) or an error exits as gunicorn
    has it.
    """
    stopping = sys.exc_info()[1]
    runtime: Runtime | None = getattr(worker.app, "runtime", None)
    clean = isinstance(stopping, SystemExit) and stopping.code in (0, None)
    if not (clean and worker.booted and runtime is not None):
        return
    runtime.close()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None when the process was started without them
            stream.flush()
    os._exit(0)
