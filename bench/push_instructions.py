"""Instructions per delivered push, counted by callgrind, against one signature's (issue 49).

CPU seconds on this shared 2-core machine move by 15-40 % from one run to the next (the same
commit gave 466 and 746 µs per push within an hour), which hides any cut smaller than that.
Instructions do not move with the load: this counts the instructions ``mns-gateway worker``
executes per delivered push (user space: Python, the C libraries, OpenSSL; not the kernel) and
those of one RSA-2048 PKCS#1 v1.5 SHA-1 signature made from Python with ``cryptography``, and
prints both and their ratio. Two checkouts compared with it (run the bench from each) differ by
what their code does, not by what the machine did meanwhile.

The backlog is written into the store first (bench/push_floor.py's ``prepare_backlog``),
then one worker is started under ``valgrind --tool=callgrind --instr-atstart=no``; once
``--warm-up`` pushes have arrived, counting is switched on with ``callgrind_control -i on``,
and off again after ``--pushes`` more. Pushes in flight at either switch make the count
uncertain by about the worker's concurrency (32) in ``--pushes``.

    .venv/bin/python bench/push_instructions.py [--pushes 2000] [--subscriptions 10]
        [--format XML] [--warm-up 200] [--keep DIR] [--database-url auto|URL [--only X]]

With ``--database-url`` the same runs on PostgreSQL too (the worker's instructions, psycopg's and
libpq's among them; the database server's are not counted).

About 2 minutes (the worker starts about 50 times slower under valgrind).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from backends import Backend, add_database_arguments, backends
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fanout import endpoint, stats
from harness import ROOT, gateway_env
from push_floor import prepare_backlog

SIGN = """
import sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), None)
text = ("POST\\n" + "x" * 44 + "\\ntext/xml;charset=utf-8\\nWed, 02 Dec 2026 12:00:00 GMT\\n"
        + "x-mns-version:2015-06-06\\n" * 10 + "/notifications").encode()
for _ in range(int(sys.argv[1])):
    key.sign(text, padding.PKCS1v15(), hashes.SHA1())
"""
CALLGRIND = ("valgrind", "--tool=callgrind")
WORKER = (sys.executable, "-m", "gateway.cli", "worker")
#: The events collected (``summary:`` counts only what was collected at the start).
_TOTALS = re.compile(rb"^totals: (\d+)", re.MULTILINE)


def instructions(output: Path) -> int:
    """The instruction count (Ir) of a callgrind output file (or the files of its dumps)."""
    total = 0
    for path in output.parent.glob(output.name + "*"):
        found = _TOTALS.search(path.read_bytes())
        total += int(found.group(1)) if found else 0
    return total


def signature_instructions(signatures: int, tmp: Path) -> float:
    """Instructions of one signature: a process making ``signatures`` less one making none
    (the same imports, the same key loaded from a file)."""
    key = tmp / "key.pem"
    key.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    counts = []
    for n in (0, signatures):
        out = tmp / f"sign-{n}.out"
        subprocess.run(
            [
                *CALLGRIND,
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                SIGN,
                str(n),
                str(key),
            ],
            check=True,
            capture_output=True,
        )
        counts.append(instructions(out))
    return (counts[1] - counts[0]) / signatures


def _arrived(port: int) -> int:
    return int(stats(port, "/count")["count"])


def _wait_for(port: int, count: int, worker: subprocess.Popen[bytes], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while (arrived := _arrived(port)) < count:
        if worker.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker stopped or stalled at {arrived} of {count} pushes")
        time.sleep(0.2)
    return arrived


def _control(*args: str) -> None:
    done = subprocess.run(["callgrind_control", *args], capture_output=True, text=True)
    if done.returncode != 0 or "Error" in done.stdout:
        raise SystemExit(f"callgrind_control {' '.join(args)}: {done.stdout}{done.stderr}")


def worker_instructions(
    args: argparse.Namespace, backend: Backend, database: str | None, tmp: Path
) -> tuple[float, int]:
    """Instructions per push of one worker draining the backlog, and the pushes counted (the
    worker's own: a PostgreSQL server's are not counted)."""
    total = args.warm_up + args.pushes + 200  # more than counted: the end is never waited for
    messages = -(-total // args.subscriptions)
    out = tmp / "worker.out"
    with endpoint() as port:
        routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(args.subscriptions)]
        prepare_backlog(tmp, database, routes, args.format, messages)
        env = gateway_env(tmp, MNS_GATEWAY_PUSH_TIMEOUT="30", **backend.env(database))
        worker = subprocess.Popen(
            [*CALLGRIND, "--instr-atstart=no", f"--callgrind-out-file={out}", *WORKER],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(port, args.warm_up, worker, 600)
            _control("-i", "on", str(worker.pid))
            first = _arrived(port)
            last = _wait_for(port, first + args.pushes, worker, 600)
            _control("-i", "off", str(worker.pid))
            last = (last + _arrived(port)) // 2  # it took a moment to switch off
        finally:
            worker.terminate()
            worker.wait(120)
    return instructions(out) / (last - first), last - first


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pushes", type=int, default=2000, help="pushes counted")
    parser.add_argument("--warm-up", type=int, default=200, help="pushes before counting")
    parser.add_argument("--subscriptions", type=int, default=10)
    parser.add_argument("--format", default="XML")
    parser.add_argument("--signatures", type=int, default=200)
    parser.add_argument(
        "--keep", type=Path, help="copy the worker's callgrind output here (callgrind_annotate)"
    )
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    print(f"code: {ROOT}")
    with tempfile.TemporaryDirectory(prefix="mns-instr-") as name, backends(args) as databases:
        signature = signature_instructions(args.signatures, Path(name))
        print(f"one signature: {signature:,.0f} instructions")
        for backend in databases:
            per_push, counted = backend_run(args, backend)
            print(
                f"worker, {backend.label}, {args.format}, {args.subscriptions} subscriptions:"
                f" {per_push:,.0f} instructions per push over {counted} pushes;"
                f" ratio {per_push / signature:.2f}",
                flush=True,
            )


def backend_run(args: argparse.Namespace, backend: Backend) -> tuple[float, int]:
    """One worker run on ``backend``, in a data directory and database of its own."""
    database = backend.new_database()
    try:
        with tempfile.TemporaryDirectory(prefix="mns-instr-") as name:
            tmp = Path(name)
            result = worker_instructions(args, backend, database, tmp)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(tmp / "worker.out", args.keep / f"worker-{backend.label}.out")
            return result
    finally:
        backend.drop_database(database)


if __name__ == "__main__":
    main()
