"""The push pipeline's seams (issue 49): the outcome one typed value, the transport sending the
path that was signed, and the hooks around each attempt, run once each, in their order."""

from __future__ import annotations

import random
from collections.abc import Sequence

from gateway.delivery.records import Attempt, DeliveryJob, Filed, PushOutcome, Settlement
from gateway.delivery.signing import SignedPush
from gateway.protocol.notify import NotifyStrategy
from gateway.pushing.hooks import Push, PushHook, PushHooks
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.transport import PushResult, PushTransport
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.testing import PushRecorder
from gateway.topics.records import Subscription, TopicMessage
from tests.support.clock import Clock
from tests.support.push_store import StubPushStore
from tests.support.stub import ScriptedSender, failed


def test_an_outcome_read_back_as_text_is_the_typed_value() -> None:
    attempt = Attempt(1, 0, "timeout")  # type: ignore[arg-type]  # as a store row holds it

    assert attempt.outcome is PushOutcome.TIMEOUT
    assert Attempt(**attempt.fields()).outcome is PushOutcome.TIMEOUT


def test_the_transport_sends_the_path_that_was_signed(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    signed = SignedPush("/signed/path?a=1", [("Content-Type", "text/plain")], b"body")

    result = transport.send_signed(endpoint.url + "/elsewhere", signed)

    assert result.outcome is PushOutcome.SUCCESS
    [request] = endpoint.received
    assert (request.path, request.body) == ("/signed/path?a=1", b"body")


class Recording(PushHook):
    def __init__(self, name: str, seen: list[tuple[str, str, object]]) -> None:
        self.name, self.seen = name, seen

    def before(self, push: Push) -> None:
        self.seen.append((self.name, "before", push.job.delivery_id))

    def after(self, push: Push, result: Settlement | None, error: BaseException | None) -> None:
        outcome = result.attempt.outcome if result and result.attempt else None
        self.seen.append((self.name, "after", outcome))

    def settled(self, batch: Sequence[Settlement], letters: Sequence[Filed | None]) -> None:
        self.seen.append((self.name, "settled", len(batch)))


def job(delivery_id: str, strategy: NotifyStrategy = NotifyStrategy.BACKOFF_RETRY) -> DeliveryJob:
    route = "http://127.0.0.1:9/"
    message = TopicMessage("m-" + delivery_id, "orders", "body", "MD5", 0)
    subscription = Subscription("orders", "s", route, notify_strategy=strategy)
    return DeliveryJob(delivery_id, 0, message, subscription, route)


def run_one(clock: Clock, sender: ScriptedSender, hooks: PushHooks) -> StubPushStore:
    store = StubPushStore(clock)
    store.add(job("d0"))
    options = WorkerOptions(threads=2, max_per_route=2, lease_seconds=30)
    worker = DeliveryWorker(
        store, SenderRegistry(sender), options, rng=random.Random(7), hooks=hooks
    )
    try:
        worker.dispatch_once()
        worker.drain()
    finally:
        worker.stop(timeout=1)
    return store


def test_every_hook_runs_around_each_attempt_in_registration_order(clock: Clock) -> None:
    seen: list[tuple[str, str, object]] = []
    hooks = PushHooks([Recording("first", seen), Recording("second", seen)])

    run_one(clock, ScriptedSender(failed(503)), hooks)

    assert seen == [
        ("first", "before", "d0"),
        ("second", "before", "d0"),
        ("first", "after", PushOutcome.HTTP_ERROR),
        ("second", "after", PushOutcome.HTTP_ERROR),
        ("first", "settled", 1),
        ("second", "settled", 1),
    ]


def test_an_attempt_that_raises_reaches_every_hook_with_its_error(clock: Clock) -> None:
    errors: list[BaseException | None] = []

    class Broken(ScriptedSender):
        def send(self, job: DeliveryJob) -> PushResult:
            raise RuntimeError("a bug")

    class Errors(PushHook):
        def after(self, push: Push, result: Settlement | None, error: BaseException | None) -> None:
            errors.append(error)

    store = run_one(clock, Broken(), PushHooks([Errors()]))

    assert [type(e) for e in errors] == [RuntimeError]
    assert store.settled == []  # its lease lapses; it is tried again
