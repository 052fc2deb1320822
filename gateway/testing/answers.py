"""What a :class:`~gateway.testing.pushes.PushRecorder` answers: the pure part, no server.

A test scripts the endpoint's next answers (``recorder.answer(500, 503, Answer(502, body=page))``)
and, once the script is used up, every request gets the default status. An answer can be *held*:
the endpoint does not answer until the test calls ``release()`` (or a bound passes), which is how
a test acts while the gateway waits on a slow endpoint.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

#: The longest an answer is held when the test never releases it: a broken test fails, it
#: does not hang.
MAX_HOLD_SECONDS = 30.0


@dataclass(frozen=True)
class Answer:
    """One answer: a status, optionally a body with its content type; ``held`` waits for
    :meth:`Answers.release` before answering. ``connection`` is what becomes of the connection
    afterwards: ``"keep-alive"``, ``"close"`` (says ``Connection: close`` and closes, as servers
    with short keep-alives do) or ``"drop"`` (closes without saying so: a keep-alive connection
    that timed out while idle)."""

    status: int = 204
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    held: bool = False
    connection: Literal["keep-alive", "close", "drop"] = "keep-alive"
    #: More response headers, e.g. ``(("Location", "/elsewhere"),)`` with a 302.
    headers: tuple[tuple[str, str], ...] = ()


def as_answer(answer: int | Answer) -> Answer:
    return answer if isinstance(answer, Answer) else Answer(int(answer))


class Answers:
    """The script, the default and the hold; thread-safe (one request per handler thread)."""

    def __init__(self, default: int | Answer = 204, *, max_hold: float = MAX_HOLD_SECONDS) -> None:
        #: The answer once the script is used up.
        self.default = as_answer(default)
        self.max_hold = max_hold
        self._script: deque[Answer] = deque()
        self._holding = False
        self._releases = 0
        self._lock = threading.Condition()

    def script(self, answers: Iterable[int | Answer]) -> None:
        """Answer the next requests with these, in turn, then with the default."""
        with self._lock:
            self._script = deque(as_answer(answer) for answer in answers)

    def next(self) -> tuple[Answer, int]:
        """The answer for a request that just arrived (held if every answer is held now), and
        the releases so far: a held request waits for the next one (:meth:`wait_released`)."""
        with self._lock:
            answer = self._script.popleft() if self._script else self.default
            if self._holding and not answer.held:
                answer = replace(answer, held=True)
            return answer, self._releases

    def hold(self) -> None:
        """Hold every answer from now on, until :meth:`release`."""
        with self._lock:
            self._holding = True

    def release(self) -> None:
        """Let every held answer go, and stop holding new ones."""
        with self._lock:
            self._holding = False
            self._releases += 1
            self._lock.notify_all()

    def wait_released(self, seen: int) -> bool:
        """Block until a release after ``seen`` (from :meth:`next`), at most ``max_hold``."""
        with self._lock:
            return self._lock.wait_for(lambda: self._releases > seen, self.max_hold)

    def reset(self, default: int | Answer = 204) -> None:
        """Forget the script and the hold (releasing what waits); answer ``default``."""
        self.release()
        with self._lock:
            self._script.clear()
            self.default = as_answer(default)
