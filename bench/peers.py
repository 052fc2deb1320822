"""mns-push beside two AWS SNS emulators, moto and LocalStack, pushing over HTTP (issue 49).

The three run at once on this machine, on 127.0.0.1, for the whole run: ``mns-gateway serve``
(API and delivery in one process, embedded SQLite), ``moto_server`` and LocalStack on the host
(``SERVICES=sns``, no Docker, its default twisted server). In each round every measurement runs on
each system in turn, in an order rotated from round to round:

- ``publish+push``: 1 topic, 1 HTTP subscription; ``--messages`` publishes over 8 keep-alive
  connections, each sent as soon as the previous one is answered;
- ``fan-out x10``: 1 topic, 10 HTTP subscriptions (10 paths of one endpoint); ``--messages`` / 10
  publishes, as many pushes as above;
- ``paced``: 1 subscription, ``--rate`` publishes a second for ``--seconds`` on one connection.

Every push reaches one local endpoint (asyncio, keep-alive, answers 204 at once, in its own
process; it and the three systems' launchers are in bench/peer_servers.py), which counts pushes
and times their arrival. The publisher writes its clock (µs) into each message body just before
sending the publish, so a push's latency is its arrival minus that, on one clock, for MNS's XML
push as for SNS's JSON notification. pushes/s = pushes delivered / (last arrival - first
publish); CPU ms/push = the server's process tree's CPU over the measurement / pushes delivered.
Each topic first takes 20 publishes, not measured. MNS requests are signed as the SDK signs
them; SNS requests go to the Query API (form POSTs) with a dummy SigV4 header, which the
emulators do not check. LocalStack sends an HTTP subscription a SubscriptionConfirmation: the
endpoint keeps its token and the bench confirms with it.

How they push: mns-push signs each push (RSA-2048, SHA-1) and sends it on pooled keep-alive
connections from its delivery threads; moto POSTs each notification from within the Publish
call (synchronously), on a new connection, signed with RSA-2048 SHA-256 under a certificate it
makes and signs afresh for each one; LocalStack POSTs from a pool of 10 threads after Publish
has answered, on a new connection, signed with RSA-2048 SHA-1 (SignatureVersion 1).

The peers live in their own virtualenvs (one each: LocalStack brings moto-ext, which installs as
``moto`` too), never in the project's; LocalStack needs Python 3.12 or later (found as
python3.13, python3.12 or under ~/.pyenv), and pins that keep its 2026.3 release starting:

    .venv/bin/python bench/peers.py --install [--peers-venv /tmp/mns-peers-venv]   # 3-5 min
    .venv/bin/python bench/peers.py [--rounds 2] [--messages 2000] [--rate 100] [--seconds 5]
        [--peers moto,localstack] [--localstack-server twisted|hypercorn] [--mns-workers 1,2]

``--mns-workers`` runs mns-push once per count given (``serve --workers N``, each its own system
in the rounds, ``mns-push xN`` beyond 1): the comparison the issue asks for is with the default,
one process; more show what a deployment gets from the machine's other cores.

A round takes about a minute on the shared 2-core machine, plus 20-30 s of start-up once per
run. Ratios are taken within a round (the machine's speed drifts from minute to minute); the
summary gives their range over rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import statistics
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from backends import tree_cpu_seconds
from peer_servers import VENV, Target, endpoint, get, install, ready_within, systems

CONNECTIONS = 8
PADDING = "x" * 256
ENDPOINT_NOTE = (
    "endpoint: one asyncio process, answers 204 at once; pushes/s = pushes delivered / (last"
    " arrival - first publish);\nlatency = arrival - the publisher's clock written into the"
    " message body just before its publish; CPU = the server's process tree, per push"
)


@dataclass(frozen=True)
class Plan:
    name: str
    subscriptions: int
    messages: int
    connections: int = CONNECTIONS
    rate: float = 0  # publishes a second; 0: as fast as they are answered


@dataclass
class Row:
    plan: Plan
    system: str
    round: int
    delivered: int
    seconds: float
    cpu_ms: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.delivered / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies) or [float("nan")]
        return ordered[min(len(ordered) - 1, int(len(ordered) * share))]

    def line(self) -> str:
        delivered = f"{self.delivered}/{self.plan.messages * self.plan.subscriptions}"
        figures = f"{self.seconds:.2f} {self.rate:.0f} {self.percentile(0.5):.1f}"
        figures += f" {self.percentile(0.99):.1f} {self.cpu_ms:.2f}"
        return COLUMNS.format(self.plan.name, self.round, self.system, delivered, *figures.split())


COLUMNS = "{:<13}{:>5}  {:<11}{:>11}{:>8}{:>10}{:>9}{:>9}{:>12}"
HEADER = COLUMNS.format(
    *["measurement", "round", "system", "delivered", "seconds", "pushes/s"],
    *("p50 ms", "p99 ms", "CPU ms/push"),
)


def publish(target: Target, topic: str, messages: int, connections: int, rate: float = 0) -> float:
    """``messages`` publishes over ``connections`` keep-alive connections (paced at ``rate``
    a second if given), each carrying the publisher's clock; the time of the first."""
    counter, failures = itertools.count(), []
    begin, deadline = time.time(), time.monotonic() + 300

    def run() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", target.port, timeout=30)
        while (n := next(counter)) < messages and time.monotonic() < deadline:
            if rate:
                time.sleep(max(0.0, begin + n / rate - time.time()))
            uri, body, headers = target.publish_request(
                topic, f"pt={time.time() * 1e6:.0f};{PADDING}"
            )
            connection.request("POST", uri, body, headers)
            response = connection.getresponse()
            response.read()
            if response.status not in (200, 201):
                failures.append(response.status)
        connection.close()

    threads = [threading.Thread(target=run) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"{target.name}: {len(failures)} publishes failed: {set(failures)}")
    return begin


def arrivals(port: int, expected: int, stall: float = 15, limit: float = 300) -> dict:  # type: ignore[type-arg]
    """The endpoint's figures once ``expected`` pushes arrived, or none for ``stall`` s."""
    deadline, seen, moved = time.monotonic() + limit, -1, time.monotonic()
    while time.monotonic() < deadline:
        count = get(port, "/count")["count"]
        if count >= expected or time.monotonic() - moved > stall:
            break
        if count != seen:
            seen, moved = count, time.monotonic()
        time.sleep(0.05)
    return get(port, "/stats")


def prepare(target: Target, port: int, topic: str, subscriptions: int) -> str:
    """A topic with ``subscriptions`` HTTP subscriptions (confirmed), warmed up by 20 publishes."""
    get(port, "/reset")
    handle = target.create_topic(topic)
    for i in range(subscriptions):
        target.subscribe(handle, i, f"http://127.0.0.1:{port}/{topic}/s{i}")
    if target.confirms:  # as a real subscriber does, with the token the endpoint received
        ready_within(30, lambda: len(get(port, "/stats")["confirmations"]) >= subscriptions, topic)
        for url in get(port, "/stats")["confirmations"]:
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
            target.sns({"Action": "ConfirmSubscription", **query})
    publish(target, handle, 20, 4)
    arrivals(port, 20 * subscriptions, stall=10, limit=60)
    get(port, "/reset")
    return handle


def measure(target: Target, port: int, plan: Plan, round_: int) -> Row:
    topic = f"{plan.name.split()[0].replace('+', '-')}-r{round_}"
    handle = prepare(target, port, topic, plan.subscriptions)
    cpu = tree_cpu_seconds(target.pid)
    begin = publish(target, handle, plan.messages, plan.connections, plan.rate)
    figures = arrivals(port, plan.messages * plan.subscriptions)
    delivered = figures["count"]
    if figures["untimed"]:
        print(f"{target.name}: {figures['untimed']} pushes carried no publish time", flush=True)
    cpu_ms = (tree_cpu_seconds(target.pid) - cpu) * 1000 / max(delivered, 1)
    seconds = (figures["last"] or begin) - begin
    return Row(plan, target.name, round_, delivered, seconds, cpu_ms, figures["latencies_ms"])


def plans(args: argparse.Namespace) -> list[Plan]:
    return [
        Plan("publish+push", 1, args.messages),
        Plan("fan-out x10", 10, args.messages // 10),
        Plan("paced", 1, int(args.rate * args.seconds), 1, args.rate),
    ]


def span(values: list[float], digits: int = 0) -> str:
    low, high, middle = min(values), max(values), statistics.median(values)
    return f"{low:.{digits}f}-{high:.{digits}f} ({middle:.{digits}f})"


def summary(rows: list[Row], rounds: int) -> None:
    print(f"\nover {rounds} round(s): range (median); ratios of pushes/s taken within a round")
    for plan in dict.fromkeys(row.plan for row in rows):
        print(plan.name)
        mine = {(row.system, row.round): row for row in rows if row.plan == plan}
        names = list(dict.fromkeys(name for name, _ in mine))
        ours = [name for name in names if name.startswith("mns-push")]
        for system in ours + [name for name in names if name not in ours]:
            them = [row for (name, _), row in mine.items() if name == system]
            print(
                f"  {system:<11} pushes/s {span([r.rate for r in them]):<18}"
                f" p50 ms {span([r.percentile(0.5) for r in them], 1):<20}"
                f" p99 ms {span([r.percentile(0.99) for r in them], 1)}"
            )
            for us in ours if system not in ours and plan.rate == 0 else ():
                ratios = [
                    mine[(us, n)].rate / row.rate
                    for (name, n), row in mine.items()
                    if name == system and row.rate > 0 and (us, n) in mine
                ]
                if ratios:
                    print(f"  {'':<11} {us} / {system}: {span(ratios, 2)} x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100, help="paced publishes a second")
    parser.add_argument("--seconds", type=float, default=5, help="length of the paced run")
    parser.add_argument("--peers", default="moto,localstack", help="beside mns-push")
    parser.add_argument("--peers-venv", type=Path, default=VENV)
    parser.add_argument("--install", action="store_true", help="create the peers' venvs first")
    parser.add_argument("--localstack-server", default="twisted", help="its GATEWAY_SERVER")
    parser.add_argument(
        "--mns-workers",
        type=lambda text: [int(count) for count in text.split(",")],
        default=[1],
        help="mns-push's serve --workers, each a system of its own (1,2: both)",
    )
    args = parser.parse_args()
    if args.install:
        install(args.peers_venv, [name for name in args.peers.split(",") if name])
    rows: list[Row] = []
    with contextlib.ExitStack() as stack:
        targets = systems(args, stack)
        port = stack.enter_context(endpoint())
        print(f"{ENDPOINT_NOTE}\n\n{HEADER}", flush=True)
        for n in range(1, args.rounds + 1):
            order = targets[n % len(targets) :] + targets[: n % len(targets)]
            for plan in plans(args):
                for target in order:  # interleaved, in an order rotated each round
                    rows.append(measure(target, port, plan, n))
                    print(rows[-1].line(), flush=True)
    summary(rows, args.rounds)


if __name__ == "__main__":
    main()
