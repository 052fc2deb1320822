"""The least a push can cost on the worker's stack (issue 49): push loops without the worker.

    .venv/bin/python bench/bare_push.py PORT [--pushes 4000] [--greenlets 16] [--loop bare]

One process, monkey-patched by gevent as ``mns-gateway worker`` is, pushes to the endpoint on
``PORT`` (bench/endpoint.py) from ``--greenlets`` greenlets until ``--pushes`` pushes were
answered; it prints one line of JSON: its own CPU per push in µs from the first push to the
last answer (``cpu_us``, and apart: ``user_us`` and the kernel's ``system_us``), the pushes
made, those of the warm-up before, and one signature's CPU timed in the process twice: in a
loop of signatures alone (``signature_us``) and among the pushes (``signature_among_pushes_us``,
the mean of the pushes' own, each timed in its thread). Only ``stored`` claims and settles;
none of the loops has the worker's push threads, hooks or breaker bookkeeping. Four loops:

- ``bare``: per push, a string to sign of a push's size with a new request id, its RSA-2048
  signature (the gateway's :class:`~gateway.delivery.signing.SigningKey`), the request as one
  f-string, one ``send`` and ``recv`` until the answer's blank line, each greenlet on its own
  keep-alive socket. What Python, gevent and the kernel cost around the signature at the very
  least.
- ``composed``: per push, the gateway's own composition (``notification_of``,
  ``build_signed_push``, ``encode_request``) and its response parser (``read_response``), the
  same bytes as the worker sends, over the same raw sockets.
- ``transport``: the composition, sent by the gateway's HTTP client
  (:class:`~gateway.pushing.transport.PushTransport`: its pool of kept-alive sockets, the
  route's slots, deadlines, the result); the greenlets share one transport, as the worker's
  push threads do, and their own sockets go unused.
- ``stored``: a push loop per claim, as the worker might be written: each greenlet claims up to
  16 deliveries from a SQLite store holding a backlog (10 subscriptions), pushes them one after
  the other through the shared transport (the composition from each delivery, as
  ``HttpSender`` makes it) and settles the claim's outcomes in one call; no push threads,
  dispatcher, settler thread, hooks, metrics or breaker bookkeeping beside the store's own.

bench/push_floor.py runs them as modes, beside the worker. Under callgrind, ``--key`` (one key
for every run) and ``--backlog`` (one backlog for the runs compared) make two runs' instruction
counts comparable:
docs/benchmarks.md#the-least-a-push-costs-on-this-stack-loops-without-the-worker.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse
import contextlib
import json
import resource
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import gevent
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from harness import ROOT  # noqa: F401  (puts the checkout on sys.path)
from push_floor import prepare_backlog

from gateway.config.settings import Settings
from gateway.delivery.formats import ContentFormat, http_date
from gateway.delivery.notifications import notification_of
from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from gateway.delivery.signing import SignedPush, SigningKey, build_signed_push
from gateway.protocol.request_ids import new_request_id
from gateway.pushing.response import read_response
from gateway.pushing.transport import PushTransport, encode_request
from gateway.store.base import Store
from gateway.store.opening import open_store
from gateway.topics.records import Subscription, TopicMessage

PUBLIC_URL = "http://127.0.0.1:8080"
#: The fixed part of a push's string to sign, about its usual size (13 headers, a path).
_SIGNED_REST = (
    "x-mns-publish-time:1700000000000\nx-mns-signing-cert-url:"
    + "a" * 64
    + "\nx-mns-subscriber:1234567890\nx-mns-subscription-name:s000\nx-mns-topic-name:fanout"
    + "\nx-mns-topic-owner:1234567890\nx-mns-version:2015-06-06\n/s0"
)

Push = Callable[[socket.socket], None]
#: Makes at least the pushes asked for, and says how many it made.
Runner = Callable[[int], int]


def bare_push(key: SigningKey, port: int) -> Push:
    host = f"127.0.0.1:{port}"
    body = b"x" * 256

    def push(sock: socket.socket) -> None:
        date, request_id = http_date(time.time()), new_request_id()
        text = f"POST\nmd5\ntext/plain\n{date}\nx-mns-request-id:{request_id}\n{_SIGNED_REST}"
        signature = key.sign(text)
        request = (
            f"POST /s0 HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
            f"Date: {date}\r\nAuthorization: {signature}\r\nx-mns-request-id: {request_id}\r\n\r\n"
        ).encode() + body
        if sock.send(request) < len(request):
            raise ConnectionError("a short send")
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("the endpoint closed the connection")
            answer += data

    return push


def signed_push(key: SigningKey, job: DeliveryJob) -> SignedPush:
    """The worker's composition of ``job``'s push, as HttpSender makes it."""
    return build_signed_push(
        notification_of(job, "1234567890"),
        job.subscription.notify_content_format,
        job.subscription.endpoint,
        key=key,
        public_url=PUBLIC_URL,
        date=http_date(time.time()),
        request_id=new_request_id(),
    )


def _one_job(url: str) -> DeliveryJob:
    """The same delivery for every push of the loops that claim nothing."""
    message = TopicMessage("M00000001", "fanout", "x" * 256, "X", 1_700_000_000_000)
    subscription = Subscription("fanout", "s000", url, notify_content_format=ContentFormat.XML)
    return DeliveryJob("d1", 0, message, subscription, url)


def composed_push(key: SigningKey, port: int) -> Push:
    job = _one_job(f"http://127.0.0.1:{port}/s0")
    host = f"127.0.0.1:{port}"

    def push(sock: socket.socket) -> None:
        signed = signed_push(key, job)
        sock.send(encode_request(signed.path, host, signed.headers, signed.body))
        status, _, reusable = read_response(sock, lambda: 5.0, 65536)
        if status != 204 or not reusable:
            raise ConnectionError(f"unexpected answer {status}")

    return push


def transport_push(key: SigningKey, port: int) -> Push:
    url = f"http://127.0.0.1:{port}/s0"
    job = _one_job(url)
    transport = PushTransport()

    def push(_: socket.socket) -> None:
        # A generous timeout: under callgrind a push waits for its slot for seconds.
        result = transport.send_signed(url, signed_push(key, job), 300.0)
        if not result.ok:
            raise ConnectionError(f"the push failed: {result.error}")

    return push


LOOPS = {"bare": bare_push, "composed": composed_push, "transport": transport_push}
CLAIM = 16


def stored_loop(key: SigningKey, greenlets: int, store: Store) -> Runner:
    """Claim, push and settle: ``greenlets`` greenlets, each a claim at a time."""
    transport = PushTransport()
    deliveries, owner = store.deliveries, "bench:stored"

    def push(job: DeliveryJob) -> Settlement:
        started_ms = deliveries.now_ms()
        result = transport.send_signed(job.subscription.endpoint, signed_push(key, job), 300.0)
        if not result.ok:
            raise ConnectionError(f"the push failed: {result.error}")
        outcome = Attempt(1, started_ms, result.outcome, result.status, None, result.latency_ms)
        return Settlement(job, outcome)

    def run_claims(pushes: int) -> int:
        made = 0

        def claims() -> None:
            nonlocal made
            empty = 0
            while made < pushes:
                jobs = deliveries.claim(owner, 60.0, CLAIM, frozenset())
                if not jobs:  # the store's admission holds a route back a moment, or it ran out
                    empty += 1
                    if empty > 1000 or deliveries.next_due_ms() is None:
                        raise RuntimeError(f"the backlog ran out after {made} pushes")
                    gevent.sleep(0.005)
                    continue
                deliveries.settle(owner, [push(job) for job in jobs])
                made += len(jobs)

        gevent.joinall([gevent.spawn(claims) for _ in range(greenlets)], raise_error=True)
        return made

    return run_claims


def socket_loop(push: Push, port: int, greenlets: int) -> Runner:
    return lambda pushes: run(push, port, pushes, greenlets)


def run(push: Push, port: int, pushes: int, greenlets: int) -> int:
    """``pushes`` pushes (at least), shared out among ``greenlets`` greenlets."""
    each = -(-pushes // greenlets)

    def one_connection() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(each):
                push(sock)

    gevent.joinall([gevent.spawn(one_connection) for _ in range(greenlets)], raise_error=True)
    return each * greenlets


@contextlib.contextmanager
def backlog(port: int, deliveries: int) -> Iterator[Store]:
    """A store in a new directory holding ``deliveries`` due (10 subscriptions to the endpoint)."""
    with tempfile.TemporaryDirectory(prefix="mns-bare-") as tmp:
        routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(10)]
        prepare_backlog(Path(tmp), None, routes, "XML", -(-deliveries // 10))
        store = open_store(Settings(data_dir=Path(tmp)))
        try:
            yield store
        finally:
            store.close()


def cpu_seconds() -> float:
    return sum(cpu_split())


def cpu_split() -> tuple[float, float]:
    """This process's user and system CPU so far, in seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


#: The CPU (in its thread) and the number of the signatures :class:`TimedKey` made.
SIGNED = [0.0, 0]


@dataclass(frozen=True, slots=True)
class TimedKey(SigningKey):
    """The gateway's key, each signature's CPU added to :data:`SIGNED`: a signature among the
    pushes' work may cost more than one of a loop of signatures alone."""

    def sign(self, text: str) -> str:
        started = time.thread_time()
        try:
            return SigningKey.sign(self, text)
        finally:
            SIGNED[0] += time.thread_time() - started
            SIGNED[1] += 1


def signature_cpu_us(key: SigningKey, signatures: int = 200) -> float:
    """One signature's CPU in this process, the same call as a push's."""
    start = cpu_seconds()
    for _ in range(signatures):
        key.sign(_SIGNED_REST)
    return (cpu_seconds() - start) / signatures * 1e6


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--pushes", type=int, default=4000)
    parser.add_argument("--greenlets", type=int, default=16)
    parser.add_argument("--loop", choices=[*LOOPS, "stored"], default="bare")
    parser.add_argument(
        "--key", type=Path, help="a PEM private key (else a new one: its making varies a lot)"
    )
    parser.add_argument(
        "--backlog",
        type=int,
        default=0,
        help="stored: deliveries to write first, at least; the same for runs differenced",
    )
    return parser.parse_args()


def signing_key(pem: Path | None) -> SigningKey:
    private_key = (
        serialization.load_pem_private_key(pem.read_bytes(), None)
        if pem
        else rsa.generate_private_key(65537, 2048)
    )
    assert isinstance(private_key, rsa.RSAPrivateKey)
    return TimedKey("0123456789abcdef", private_key, b"")


def runner_for(args: argparse.Namespace, key: SigningKey, stack: contextlib.ExitStack) -> Runner:
    if args.loop != "stored":
        return socket_loop(LOOPS[args.loop](key, args.port), args.port, args.greenlets)
    # What the two runs ask for, and two claims more per greenlet for each to overshoot:
    # greenlets look at the count before they claim, and it moves after they settle.
    enough = args.pushes + 100 + 4 * CLAIM * args.greenlets
    store = stack.enter_context(backlog(args.port, max(args.backlog, enough)))
    return stored_loop(key, args.greenlets, store)


def main() -> None:
    args = arguments()
    key = signing_key(args.key)
    with contextlib.ExitStack() as stack:
        runner = runner_for(args, key, stack)
        warm_up = runner(100)  # connections, caches
        before = signature_cpu_us(key)
        user, system = cpu_split()
        SIGNED[:] = [0.0, 0]
        made = runner(args.pushes)
        user_after, system_after = cpu_split()
        among_pushes_us = SIGNED[0] / SIGNED[1] * 1e6
        signature_us = (before + signature_cpu_us(key)) / 2
    user_us = (user_after - user) / made * 1e6
    system_us = (system_after - system) / made * 1e6
    figures = {
        "warm_up": warm_up,
        "pushes": made,
        "cpu_us": user_us + system_us,
        "user_us": user_us,
        "system_us": system_us,
        "signature_us": signature_us,
        "signature_among_pushes_us": among_pushes_us,
    }
    print(json.dumps({"loop": args.loop, **figures}))


if __name__ == "__main__":
    main()
