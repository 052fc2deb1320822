"""Where a push's CPU goes (issue 49): py-spy samples of ``mns-gateway worker`` draining a backlog.

The backlog is made first (bench/push_floor.py's ``prepare_backlog``), one worker is started,
and once the first push has arrived ``py-spy record --format raw`` attaches to it (with
``--subprocesses``, without ``--idle``: only samples where a thread is on the CPU) until the
backlog is delivered. Each sample's stack is given to one step of the push by the innermost
frame that a rule in :data:`STEPS` names; the table gives each step's share of the samples and,
scaled by the worker's CPU per push measured from /proc in the same run, its µs per push.

    .venv/bin/python bench/push_profile.py [--messages 1500] [--subscriptions 10] [--format XML]
        [--rate 250] [--database-url auto|URL --only PostgreSQL] [--keep DIR]
    .venv/bin/python bench/push_profile.py --classify FILE.raw [--cpu-us N]  # again, no run

``--keep DIR`` keeps the raw stacks (``py-spy`` collapsed format: ``frame;frame;... count``),
which ``--classify`` reads back; ``--top N`` prints the N hottest leaf frames of each step.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from backends import Backend, _stat, add_database_arguments, backends
from fanout import endpoint, start_workers, stats
from harness import gateway_env
from push_floor import prepare_backlog, signature_cpu_us

#: (step, pattern): a frame is ``function (file:line)``; the innermost frame of a sample that
#: matches a pattern gives the sample its step. Order matters only among patterns matching the
#: same frame. Function names are the push path's as of this benchmark's commit.
STEPS: list[tuple[str, str]] = [
    ("signing: Python around the RSA call", r"^(SigningKey\.sign|b64encode)(\.[\w.<>]+)? "),
    (
        "headers + string to sign",
        r"^(push_headers|sign_headers|string_to_sign|checked_headers|"
        r"content_md5|_header|http_date|_http_date|new_request_id|cert_url|"
        r"HttpSender\._signing_key)(\.[\w.<>]+)? ",
    ),
    ("push path", r"^(push_path|origin_of)(\.[\w.<>]+)? "),
    (
        "rendering body",
        r"^(render|_render_xml|_fields|message_md5|notification_of|"
        r"queue_message_body|escape)(\.[\w.<>]+)? ",
    ),
    (
        "tracing hooks (trace context)",
        r"^(traced_headers|trace_context|TracingHook\.\w+|creation_traceparent|"
        r"trace_id_of|current_carrier|_trace_properties)(\.[\w.<>]+)? ",
    ),
    (
        "metrics hooks",
        r"^MetricsHook\.\w+(\.[\w.<>]+)? ",
    ),
    ("operation log", r"^(OperationLogHook\.\w+|push_record)(\.[\w.<>]+)? |oplog"),
    (
        "HTTP send + response parse",
        r"^(PushTransport\.\w+|_round_trip|read_response|"
        r"encode_request|_is_dropped|_OriginPool\.\w+|_Collector\.\w+|_at_end_of_stream|"
        r"_remaining|_classify_failure)(\.[\w.<>]+)? ",
    ),
    ("live figures in the settle (rates_sql)", r"\(.*rates_sql\.py"),
    (
        "breaker bookkeeping (breaker_sql, dispatch buffer, failing routes)",
        r"\(.*(breaker_sql|held_sql|breaker/\w+|store/breakers|failing_routes|dispatch_buffer)\.py",
    ),
    (
        "settle SQL",
        r"^(Settler\.\w+|DeliveryWorker\._settled|DeliveryStore\.settle|"
        r"DeliveryStore\._settle_failure)(\.[\w.<>]+)? |\(.*delivered_sql\.py|"
        r"^(complete|completed_ids|retry|reschedule|attempt)[a-z_]* \(.*delivery_sql\.py",
    ),
    (
        "claim SQL",
        r"^(DeliveryWorker\._refill|DeliveryWorker\._give_back|"
        r"DeliveryStore\.(claim|_hold|take_push|release|next_due_ms))(\.[\w.<>]+)? |"
        r"\(.*(push_limit_sql|topic_sql|delivery_sql|held_sql)\.py",
    ),
    ("SQL commit (group-commit writer)", r"^GroupCommitWriter\.\w+ "),
    (
        "worker loop (_process/_push/_attempt, records)",
        r"^(DeliveryWorker\.(_process|_push|"
        r"_attempt)|HttpSender\.send|build_signed_push)(\.[\w.<>]+)? ",
    ),
    (
        "dispatcher loop (_run, _start_ready, waits)",
        r"^DeliveryWorker\.(_run|_dispatch|"
        r"_idle_wait|_poll_wait|_expire_if_due|_start_ready)(\.[\w.<>]+)? ",
    ),
]
_COMPILED = [(step, re.compile(pattern)) for step, pattern in STEPS]
RATE = [250]
GEVENT = "gevent / scheduling (hub, greenlet switches, pool)"
OTHER = "other"


def step_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for step, pattern in _COMPILED:
            if pattern.search(frame):
                return step
    if any(
        "gevent" in frame or "concurrent/futures" in frame or "threading.py" in frame
        for frame in frames
    ):
        return GEVENT
    return OTHER


def read_raw(path: Path) -> Counter[tuple[str, ...]]:
    """py-spy's raw output: one line per distinct stack, ``root;...;leaf count``."""
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def _name(frame: str) -> str:
    return frame.split(" (", 1)[0]


def classify(
    stacks: Counter[tuple[str, ...]], cost: tuple[float, float, float] | None, top: int
) -> None:
    """The table. ``cost`` = (user, system, signature) µs per push: py-spy's ``--gil`` samples
    (the thread holding the GIL: Python running) share out user CPU less the RSA signature,
    which runs with the GIL released and is the signature's own CPU timed in this process;
    system CPU (the kernel: socket calls, epoll, SQLite's file I/O) is a line of its own."""
    steps: Counter[str] = Counter()
    leaves: dict[str, Counter[str]] = {}
    for frames, count in stacks.items():
        # py-spy puts the thread ("process N:..." / "thread ...") first; frames follow root-first.
        real = [f for f in frames if " (" in f]
        step = step_of(real)
        steps[step] += count
        leaves.setdefault(step, Counter())[_name(real[-1]) if real else frames[-1]] += count
    total = sum(steps.values())
    print(f"{total} samples holding the GIL ({total / RATE[0]:.1f} s at the sampling rate)")
    rows: list[tuple[str, float | None, float]] = []
    if cost is not None:
        user, system, signature = cost
        print(f"per push: user {user:.0f} µs, system {system:.0f} µs, signature {signature:.0f} µs")
        python = max(user - signature, 0.0)
        rows += [("RSA-2048 signature (GIL released; timed here)", signature, 0.0)]
        rows += [("kernel (system CPU: sockets, epoll, SQLite I/O)", system, 0.0)]
    for step, count in steps.most_common():
        rows.append((step, None if cost is None else count / total * python, count / total))
    whole = (cost[0] + cost[1]) if cost is not None else None
    print(f"{'step':<66}{'GIL %':>7}{'µs/push':>9}{'of push':>9}")
    for step, micro, share in rows:
        text = f"{step:<66}{share:>7.1%}" if share else f"{step:<66}{'':>7}"
        if micro is not None and whole:
            text += f"{micro:9.0f}{micro / whole:>9.1%}"
        print(text)
        for leaf, n in leaves.get(step, Counter()).most_common(top):
            print(f"    {leaf:<62}{n / total:>7.1%}")


def tree_cpu(root: int) -> tuple[float, float]:
    """(user, system) CPU seconds of ``root``'s process tree (live and reaped children)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    user = system = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        if (fields := _stat(pid)) is None:
            continue
        user += int(fields[11]) + int(fields[13])
        system += int(fields[12]) + int(fields[14])
        stack += children.get(pid, [])
    tick = os.sysconf("SC_CLK_TCK")
    return user / tick, system / tick


def _wait(port: int, at_least: int, deadline: float) -> int:
    while (count := stats(port, "/count")["count"]) < at_least and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(count)


def profile(
    backend: Backend, args: argparse.Namespace, keep: Path
) -> tuple[Path, tuple[float, float]]:
    """Run the worker on the backlog under py-spy; the raw stacks and the worker's (user,
    system) µs per push."""
    database = backend.new_database()
    raw = keep / f"{backend.label}-{args.format}-{args.subscriptions}.raw"
    try:
        with endpoint() as port, tempfile.TemporaryDirectory(prefix="mns-profile-") as tmp:
            routes = [f"http://127.0.0.1:{port}/s{i}" for i in range(args.subscriptions)]
            prepare_backlog(Path(tmp), database, routes, args.format, args.messages)
            expected = args.messages * args.subscriptions
            env = gateway_env(Path(tmp), MNS_GATEWAY_PUSH_TIMEOUT="5", **backend.env(database))
            (worker,) = start_workers(env, 1)
            try:
                deadline = time.monotonic() + 300
                _wait(port, 1, deadline)
                spy = subprocess.Popen(
                    [
                        shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"),
                        "record",
                        "--format",
                        "raw",
                        "--rate",
                        str(args.rate),
                        "--subprocesses",
                        "--pid",
                        str(worker.pid),
                        "--output",
                        str(raw),
                        *(["--gil"] if args.gil else []),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                time.sleep(0.5)  # py-spy attaching; the pushes before are not counted
                first, cpu_before = stats(port, "/count")["count"], tree_cpu(worker.pid)
                started = time.monotonic()
                delivered = _wait(port, expected, deadline)
                cpu_after, wall = tree_cpu(worker.pid), time.monotonic() - started
                spy.send_signal(signal.SIGINT)
                _, err = spy.communicate(timeout=60)
                if not raw.exists():
                    raise SystemExit(f"py-spy wrote nothing: {err.decode()[-500:]}")
            finally:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(20)
            pushes = max(delivered - first, 1)
            user, system = (cpu_after[i] - cpu_before[i] for i in (0, 1))
            print(
                f"window: {pushes} pushes in {wall:.1f} s of wall clock, {user + system:.1f}"
                f" s of worker CPU; py-spy at {args.rate}/s"
            )
            return raw, (user / pushes * 1e6, system / pushes * 1e6)
    finally:
        backend.drop_database(database)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1500)
    parser.add_argument("--subscriptions", type=int, default=10)
    parser.add_argument("--format", default="XML")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--keep", type=Path, help="keep the raw stacks in this directory")
    parser.add_argument("--classify", type=Path, help="classify this raw file; run nothing")
    parser.add_argument(
        "--cost", help="with --classify: USER,SYSTEM,SIGNATURE µs per push to scale by"
    )
    parser.add_argument("--top", type=int, default=4, help="hottest leaf frames per step")
    add_database_arguments(parser, only=True)
    parser.add_argument(
        "--no-gil",
        dest="gil",
        action="store_false",
        help="every on-CPU thread's samples, not only the GIL holder's",
    )
    args = parser.parse_args()
    RATE[0] = args.rate
    if args.classify:
        cost = tuple(float(v) for v in args.cost.split(",")) if args.cost else None
        classify(read_raw(args.classify), cost, args.top)  # type: ignore[arg-type]
        return
    keep = args.keep or Path(tempfile.mkdtemp(prefix="mns-push-profile-"))
    keep.mkdir(parents=True, exist_ok=True)
    with backends(args) as databases:
        for backend in databases:
            signature = signature_cpu_us()
            raw, (user, system) = profile(backend, args, keep)
            signature = (signature + signature_cpu_us()) / 2  # before and after, mean
            print(f"\n{backend.label}, {args.format}, {args.subscriptions} subscriptions: {raw}")
            print(f"  (again: --classify {raw} --cost {user:.0f},{system:.0f},{signature:.0f})")
            classify(read_raw(raw), (user, system, signature), args.top)


if __name__ == "__main__":
    main()
