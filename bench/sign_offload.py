"""Would a push's RSA signature be cheaper on a thread of its own? (issue 49)

The delivery worker runs on gevent: its pushes are greenlets on one OS thread, so a signature
(C code that lets go of the GIL) holds up every other push for its whole length, and a worker
process never uses more than one core. gevent's thread pool could take the signature off the
event loop and let it run on another core meanwhile. This measures what that costs and gains,
in one process monkey-patched as the worker is, on 32 greenlets (the worker's default count):

- ``inline``: each greenlet composes a push (a real ``build_signed_push`` with a stub key: the
  body, the headers and the string to sign) and signs its string on the event loop's thread;
- ``pool N``: the same, the signature run by a gevent ``ThreadPool`` of N threads, the
  greenlet waiting for it (``hub.threadpool`` is ``pool 10``);
- ``thread``: the same, the signature run by one native thread of the leanest kind
  (:class:`_SigningThread`: a C queue in, one async watcher out, no task objects), to tell
  what the pool's own machinery costs from what handing work to another core costs.

For each, per push: wall time, CPU time (every thread of the process), and the cores in use
(CPU / wall); rounds interleave the variants, and each variant's ratio to ``inline`` is taken
within its round.

    .venv/bin/python bench/sign_offload.py [--pushes 1500] [--rounds 3] [--pools 1,2,10]
"""

from gevent import monkey

monkey.patch_all()

# The imports after the patch, as in the worker.
import _queue
import argparse
import collections
import statistics
import time
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from gevent import get_hub
from gevent.hub import Waiter
from gevent.monkey import get_original
from gevent.pool import Pool
from gevent.threadpool import ThreadPool

from gateway.delivery.formats import PushNotification, string_to_sign
from gateway.delivery.signing import SigningKey, build_signed_push
from gateway.protocol.notify import ContentFormat

GREENLETS = 32
_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
_PADDING, _SHA1 = padding.PKCS1v15(), hashes.SHA1()
_NOTIFICATION = PushNotification(
    "1234567890", "topic", "1234567890", "sub", "5F0B3E2F0000000000000001",
    "x" * 256, "0" * 32, None, 1_704_067_200_000,
)  # fmt: skip


class _StubKey:
    """Signs nothing: the composition's cost alone."""

    def sign(self, data: bytes, pad: object, algorithm: object) -> bytes:
        return b"\0" * 256


_STUB = SigningKey("0123456789abcdef", _StubKey(), b"")  # type: ignore[arg-type]


def _compose() -> bytes:
    push = build_signed_push(
        _NOTIFICATION, ContentFormat.XML, "http://127.0.0.1:9/notify", key=_STUB,
        public_url="http://127.0.0.1:8080", date="Thu, 03 Dec 2026 07:00:00 GMT",
        request_id="5F0B3E2F0000000000000002",
    )  # fmt: skip
    return string_to_sign("POST", push.headers, push.path).encode()


def _push(sign: Callable[[bytes], bytes]) -> None:
    sign(_compose())


def _inline(text: bytes) -> bytes:
    return _KEY.sign(text, _PADDING, _SHA1)


class _SigningThread:
    """One native thread signing for the hub's greenlets: each caller queues its text and waits
    on the hub; the thread signs, queues the answer and wakes the hub through one async watcher,
    whose callback hands each caller its answer."""

    def __init__(self) -> None:
        self._requests: Any = _queue.SimpleQueue()  # the C queue: gevent does not patch it
        self._answers: collections.deque[tuple[Waiter, bytes]] = collections.deque()
        self._wake = get_hub().loop.async_()
        self._wake.start(self._answer)
        get_original("_thread", "start_new_thread")(self._run, ())

    def sign(self, text: bytes) -> bytes:
        waiter = Waiter()
        self._requests.put((text, waiter))
        return waiter.get()  # type: ignore[no-any-return]

    def _run(self) -> None:
        while True:
            text, waiter = self._requests.get()
            self._answers.append((waiter, _inline(text)))
            self._wake.send()

    def _answer(self) -> None:
        while self._answers:
            waiter, signature = self._answers.popleft()
            waiter.switch(signature)


def _measure(sign: Callable[[bytes], bytes], pushes: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per push, ``pushes`` of them on ``GREENLETS`` greenlets."""
    pool = Pool(GREENLETS)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(pushes):
        pool.spawn(_push, sign)
    pool.join()
    return (time.perf_counter() - wall) / pushes * 1e6, (time.process_time() - cpu) / pushes * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pushes", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pools", default="1,2,10", help="thread pool sizes to try")
    args = parser.parse_args()
    variants: dict[str, Callable[[bytes], bytes]] = {"inline": _inline}
    variants["thread"] = _SigningThread().sign
    for size in (int(text) for text in args.pools.split(",")):
        threads = ThreadPool(size)
        variants[f"pool {size}"] = lambda text, t=threads: t.apply(
            _KEY.sign, (text, _PADDING, _SHA1)
        )
    _measure(_inline, 200)  # warm-up
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    print(f"{'round':>5} {'variant':<8} {'wall µs':>8} {'CPU µs':>8} {'cores':>6}  CPU / inline")
    for round_ in range(1, args.rounds + 1):
        base = 0.0
        for name, sign in variants.items():
            wall, cpu = _measure(sign, args.pushes)
            base = base or cpu
            ratios[name].append(cpu / base)
            print(
                f"{round_:>5} {name:<8} {wall:8.0f} {cpu:8.0f} {cpu / wall:6.2f}  {cpu / base:.2f}"
            )
    for name, values in ratios.items():
        print(f"{name:<8} CPU / inline: {min(values):.2f}-{max(values):.2f} "
              f"(median {statistics.median(values):.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
