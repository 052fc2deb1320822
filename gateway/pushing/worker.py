"""The delivery worker: claims due deliveries under a lease and pushes them on its push threads.

One dispatcher thread claims work; the push threads
(:class:`~gateway.pushing.push_threads.PushThreads`) send it. Concurrency is bounded in two places:
in total (at most ``threads`` push threads) and per route (scheme, host and port), so a slow or
dead endpoint can hold at most ``max_per_route`` threads (``first_per_route`` until it answers,
breaker on) while healthy endpoints use the rest. Claims skip routes that are full; what a claim
returns beyond a route's free slots is handed back.

All time comes from the injected clock through the store, and retry delays come from the pure
schedules in :mod:`gateway.delivery.retry`, so tests drive the whole loop deterministically with
:meth:`DeliveryWorker.dispatch_once` and :meth:`DeliveryWorker.drain`.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from gateway.breaker.dispatch_buffer import FIRST_PER_ROUTE, ClaimRequest, DispatchBuffer
from gateway.breaker.state import Transition
from gateway.delivery.polling import failure_backoff, quiet_backoff
from gateway.delivery.push_limits import until_next_second
from gateway.delivery.records import Attempt, DeliveryJob, Filed, PushOutcome, Settlement
from gateway.delivery.retry import after_attempt
from gateway.errors import PermanentDeliveryError, StoreUnavailableError
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.oplog import NullOperationLog, OperationLog
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.pushing.hooks import Push, PushHooks
from gateway.pushing.push_hooks import standard_push_hooks
from gateway.pushing.push_store import PushStore
from gateway.pushing.push_threads import PushThreads
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.settler import Settler

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerOptions:
    threads: int = 32
    max_per_route: int = 16
    #: A route's pushes in flight until it answers one, breaker on (the dispatch buffer's).
    first_per_route: int = FIRST_PER_ROUTE
    lease_seconds: float = 60.0
    retry_scale: float = 1.0
    idle_wait: float = 0.25
    #: A dispatcher with nothing due waits longer after each round that found nothing, up to
    #: this; a wake-up or a started push brings it back to ``idle_wait`` (see ``_idle_wait``).
    quiet_wait: float = 2.0
    expiry_interval: float = 60.0
    #: A dispatcher that has not come round its loop for this long is stuck (in a store call
    #: that never returns: a database gone silent) and counts as dead to the liveness probe.
    #: Each round takes a claim and at most ``quiet_wait``; a healthy database answers in far less.
    stall_seconds: float = 120.0


class DeliveryWorker:
    def __init__(
        self,
        store: PushStore,
        senders: SenderRegistry,
        options: WorkerOptions = WorkerOptions(),
        *,
        metrics: GatewayMetrics | None = None,
        oplog: OperationLog | None = None,
        rng: random.Random | None = None,
        account_id: str = "",
        monotonic: Callable[[], float] = time.monotonic,
        tracing: Tracing = NO_TRACING,
        hooks: PushHooks | None = None,
    ) -> None:
        self.store = store
        self.senders = senders
        self.options = options
        self.metrics = metrics or GatewayMetrics()
        self.rng = rng or random.Random()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: Tracing, the operation log, metrics and warnings around each attempt, registered once.
        self.hooks = hooks or PushHooks(
            standard_push_hooks(
                tracing=tracing,
                oplog=oplog or NullOperationLog(),
                metrics=self.metrics,
                account_id=account_id,
                now_ms=store.now_ms,
            )
        )
        #: What this worker claimed and is pushing, per route (under ``_idle``).
        # With the breaker off nothing reads failures, and no route starts slowly either.
        first = options.first_per_route if store.breaker.enabled else None
        self._buffer = DispatchBuffer(options.threads, options.max_per_route, first)
        # A plain lock, not the default RLock: nothing here takes it twice, and under gevent an
        # RLock is Python code wrapped around that same lock, run at every round of it.
        self._idle = threading.Condition(threading.Lock())
        #: Callers waiting in :meth:`drain`: only they need a notify (under gevent, a round of
        #: its lock and a check of the owner per push).
        self._draining = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._unsettled = 0
        self._claiming = False
        self._pushers = PushThreads(options.threads, self._process)
        # Outcomes are retried through an outage for half a lease: the pushes are not made again.
        self._settler = Settler(
            store,
            self.owner,
            self._settled,
            retry_for=options.lease_seconds / 2,
            more_coming=self._more_coming,
        )
        self._thread: threading.Thread | None = None
        self._next_expiry = 0.0
        self._dry: frozenset[str] | None = None
        self._dry_until = 0.0
        self._quiet = options.idle_wait
        #: The dispatcher's schedule (dry claims, expiry, its heartbeat) runs on ``monotonic``;
        #: waits for threads to finish are real waits and keep time.monotonic.
        self._monotonic = monotonic
        self._beat = 0.0
        store.on_breaker_transitions(self._breaker_changed)

    # lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Run the dispatcher, woken by publishes and replays in this process or any other
        sharing the database."""
        self.store.wakeups.on_deliveries(self.wake)
        self._beat = self._monotonic()
        self._thread = threading.Thread(target=self._run, name="mns-dispatch", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        """Whether the dispatcher is claiming and starting pushes, what a liveness probe asks:
        its thread lives and has come round its loop within ``stall_seconds``. A worker whose
        dispatcher died, or hangs in a store call, pushes nothing though its process lives on."""
        if self._thread is None or not self._thread.is_alive():
            return False
        return self._monotonic() - self._beat < self.options.stall_seconds

    def wake(self) -> None:
        """Look for work now (deliveries were published or replayed)."""
        self._dry = None
        self._quiet = self.options.idle_wait
        self._wake.set()

    def stop_claiming(self) -> None:
        """Claim nothing more; pushes in flight go on. The first step of a graceful stop.

        It runs inside a SIGTERM handler, so it only sets flags and never blocks.
        """
        self._stop.set()
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming, and give pushes in flight ``timeout`` seconds to finish and be recorded.

        Deliveries claimed but not started are handed back at once, for any process to take. A
        push still running at the deadline keeps its lease and is made again once the lease
        lapses: at least once, never lost.
        """
        deadline = time.monotonic() + timeout
        self.store.wakeups.remove_delivery_callback(self.wake)
        self.store.remove_breaker_listener(self._breaker_changed)
        self.stop_claiming()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._idle:
            unstarted = self._buffer.take_waiting()
        self._give_back(unstarted)
        self.drain(max(0.0, deadline - time.monotonic()))
        self._pushers.shutdown()
        self._settler.stop()

    # dispatching --------------------------------------------------------------------------
    # Claimed deliveries wait in the buffer (still leased) until a thread and a slot on their
    # route are free (gateway/breaker/dispatch_buffer.py says what is claimed and started when).

    def _give_back(self, unstarted: list[DeliveryJob]) -> None:
        """Hand claimed deliveries back untried, due as they were, for any process to take."""
        if not unstarted:
            return
        try:
            self.store.release(self.owner, [job.delivery_id for job in unstarted])
        except StoreUnavailableError:  # their leases lapse instead
            log.warning("%d unstarted deliveries wait for their leases", len(unstarted))
        except Exception:  # their leases lapse instead
            log.exception("handing back %d unstarted deliveries failed", len(unstarted))

    def _claim(self) -> tuple[ClaimRequest | None, list[DeliveryJob]]:
        """Claim what the buffer asks for, unless the last claim showed there is nothing it
        could get."""
        with self._idle:
            request = self._buffer.claim_request()
        if request is None:
            return None, []
        dry = self._dry is not None and request.skip >= self._dry
        if dry and self._monotonic() < self._dry_until:
            return None, []
        limit = request.limit
        self._claiming = True
        try:
            jobs = self.store.claim(self.owner, self.options.lease_seconds, limit, request.skip)
        finally:
            self._claiming = False
        if len(jobs) < limit:
            # Everything due outside ``skip`` is taken: claiming again with the same routes (or
            # more) skipped would only scan their backlog in vain. Work that falls due later (a
            # retry, a lapsed lease) is looked for when the dispatcher wakes on its own or a poll
            # interval has passed; a publish anywhere calls wake().
            self._dry, self._dry_until = request.skip, self._monotonic() + self._poll_wait()
        return request, jobs

    def dispatch_once(self) -> int:
        """Claim what is due and fits, start what can run now; return how many started."""
        self._dry = None
        return self._dispatch()

    def _dispatch(self) -> int:
        """A claim, then what it brought and what waited started as threads and slots allow,
        in one round of the lock; what the buffer cannot take is handed back."""
        request, jobs = self._claim()
        with self._idle:
            handed_back = self._buffer.accept(request, jobs) if request and jobs else []
            started = self._buffer.start()
        for job in started:  # before the store is asked anything more: they are in flight
            self._pushers.submit(job)
        if handed_back:
            self.store.release(self.owner, [job.delivery_id for job in handed_back])
        return len(started)

    def drain(self, timeout: float = 10.0) -> None:
        """Wait until no push is in flight or unrecorded (tests call it after dispatch_once).

        Claimed deliveries still waiting for a thread are not waited for: only the next
        :meth:`dispatch_once` starts them.
        """
        deadline = time.monotonic() + timeout
        with self._idle:
            self._draining += 1
            try:
                while self._busy() and time.monotonic() < deadline:
                    self._idle.wait(deadline - time.monotonic())
            finally:
                self._draining -= 1

    def _more_coming(self) -> bool:
        """Whether outcomes may come soon, for the settler: pushes in flight, claimed ones
        waiting, or a claim under way (a busy worker's pushes come in waves that meet at its
        claims). Read without the lock: each is one step under the GIL, and an outcome missed
        just then is committed in the next batch."""
        return self._claiming or bool(self._buffer.inflight) or bool(self._buffer.ready)

    def _busy(self) -> bool:
        return bool(self._buffer.in_flight() or self._unsettled)

    def _run(self) -> None:
        """The dispatcher: everything it asks the store, its idle wait's question included,
        is inside the error handling, so a database that goes away costs pushes only while it
        is away. Failures in a row back off (:func:`failure_backoff`), each wait cut short by a
        wake-up or a stop."""
        failures = 0
        while not self._stop.is_set():
            self._beat = self._monotonic()
            try:
                started = self._dispatch()
                self._expire_if_due()
                wait = self._idle_wait(busy=bool(started))
                failures = 0
            except StoreUnavailableError:  # logged once per outage by the store
                failures += 1
                started, wait = 0, failure_backoff(failures, self.options.idle_wait)
            except Exception:  # a bug, not an outage: say so, and keep the worker alive
                log.exception("delivery dispatch failed")
                failures += 1
                started, wait = 0, failure_backoff(failures, self.options.idle_wait)
            if started and len(self._buffer.ready) < self.options.threads:
                continue
            if not self._wake.wait(wait):
                self._dry = None  # a poll, or the earliest retry fell due: look again
            self._wake.clear()

    def _idle_wait(self, busy: bool) -> float:
        """How long to sleep when a dispatch started nothing (a finished push wakes us sooner).

        A delivery that is already due but was not claimed is leased by someone else, waits
        for a full route or for its subscription's next second: only a finished push or the
        next poll changes that, so it must not make the wait zero (that was a busy loop of
        empty claims), and it keeps the poll at ``idle_wait``. With nothing due, only work that
        appears can change anything: a publish or replay anywhere wakes this dispatcher, and a
        retry is waited for exactly, so the poll is a backstop for a lost wake-up alone and
        doubles after each quiet round up to ``quiet_wait`` (an idle gateway on PostgreSQL
        made four claims a second, each two transactions, forever).
        """
        if busy:
            self._quiet = self.options.idle_wait
            return self._poll_wait()
        next_due = self.store.next_due_ms()
        until_due = None if next_due is None else next_due / 1000 - self.store.clock()
        wait, self._quiet = quiet_backoff(
            until_due, self._quiet, self._poll_wait(), self.options.quiet_wait
        )
        return wait

    def _poll_wait(self) -> float:
        """``idle_wait``, cut short at the next second: what a subscription's rate limit put off
        falls due then, and is claimed at once (docs/control-plane.md#tenantratelimitpolicy)."""
        return min(self.options.idle_wait, until_next_second(self.store.clock()))

    def _expire_if_due(self) -> None:
        now = self._monotonic()
        if now >= self._next_expiry:
            self._next_expiry = now + self.options.expiry_interval
            expired = self.store.expire()
            if expired:
                self.hooks.expired(expired)
        # The retention pass (in expire() too) runs more often at a short retention.
        self.store.retain_if_due()

    # one delivery -------------------------------------------------------------------------
    def _process(self, job: DeliveryJob) -> None:
        settlement, unstarted = None, []
        try:
            # A subscription's TenantRateLimitPolicy: the claim granted the push a place in one
            # second's count; one that did not start within that second takes its place again
            # or waits, untried (docs/control-plane.md#tenantratelimitpolicy).
            if self.store.take_push(job):
                settlement = self._attempt(job)
        except StoreUnavailableError:  # a push into a local queue, during an outage
            settlement = None  # the lease will lapse and another attempt will be made
        except Exception:  # the lease will lapse and another attempt will be made
            log.exception("delivery %s failed unexpectedly", job.delivery_id)
        with self._idle:
            self._buffer.finished(job)
            if settlement is not None:
                self._unsettled += 1
                if self.store.breaker.enabled:  # else nothing would read the failures recorded
                    unstarted = self._buffer.pushed(settlement)
            if self._draining:
                self._idle.notify_all()
        self._give_back(unstarted)
        if settlement is not None:
            self._settler.submit(settlement)
        self._wake.set()

    def _attempt(self, job: DeliveryJob) -> Settlement:
        return self.hooks.run(Push(job), self._push)

    def _push(self, push: Push) -> Settlement:
        """One attempt: send, then what becomes of the delivery (the hooks log and count it)."""
        job = push.job
        started_ms = self.store.now_ms()
        try:
            result = self.senders.for_route(job.route).send(job)
        except PermanentDeliveryError as exc:
            error = str(exc)
            attempt = Attempt(job.attempts + 1, started_ms, PushOutcome.REJECTED, None, error)
            return Settlement(job, attempt, dead_reason=error)
        attempt = Attempt(
            job.attempts + 1,
            started_ms,
            result.outcome,
            result.status,
            result.error,
            result.latency_ms,
        )
        now_ms = self.store.now_ms()
        return after_attempt(
            job, attempt, now_ms=now_ms, rng=self.rng, scale=self.options.retry_scale
        )

    def _settled(self, batch: list[Settlement], letters: list[Filed | None]) -> None:
        self.hooks.settled(batch, letters)
        with self._idle:
            self._unsettled -= len(batch)
            resumed = self._buffer.settled(batch)
            if self._draining:
                self._idle.notify_all()
        if resumed:  # a paused route takes work again: its claim reads the breaker
            self._wake.set()

    def _breaker_changed(self, transitions: list[Transition]) -> None:
        """Each transition this process made, to the hooks (docs/delivery.md#endpoint-health)."""
        self.hooks.transitions(transitions)
