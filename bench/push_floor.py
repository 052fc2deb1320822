"""The push floor (issue 49): CPU per delivered push against one RSA-2048 signature, in one run.

A delivered push cannot cost less than the RSA-2048 PKCS#1 v1.5 SHA-1 signature it carries.
This prints, per backend (SQLite; PostgreSQL with ``--database-url``, the database server's CPU
beside), per NotifyContentFormat (XML, JSON, SIMPLIFIED) and for 1 and 10 subscriptions:

- ``serve``: ``mns-gateway serve`` (API and delivery in one process) publishing ``--pushes`` /
  subscriptions messages over HTTP (8 keep-alive connections, bounded count) into a local
  endpoint: the gateway tree's CPU from the first publish to the last push arriving, divided
  by the pushes delivered, so at fan-out 10 a publish is counted once per 10 pushes;
- ``worker``: the same number of messages published first (written into the store, as
  bench/fanout.py does), then one ``mns-gateway worker`` started to push them: its process
  tree's CPU from the first push on (/proc), per push;
- ``bare``, ``composed``, ``transport``, ``stored`` (not by default): bench/bare_push.py's
  loops without the worker (no push threads, dispatcher, hooks or breaker bookkeeping), what
  the worker's stack costs at the least; one row a round, whatever the backends, formats and
  fan-outs (``stored`` claims from SQLite).

Beside each, the CPU of one signature, timed with ``cryptography`` in this benchmark's own
Python (the parent of every process measured), and the ratio of the push's CPU to it: the
median of signatures sampled during the configuration's run (``sig µs``, ``ratio``;
:class:`SignatureSampler`), and the mean of two batches timed just before and just after it
(``sig ar``, ``rat ar``; the only figure until 2026-12-03). Rounds (``--rounds``) repeat
everything; the summary gives each ratio's range. On a shared machine absolute CPU is inflated
by contention (cache, frequency); the ratio within one run is the figure to read, in the rounds
whose two signature figures agree within :data:`AGREEMENT` (``agree``; the summary gives those
rounds' range apart).

    .venv/bin/python bench/push_floor.py [--pushes 2000] [--rounds 1] [--formats XML,JSON,...]
        [--subscriptions 1,10] [--modes serve,worker] [--database-url auto|URL] [--only X]

A quick run: ``--pushes 500 --formats XML --database-url auto`` (100 s for both backends on
the shared 2-core machine, PostgreSQL's start-up included).
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from backends import Backend, CpuMeter, add_database_arguments, backends
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from fanout import BODY, drain, endpoint, stats
from harness import ROOT, running_gateway

from gateway.config.settings import Settings
from gateway.protocol.notify import ContentFormat
from gateway.store.opening import open_store
from gateway.topics.records import Subscription, TopicMessage

#: About the size of a push's string to sign (method, type, date, seven x-mns headers, path).
_TEXT_TO_SIGN = (
    "POST\n\ntext/xml;charset=utf-8\nSat, 28 Nov 2026 10:00:00 GMT\n" + "x" * 300
).encode()
_CONNECTIONS = 8
#: How far apart a round's two signature figures may be for its ratio to be held against a
#: target. Further apart, the run's minutes were not those around it, and a signature sampled
#: beside a busy run costs more than the run's own: the sampled ratio flatters the gateway
#: (docs/benchmarks.md#where-issue-49s-targets-stand-2026-12-03-2208-2224-utc).
AGREEMENT: Final = 0.10


@functools.cache
def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def signature_cpu_us(signatures: int = 400) -> float:
    """CPU of one RSA-2048 PKCS#1 v1.5 SHA-1 signature in this process (median of 4 batches)."""
    key = _key()
    key.sign(_TEXT_TO_SIGN, padding.PKCS1v15(), hashes.SHA1())  # warm-up
    batches = []
    for _ in range(4):
        start = time.process_time()
        for _ in range(signatures // 4):
            key.sign(_TEXT_TO_SIGN, padding.PKCS1v15(), hashes.SHA1())
        batches.append((time.process_time() - start) / (signatures // 4) * 1e6)
    return statistics.median(batches)


@dataclass
class Row:
    backend: str
    mode: str
    fmt: str
    subscriptions: int
    pushes: int
    cpu_us: float  # the gateway's (serve) or the worker's (worker) CPU per delivered push
    database_us: float | None
    signature_us: float  #: sampled during the run
    signature_around_us: float  #: timed before and after it

    @property
    def ratio(self) -> float:
        return self.cpu_us / self.signature_us

    @property
    def ratio_around(self) -> float:
        return self.cpu_us / self.signature_around_us

    @property
    def divisors_agree(self) -> bool:
        """Whether the signature sampled during the run and the one timed around it agree
        within :data:`AGREEMENT`."""
        return abs(self.signature_us - self.signature_around_us) <= (
            AGREEMENT * self.signature_around_us
        )

    def line(self) -> str:
        database = "-" if self.database_us is None else f"{self.database_us:7.0f}"
        total = (
            "-"
            if self.database_us is None
            else f"{(self.cpu_us + self.database_us) / self.signature_us:5.2f}"
        )
        return (
            f"{self.backend:<11}{self.mode:<10}{self.fmt:<11}{self.subscriptions:>5}{self.pushes:>7}"
            f"{self.cpu_us:>9.0f}{database:>9}{self.signature_us:>8.0f}{self.ratio:>7.2f}{total:>9}"
            f"{self.signature_around_us:>8.0f}{self.ratio_around:>7.2f}"
            f"{'yes' if self.divisors_agree else 'no':>7}"
        )


HEADER = (
    f"{'database':<11}{'mode':<10}{'format':<11}{'subs':>5}{'pushes':>7}{'CPU µs':>9}"
    f"{'db µs':>9}{'sig µs':>8}{'ratio':>7}{'+db rat':>9}{'sig ar':>8}{'rat ar':>7}{'agree':>7}"
)


def subscription_xml(port: int, index: int, fmt: str) -> bytes:
    return (
        f"<Subscription><Endpoint>http://127.0.0.1:{port}/s{index}</Endpoint>"
        f"<NotifyContentFormat>{fmt}</NotifyContentFormat></Subscription>"
    ).encode()


def publish(client, messages: int) -> None:  # type: ignore[no-untyped-def]
    """``messages`` publishes over ``_CONNECTIONS`` keep-alive connections, pre-signed."""
    uri = "/topics/floor/messages"
    body = f"<Message><MessageBody>{BODY}</MessageBody></Message>".encode()
    headers = client.headers_for("POST", uri, body)
    failures: list[int] = []

    def run(count: int) -> None:
        connection = http.client.HTTPConnection(client.host, client.port, timeout=30)
        for _ in range(count):
            connection.request("POST", uri, body, headers)
            response = connection.getresponse()
            response.read()
            if response.status != 201:
                failures.append(response.status)
        connection.close()

    shares = [messages // _CONNECTIONS + (i < messages % _CONNECTIONS) for i in range(_CONNECTIONS)]
    threads = [threading.Thread(target=run, args=(share,)) for share in shares if share]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"{len(failures)} publishes failed: {sorted(set(failures))}")


def wait_for(port: int, expected: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while (count := stats(port, "/count")["count"]) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(count)


def serve_run(
    backend: Backend, fmt: str, subscriptions: int, pushes: int
) -> tuple[float, float | None, int]:
    """Publish+push in one ``mns-gateway serve``: CPU per delivered push (gateway, database)."""
    database = backend.new_database()
    try:
        with endpoint() as port, running_gateway("serve", 1, **backend.env(database)) as server:
            client = server.client
            assert client.send("PUT", "/topics/floor", b"<Topic/>").status == 201
            for i in range(subscriptions):
                uri = f"/topics/floor/subscriptions/s{i}"
                assert client.send("PUT", uri, subscription_xml(port, i, fmt)).status == 201
            publish(client, 20)  # warm-up: connections, key ring, caches
            wait_for(port, 20 * subscriptions, 30)
            stats(port, "/reset")
            messages = max(1, pushes // subscriptions)
            meter = CpuMeter(server.pid, backend)
            before = meter.read()
            publish(client, messages)
            delivered = wait_for(port, messages * subscriptions)
            gateway_ms, database_ms = meter.per_operation_ms(
                before, meter.read(), max(delivered, 1)
            )
            return gateway_ms * 1000, None if database_ms is None else database_ms * 1000, delivered
    finally:
        backend.drop_database(database)


def prepare_backlog(
    data_dir: Path, database_url: str | None, routes: list[str], fmt: str, messages: int
) -> None:
    """Topic, subscriptions in ``fmt`` and ``messages`` published, written into the store."""
    settings = Settings(
        data_dir=data_dir, sqlite_synchronous="NORMAL", database_url=database_url or ""
    )
    store = open_store(settings)
    store.topics.create_topic("fanout", 65536, False)
    for i, url in enumerate(routes):
        store.topics.subscribe(
            Subscription("fanout", f"s{i:03d}", url, notify_content_format=ContentFormat(fmt))
        )
    now = store.now_ms()
    batch = [TopicMessage(f"M{n:08d}", "fanout", BODY, "X", now) for n in range(messages)]
    for start in range(0, len(batch), 500):
        store.topics.publish_all(batch[start : start + 500])
    store.close()


def worker_run(
    backend: Backend, fmt: str, subscriptions: int, pushes: int
) -> tuple[float, float | None, int]:
    """Pushes alone: a backlog drained by one ``mns-gateway worker`` started after it was made."""
    database = backend.new_database()
    try:
        with endpoint() as port, tempfile.TemporaryDirectory(prefix="mns-floor-") as tmp:
            routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(subscriptions)]
            messages = max(1, pushes // subscriptions)
            prepare_backlog(Path(tmp), database, routes, fmt, messages)
            result = drain(Path(tmp), backend, database, 1, port, messages * subscriptions)
            db = result["database_cpu_ms"]
            return (
                result["worker_cpu_ms"] * 1000,
                None if db is None else db * 1000,
                result["count"],
            )
    finally:
        backend.drop_database(database)


RUNS = {"serve": serve_run, "worker": worker_run}
#: bench/bare_push.py's loops, with the format each sends.
LOOPS = {"bare": "-", "composed": "XML", "transport": "XML", "stored": "XML"}


def loop_run(loop: str, pushes: int) -> tuple[float, int]:
    """CPU per push of one of bench/bare_push.py's loops, in µs, and the pushes it made."""
    command = [sys.executable, str(ROOT / "bench" / "bare_push.py")]
    with endpoint() as port:
        done = subprocess.run(
            [*command, str(port), "--loop", loop, "--pushes", str(pushes)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    figures = json.loads(done.stdout)
    return float(figures["cpu_us"]), int(figures["pushes"])


def summary(rows: list[Row]) -> None:
    print("\nratio of CPU per push to one signature: range over rounds (median)")
    keys = sorted({(r.backend, r.mode, r.fmt, r.subscriptions) for r in rows})
    for key in keys:
        mine = [r for r in rows if (r.backend, r.mode, r.fmt, r.subscriptions) == key]
        ratios = [r.ratio for r in mine]
        around = [r.ratio_around for r in mine]
        cpu = [r.cpu_us for r in mine]
        text = (
            f"  {key[0]:<11}{key[1]:<10}{key[2]:<11}{key[3]:>3} subs:"
            f" ratio {min(ratios):.2f}-{max(ratios):.2f}"
            f" ({statistics.median(ratios):.2f}; timed around: {min(around):.2f}-"
            f"{max(around):.2f}); CPU {min(cpu):.0f}-{max(cpu):.0f} µs/push"
        )
        database = [r.database_us for r in mine if r.database_us is not None]
        if database:
            totals = [(r.cpu_us + (r.database_us or 0)) / r.signature_us for r in mine]
            text += (
                f"; database {min(database):.0f}-{max(database):.0f} µs/push,"
                f" with it {min(totals):.2f}-{max(totals):.2f}×"
            )
        agreeing = [r.ratio for r in mine if r.divisors_agree]
        text += f"; divisors agree in {len(agreeing)} of {len(mine)}"
        if agreeing:
            text += f": ratio {min(agreeing):.2f}-{max(agreeing):.2f}"
        print(text)
    signatures = [r.signature_us for r in rows]
    arounds = [r.signature_around_us for r in rows]
    print(
        f"  one signature: {min(signatures):.0f}-{max(signatures):.0f} µs of CPU during the runs,"
        f" {min(arounds):.0f}-{max(arounds):.0f} timed around them"
    )


T = TypeVar("T")


class SignatureSampler:
    """One signature's CPU while a run goes on: every ``interval`` seconds a thread of this
    process makes a batch of signatures, each timed in its own thread's CPU, and keeps the
    median of the batch's warm ones.

    On this shared machine a signature's CPU moves with the load from minute to minute: timed
    only before and after a run, it can be the figure of another minute than the run's. The
    first two signatures of a batch are left out: after the pause, with the run's work through
    the caches meanwhile, they cost more than the worker's own signatures, which come one after
    another (docs/benchmarks.md#bytecodes-per-push-counted-the-signature-sampled-during-the-run).
    About 3 % of a core at the defaults.
    """

    def __init__(self, interval: float = 0.25, batch: int = 8) -> None:
        self.interval = interval
        self.batch = batch
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        key = _key()
        while not self._stop.wait(self.interval):
            times = []
            for _ in range(self.batch):
                started = time.thread_time()
                key.sign(_TEXT_TO_SIGN, padding.PKCS1v15(), hashes.SHA1())
                times.append((time.thread_time() - started) * 1e6)
            self.samples.append(statistics.median(times[2:]))

    def __enter__(self) -> SignatureSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def median_us(self) -> float | None:
        return statistics.median(self.samples) if len(self.samples) >= 5 else None


def around_signatures(run: Callable[[], T]) -> tuple[T, float, float]:
    """``run()``'s result; one signature's CPU sampled during it (:class:`SignatureSampler`);
    and timed just before and just after it (their mean), the way the earlier figures in
    docs/benchmarks.md were taken. A run too short for five batches gives the second for the
    first."""
    before = signature_cpu_us(200)
    with SignatureSampler() as sampler:
        result = run()
    around = (before + signature_cpu_us(200)) / 2
    return result, sampler.median_us() or around, around


def configuration(
    backend: Backend, mode: str, fmt: str, subscriptions: int, args: argparse.Namespace
) -> Row:
    """One configuration's run, the signature sampled during it and timed around it."""
    (cpu, database, delivered), signature, around = around_signatures(
        lambda: RUNS[mode](backend, fmt, subscriptions, args.pushes)
    )
    return Row(backend.label, mode, fmt, subscriptions, delivered, cpu, database, signature, around)


def loop_configuration(loop: str, pushes: int) -> Row:
    """A bare_push.py loop's row, the signature sampled during it and timed around it."""
    (cpu, made), signature, around = around_signatures(lambda: loop_run(loop, pushes))
    return Row("-", loop, LOOPS[loop], 1, made, cpu, None, signature, around)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pushes", type=int, default=2000, help="pushes per configuration")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--formats", default="XML,JSON,SIMPLIFIED")
    parser.add_argument("--subscriptions", default="1,10")
    parser.add_argument("--modes", default="serve,worker")
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    formats = [f.strip().upper() for f in args.formats.split(",")]
    fanouts = [int(n) for n in args.subscriptions.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    rows: list[Row] = []
    with backends(args) as databases:
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}\n{HEADER}", flush=True)
            for loop in [mode for mode in modes if mode in LOOPS]:
                rows.append(loop_configuration(loop, args.pushes))
                print(rows[-1].line(), flush=True)
            for backend in databases:
                for mode in [mode for mode in modes if mode in RUNS]:
                    for subscriptions in fanouts:
                        for fmt in formats:
                            rows.append(configuration(backend, mode, fmt, subscriptions, args))
                            print(rows[-1].line(), flush=True)
    summary(rows)


if __name__ == "__main__":
    main()
