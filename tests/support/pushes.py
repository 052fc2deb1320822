"""The shipped push recorder (gateway.testing.PushRecorder) as the suite's tests use it against a
gateway process of their own."""

from __future__ import annotations

from collections import Counter

from gateway.testing import Answer, PushRecorder

#: How long a held answer waits for ``release()`` at most (the gateway's push times out first).
MAX_HOLD = 30.0

#: Held until the test releases it or ends: the gateway's push times out, as on a hung endpoint.
HANG = Answer(500, held=True)

#: Held until the test releases it, then answered as a success: a slow endpoint.
HOLD = Answer(204, held=True)


def pushes_to(gateway_url: str, *answers: int | Answer) -> PushRecorder:
    """A recorder verifying each push with the certificate the gateway at ``gateway_url``
    serves, answering ``answers`` first; use it as a context manager."""
    recorder = PushRecorder(f"{gateway_url}/certs/", max_hold=MAX_HOLD)
    recorder.answer(*answers)
    return recorder


def raw_pushes(*answers: int | Answer) -> PushRecorder:
    """A raw recorder (verifies nothing), answering ``answers`` first: for pushes from an
    in-process sender, whose certificate is served nowhere and whose Date is the test's clock."""
    recorder = PushRecorder.raw(max_hold=MAX_HOLD)
    recorder.answer(*answers)
    return recorder


def arrivals(recorder: PushRecorder) -> Counter[str]:
    """How many times each MessageId was pushed to ``recorder``."""
    return Counter(push.message_id for push in recorder.received)
