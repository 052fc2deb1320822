"""Instructions per publish of ``mns-gateway serve``, counted by callgrind (issue 49).

The companion of bench/push_instructions.py for the API side: a publish is the larger half of
publish+push (bench/peers.py), and CPU seconds on this machine cannot judge a cut of a few per
cent. One ``mns-gateway serve`` (SQLite, one worker process) runs under ``valgrind
--tool=callgrind --instr-atstart=no --trace-children=yes``; a topic without subscriptions takes
``--warm-up`` publishes, then counting is switched on in every process of the tree
(``callgrind_control -i on``) for ``--publishes`` more over 4 keep-alive connections, and off.
Only the server's instructions are counted (user space; not the kernel, not the publisher).

    .venv/bin/python bench/publish_instructions.py [--publishes 1000] [--warm-up 200]
        [--code DIR] [--keep DIR]

``--code`` runs another checkout's gateway (a worktree of the base commit) with this venv, for
an A/B comparison. Runs of one commit agree within about 1 %. About 40 s a run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from harness import KEY_ID, ROOT, SECRET, free_port, gateway_env, serve_command
from peer_servers import Target
from peers import publish
from push_instructions import CALLGRIND, instructions

from tests.mns_http import RawClient


@contextlib.contextmanager
def counted_serve(code: Path, out: Path, data: Path) -> Iterator[Target]:
    """``mns-gateway serve`` from ``code`` under callgrind, instrumentation off until asked."""
    port = free_port()
    command = [
        *CALLGRIND,
        "--instr-atstart=no",
        "--trace-children=yes",
        f"--callgrind-out-file={out}.%p",
        *serve_command(port),
    ]
    process = subprocess.Popen(
        command,
        env=gateway_env(data),
        cwd=code,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = RawClient("127.0.0.1", port, KEY_ID, SECRET)
    try:
        _wait_until_answering(client, process, 300)
        yield Target("mns-push", port, process.pid, client)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(180)


def _wait_until_answering(
    client: RawClient, process: subprocess.Popen[bytes], limit: float
) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError):
            if client.send("GET", "/topics").status == 200:
                return
        time.sleep(1)
    raise SystemExit("the gateway did not answer under valgrind")


def _instrument(state: str) -> None:
    # No pid: every callgrind run, the serve command's and its worker's (the tree is ours).
    subprocess.run(["callgrind_control", "-i", state], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--publishes", type=int, default=1000, help="publishes counted")
    parser.add_argument("--warm-up", type=int, default=200, help="publishes before counting")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout the gateway runs")
    parser.add_argument("--keep", type=Path, help="copy the callgrind outputs here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mns-instr-") as name:
        tmp = Path(name)
        with counted_serve(args.code.resolve(), tmp / "serve.out", tmp / "data") as target:
            topic = target.create_topic("counted")
            publish(target, topic, args.warm_up, 4)
            _instrument("on")
            publish(target, topic, args.publishes, 4)
            _instrument("off")
        total = instructions(tmp / "serve.out")
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in tmp.glob("serve.out*"):
                shutil.copy(path, args.keep / path.name)
    print(
        f"code: {args.code.resolve()}\nmns-gateway serve, SQLite, a topic without subscriptions:"
        f" {total / args.publishes:,.0f} instructions per publish over {args.publishes}"
    )


if __name__ == "__main__":
    main()
