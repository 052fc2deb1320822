"""The worker's dispatch buffer on its own (:mod:`gateway.breaker.dispatch_buffer`): what a claim
asks for, what it keeps of what comes back, what starts, and a failed push's pause."""

from __future__ import annotations

from gateway.breaker.dispatch_buffer import ClaimRequest, DispatchBuffer
from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from tests.support.stub import routed_job

A, B = "http://a.test:80", "http://b.test:80"


def jobs(route: str, n: int, first: int = 0) -> list[DeliveryJob]:
    return [routed_job(f"{route}#{i}", route) for i in range(first, first + n)]


def failure(job: DeliveryJob, outcome: str = "timeout") -> Settlement:
    return Settlement(job, Attempt(1, 0, outcome, None, None, 5000.0), retry_at_ms=1)


def test_an_empty_buffer_asks_for_a_route_s_cap_and_skips_nothing() -> None:
    buffer = DispatchBuffer(threads=32, max_per_route=16)
    assert buffer.claim_request() == ClaimRequest(limit=32, skip=frozenset(), epoch=0)


def test_a_route_over_half_its_cap_is_skipped_and_the_fullest_other_bounds_the_limit() -> None:
    buffer = DispatchBuffer(threads=32, max_per_route=4)  # cap 8
    buffer.accept(ClaimRequest(8, frozenset(), 0), jobs(A, 5) + jobs(B, 3))
    request = buffer.claim_request()
    assert request == ClaimRequest(limit=8 - 3, skip=frozenset({A}), epoch=0)


def test_nothing_is_claimed_while_a_thread_s_worth_waits_or_there_is_no_room() -> None:
    buffer = DispatchBuffer(threads=2, max_per_route=8)
    buffer.accept(ClaimRequest(16, frozenset(), 0), jobs(A, 2))
    assert buffer.claim_request() is None  # two waiting: one per thread
    buffer.start()
    assert buffer.claim_request() is not None  # in flight, none waiting: room for two more


def test_what_exceeds_a_route_s_cap_is_handed_back() -> None:
    buffer = DispatchBuffer(threads=32, max_per_route=2)  # cap 4
    brought = jobs(A, 6) + jobs(B, 1)
    handed_back = buffer.accept(ClaimRequest(8, frozenset(), 0), brought)
    assert handed_back == brought[4:6]
    assert [job.route for job in buffer.ready] == [A] * 4 + [B]


def test_start_keeps_each_route_to_its_slots_and_all_to_the_free_threads() -> None:
    buffer = DispatchBuffer(threads=3, max_per_route=2)
    waiting = jobs(A, 3) + jobs(B, 2)
    buffer.accept(ClaimRequest(8, frozenset(), 0), waiting)
    started = buffer.start()
    assert started == [waiting[0], waiting[1], waiting[3]]  # A's third waits for a slot
    assert buffer.ready == [waiting[2], waiting[4]]
    assert buffer.in_flight() == 3
    assert buffer.start() == []  # no thread free
    buffer.finished(waiting[0])
    assert buffer.start() == [waiting[2]]
    assert buffer.held() == {A: 2, B: 2}


def test_a_failure_the_breaker_counts_hands_its_route_s_waiting_back_and_pauses_it() -> None:
    buffer = DispatchBuffer(threads=1, max_per_route=4)
    first, *rest = jobs(A, 3)
    buffer.accept(ClaimRequest(8, frozenset(), 0), [first, *rest, *jobs(B, 1)])
    buffer.start()
    buffer.finished(first)
    assert buffer.pushed(failure(first)) == rest
    assert [job.route for job in buffer.ready] == [B]
    assert buffer.claim_request() is None  # B's waits for the one thread
    buffer.take_waiting()
    paused = buffer.claim_request()
    assert paused is not None and paused.skip == {A}
    assert buffer.settled([failure(first)]) is True  # the pause is over
    # Twice its one thread, and no route skipped.
    assert buffer.claim_request() == ClaimRequest(limit=2, skip=frozenset(), epoch=1)


def test_a_failure_it_does_not_count_pauses_nothing() -> None:
    buffer = DispatchBuffer(threads=4, max_per_route=4)
    first, second = jobs(A, 2)
    buffer.accept(ClaimRequest(8, frozenset(), 0), [first, second])
    buffer.start()
    rejected = Settlement(first, Attempt(1, 0, "http_error", 404, None, 1.0), retry_at_ms=1)
    assert buffer.pushed(rejected) == []
    assert buffer.settled([rejected]) is False


def test_a_claim_under_way_as_its_route_failed_hands_that_route_s_deliveries_back() -> None:
    buffer = DispatchBuffer(threads=4, max_per_route=4)
    (pushing,) = jobs(A, 1)
    buffer.accept(ClaimRequest(8, frozenset(), 0), [pushing])
    buffer.start()
    request = buffer.claim_request()
    assert request is not None
    buffer.finished(pushing)
    buffer.pushed(failure(pushing))  # while the claim was in the store
    buffer.settled([failure(pushing)])
    late = jobs(A, 2, first=1) + jobs(B, 1)
    assert buffer.accept(request, late) == late[:2]
    assert buffer.ready == late[2:]


def answer(job: DeliveryJob, status: int = 204) -> Settlement:
    outcome = "success" if status < 300 else "http_error"
    return Settlement(job, Attempt(1, 0, outcome, status, None, 1.0), retry_at_ms=1)


def test_a_route_not_yet_heard_from_starts_slowly_and_has_its_share_once_it_answers() -> None:
    buffer = DispatchBuffer(threads=32, max_per_route=8, first_per_route=2)
    handed_back = buffer.accept(ClaimRequest(32, frozenset(), 0), jobs(A, 6))
    assert len(handed_back) == 2  # it holds twice its first share: the rest is handed back
    assert [job.route for job in buffer.start()] == [A, A]
    request = buffer.claim_request()
    assert request is not None and request.skip == {A}  # full until it answers
    buffer.finished(jobs(A, 1)[0])
    assert buffer.pushed(answer(jobs(A, 1)[0], 404)) == []  # answered: the message's problem
    assert buffer.limit(A) == 8
    buffer.accept(ClaimRequest(32, frozenset(), 0), jobs(A, 14, first=6))
    assert len(buffer.start()) == 7  # 1 still out: 8 in all


def test_a_failure_the_breaker_counts_takes_the_full_share_away() -> None:
    buffer = DispatchBuffer(threads=32, max_per_route=8, first_per_route=2)
    first, second = jobs(A, 2)
    buffer.pushed(answer(first))
    assert buffer.limit(A) == 8 and buffer.limit(B) == 2
    buffer.pushed(failure(second))
    assert buffer.limit(A) == 2


def test_with_no_first_share_every_route_has_its_full_share_at_once() -> None:
    buffer = DispatchBuffer(threads=32, max_per_route=8)  # the breaker off
    buffer.accept(ClaimRequest(32, frozenset(), 0), jobs(A, 16))
    assert len(buffer.start()) == 8
    buffer.pushed(failure(jobs(A, 1)[0]))
    assert buffer.limit(A) == 8
