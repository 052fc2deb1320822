"""``mns-gateway worker``: delivery workers without the API, for deployments that scale the two
apart."""

from __future__ import annotations

import argparse
import signal
import threading

from gateway.cli.common import Commands, ready_settings, with_data_dir
from gateway.config.settings import Settings
from gateway.errors import ExitCode, GatewayError
from gateway.errors.commands import CommandError


def worker(args: argparse.Namespace) -> int:
    """Push until SIGINT or SIGTERM, then let pushes in flight finish; SIGHUP reads the push
    TLS files again (docs/delivery.md#rotation).

    With the gevent worker class (the default, as for ``serve``) the push threads are greenlets
    on one event loop: a push spends its time signing and waiting on a socket, and OS threads
    contending for the GIL cost about 20 context switches and a sixth of the CPU per push.
    """
    settings = ready_settings(args)
    if settings.pushes_on_greenlets:
        from gateway.serving.patching import patch_all

        patch_all()
    from gateway.api.probes import parse_address, worker_probes
    from gateway.composition import build_runtime

    probes_at = args.probes or settings.worker_probes
    probe_address = parse_address(probes_at) if probes_at else None
    runtime = build_runtime(settings, with_worker=True)
    if runtime.worker is None:
        raise CommandError("MNS_GATEWAY_DELIVERY_THREADS is 0: nothing to run")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: runtime.reload_files())
    try:
        probes = worker_probes(runtime.worker, runtime.store, runtime.metrics, probe_address)
    except GatewayError:
        runtime.close()
        raise
    runtime.worker.start()
    print(started_line(settings), flush=True)
    stop.wait()
    runtime.close()  # pushes in flight get MNS_GATEWAY_GRACEFUL_TIMEOUT seconds to finish
    if probes is not None:
        probes.stop()
    return ExitCode.OK


def started_line(settings: Settings) -> str:
    """What a person sees once the worker runs (it prints nothing else until it stops)."""
    where = "the shared database" if settings.database_url else f"data dir {settings.data_dir}"
    kind = "greenlets" if settings.pushes_on_greenlets else "threads"
    return (
        f"mns-gateway worker: pushing with {settings.delivery_threads} {kind} ({where}); "
        "Ctrl-C or SIGTERM stops it"
    )


def add_command(commands: Commands) -> None:
    parser = commands.add_parser("worker", help="run only the delivery workers")
    with_data_dir(parser)
    parser.add_argument(
        "--probes",
        metavar="HOST:PORT",
        help="answer /healthz, /readyz and /metrics there (default MNS_GATEWAY_WORKER_PROBES; "
        "none when unset; port 0: any free port, printed)",
    )
    parser.set_defaults(handler=worker)
