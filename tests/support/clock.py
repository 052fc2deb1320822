"""The settable clock: every store, worker, app and receiver takes its time from an injected
callable, and tests hand them this one and move it by hand."""

from __future__ import annotations

import pytest

#: 2027-01-15 08:00:00 UTC: where a test's clock starts unless its module sets ``CLOCK_START``.
T0 = 1_800_000_000.0


class Clock:
    """Epoch seconds that move only when a test says so (``clock.now = ...``, ``advance``)."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture()
def clock(request: pytest.FixtureRequest) -> Clock:
    """A :class:`Clock` at the test module's ``CLOCK_START``, or at :data:`T0`."""
    return Clock(getattr(request.module, "CLOCK_START", T0))
