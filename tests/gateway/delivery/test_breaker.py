"""The circuit breaker's state machine (gateway.breaker.state), every transition, with the
clock passed in as milliseconds."""

from __future__ import annotations

from gateway.breaker.state import (
    Breaker,
    BreakerPolicy,
    Override,
    State,
    admissible,
    admit,
    blocks_claims,
    counts_as_failure,
    overridden,
    record,
)

POLICY = BreakerPolicy()
PROBE_MS = 60_000


def run(breaker: Breaker, outcomes: str, start_ms: int = 0, step_ms: int = 1000) -> Breaker:
    """``outcomes``: ``f`` a failure, ``s`` a success, one per ``step_ms``."""
    for i, outcome in enumerate(outcomes):
        breaker = record(breaker, POLICY, outcome == "f", start_ms + i * step_ms)
    return breaker


def opened(at_ms: int = 0) -> Breaker:
    breaker = run(Breaker(), "f" * 10, start_ms=at_ms - 9000)
    assert breaker.state is State.OPEN
    return breaker


def test_what_counts_as_a_failure() -> None:
    assert counts_as_failure("http_error", 500) is True
    assert counts_as_failure("http_error", 503) is True
    assert counts_as_failure("http_error", 429) is True
    assert counts_as_failure("timeout", None) is True
    assert counts_as_failure("connection_error", None) is True
    assert counts_as_failure("success", 204) is False
    # The endpoint answered: a 4xx is the message's problem, not the endpoint's health.
    assert counts_as_failure("http_error", 404) is False
    assert counts_as_failure("http_error", 400) is False
    # Never sent: says nothing about the endpoint.
    assert counts_as_failure("rejected", None) is None
    assert counts_as_failure("refused_by_policy", None) is None


def test_successes_alone_keep_nothing() -> None:
    breaker = run(Breaker(), "s" * 50)
    assert breaker.is_default()


def test_closed_stays_closed_below_the_minimum_attempts() -> None:
    breaker = run(Breaker(), "f" * 9)
    assert breaker.state is State.CLOSED
    assert (breaker.attempts, breaker.failures) == (9, 9)
    assert not breaker.is_default()


def test_closed_to_open_at_the_threshold() -> None:
    breaker = run(Breaker(), "fffffffss")  # 7 of 9
    assert breaker.state is State.CLOSED
    breaker = record(breaker, POLICY, False, 9000)  # 7 of 10 = 70 %
    assert breaker.state is State.OPEN
    assert breaker.open_until_ms == 9000 + POLICY.cool_down_ms
    assert breaker.changed_ms == 9000


def test_closed_stays_closed_below_the_rate() -> None:
    breaker = run(Breaker(), "ffffffssss" + "s" * 10)  # 6 of 10, then better
    assert breaker.state is State.CLOSED
    assert breaker.failure_rate() < 0.7


def test_the_window_starts_again_after_it_ends() -> None:
    # Nine failures, then the tenth after the window: a new window of one.
    breaker = run(Breaker(), "f" * 9)
    breaker = record(breaker, POLICY, True, 8000 + POLICY.window_ms)
    assert breaker.state is State.CLOSED
    assert (breaker.attempts, breaker.failures) == (1, 1)


def test_a_lone_exponential_decay_message_never_opens_it() -> None:
    # 1, 2, 4 ... 256 s, then 512 s: ten attempts never fit in the window.
    breaker, at = Breaker(), 0
    for interval in [2**n for n in range(9)] + [512] * 20:
        breaker = record(breaker, POLICY, True, at)
        assert breaker.state is State.CLOSED
        at += interval * 1000


def test_open_holds_everything_during_the_cool_down() -> None:
    breaker = opened(at_ms=0)
    assert blocks_claims(breaker, POLICY, 1)
    admission = admit(breaker, POLICY, 5, 1, PROBE_MS)
    assert admission.granted == 0
    assert admission.breaker.held == 5
    assert admission.breaker.state is State.OPEN


def test_open_ignores_outcomes_of_pushes_already_in_flight() -> None:
    breaker = opened(at_ms=0)
    assert record(breaker, POLICY, False, 10) == breaker
    assert record(breaker, POLICY, True, 10) == breaker


def test_open_to_half_open_after_the_cool_down_lets_probes_out() -> None:
    breaker = opened(at_ms=0)
    assert not blocks_claims(breaker, POLICY, POLICY.cool_down_ms)
    admission = admit(breaker, POLICY, 4, POLICY.cool_down_ms, PROBE_MS)
    assert admission.granted == POLICY.probes == 1
    after = admission.breaker
    assert after.state is State.HALF_OPEN
    assert after.changed_ms == POLICY.cool_down_ms
    assert after.probes_out == 1 and after.held == 3
    # Its probe out, a half-open breaker lets nothing else out.
    assert blocks_claims(after, POLICY, POLICY.cool_down_ms + 1)
    assert admit(after, POLICY, 2, POLICY.cool_down_ms + 1, PROBE_MS).granted == 0


def test_an_unanswered_probe_gives_its_place_up_after_its_lease() -> None:
    after = admit(opened(), POLICY, 1, POLICY.cool_down_ms, PROBE_MS).breaker
    later = POLICY.cool_down_ms + PROBE_MS
    assert not blocks_claims(after, POLICY, later)
    assert admit(after, POLICY, 1, later, PROBE_MS).granted == 1


def test_admissible_is_what_admit_lets_out() -> None:
    """What a claim gives back of a held backlog for a probe's turn is what ``admit`` grants."""
    policy = BreakerPolicy(probes=2)
    breaker = run(Breaker(), "f" * 10, start_ms=-9000)
    cool = breaker.open_until_ms
    assert admissible(breaker, policy, cool - 1) == 0  # cooling down
    assert admissible(breaker, policy, cool) == 2
    one_out = admit(breaker, policy, 1, cool, PROBE_MS).breaker
    assert admissible(one_out, policy, cool + 1) == 1
    assert admit(one_out, policy, 5, cool + 1, PROBE_MS).granted == 1
    assert admissible(admit(one_out, policy, 1, cool + 1, PROBE_MS).breaker, policy, cool + 2) == 0
    assert admissible(one_out, policy, cool + PROBE_MS) == 2  # its place lapsed
    held_open = overridden(breaker, Override.OPEN, cool)
    assert admissible(held_open, policy, cool) == 0 == admit(held_open, policy, 3, cool, 1).granted
    # All: closed, forced closed, or breakers off without an override.
    assert admissible(Breaker(), policy, cool) is None
    assert admissible(overridden(breaker, Override.CLOSED, cool), policy, cool) is None
    assert admissible(breaker, BreakerPolicy(enabled=False), cool - 1) is None
    assert admissible(held_open, BreakerPolicy(enabled=False), cool) == 0


def test_half_open_to_closed_on_a_successful_probe() -> None:
    half = admit(opened(), POLICY, 1, POLICY.cool_down_ms, PROBE_MS).breaker
    closed = record(half, POLICY, False, POLICY.cool_down_ms + 50)
    assert closed.state is State.CLOSED
    assert closed.is_default() and closed.changed_ms == POLICY.cool_down_ms + 50
    assert (closed.attempts, closed.failures, closed.held) == (0, 0, 0)
    assert admit(closed, POLICY, 7, POLICY.cool_down_ms + 60, PROBE_MS).granted == 7


def test_half_open_back_to_open_with_a_growing_cool_down() -> None:
    breaker, now, cool_downs = opened(), 0, []
    for _ in range(6):
        now = breaker.open_until_ms
        breaker = admit(breaker, POLICY, 1, now, PROBE_MS).breaker
        assert breaker.state is State.HALF_OPEN
        breaker = record(breaker, POLICY, True, now + 10)
        assert breaker.state is State.OPEN
        cool_downs.append(breaker.open_until_ms - (now + 10))
    assert cool_downs == [60_000, 120_000, 240_000, 300_000, 300_000, 300_000]


def test_turned_off_it_never_opens_and_never_holds() -> None:
    off = BreakerPolicy(enabled=False)
    breaker = Breaker()
    for i in range(50):
        breaker = record(breaker, off, True, i)
    assert breaker.state is State.CLOSED
    assert not blocks_claims(opened(), off, 1)
    assert admit(opened(), off, 3, 1, PROBE_MS).granted == 3
    # One left open when it was turned off closes at its next attempt.
    assert record(opened(), off, True, 2).state is State.CLOSED


def test_held_open_by_an_operator() -> None:
    held = overridden(Breaker(), Override.OPEN, 5)
    assert blocks_claims(held, POLICY, 10**12)
    assert admit(held, POLICY, 3, 10**12, PROBE_MS).granted == 0
    assert held.effective() is State.OPEN
    assert overridden(held, None, 6).is_default()


def test_forced_closed_by_an_operator() -> None:
    forced = overridden(opened(), Override.CLOSED, 5)
    assert forced.state is State.CLOSED and forced.effective() is State.CLOSED
    assert not blocks_claims(forced, POLICY, 6)
    assert admit(forced, POLICY, 3, 6, PROBE_MS).granted == 3
    # Still counted, so its health shows; but it lets everything out.
    failing = run(forced, "f" * 20, start_ms=10)
    assert failing.state is State.OPEN
    assert not blocks_claims(failing, POLICY, 20_000)
    assert admit(failing, POLICY, 3, 20_000, PROBE_MS).granted == 3


def test_scaled_times() -> None:
    scaled = POLICY.scaled(0.001)
    assert (scaled.window_ms, scaled.cool_down_ms, scaled.max_cool_down_ms) == (300, 30, 300)
    assert (scaled.failure_rate, scaled.min_attempts) == (POLICY.failure_rate, POLICY.min_attempts)
