"""The push pipeline's hooks: what runs around every push attempt, registered once, in one order,
in the style of the operation layer's (:mod:`gateway.operations.hooks`).

A :class:`PushHook` may implement any of five moments:

- :meth:`PushHook.before`, when an attempt starts (the delivery's rate-limit grant taken);
- :meth:`PushHook.after`, when it ended, with its :class:`~gateway.delivery.records.Settlement`
  or the exception it raised (then the lease lapses and it is tried again);
- :meth:`PushHook.settled`, once a batch of outcomes is recorded, with what each filed in the
  dead letters (``None`` where nothing was; all ``None`` when the record failed);
- :meth:`PushHook.expired`, with the deliveries the worker's expiry pass filed as dead letters
  (their messages outlived the queue's retention before being delivered);
- :meth:`PushHook.transitions`, with the endpoint circuits' transitions this process made.

Every moment runs the hooks in registration order, so a later hook sees what an earlier one
left on the :class:`Push`: tracing comes first (it starts the attempt's span in ``before`` and
notes its trace id), and the operation log after it writes that trace id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.breaker.state import Transition
from gateway.delivery.records import DeliveryJob, Filed, Settlement
from gateway.observability.tracing import Span


@dataclass(slots=True)
class Push:
    """One attempt at a claimed delivery, as the hooks see it: ``span`` and ``trace_id`` are
    the tracing hook's (empty without tracing), ``undo`` what it resets when the attempt ends."""

    job: DeliveryJob
    span: Span | None = None
    trace_id: str = ""
    undo: Callable[[], None] | None = None


class PushHook:
    """A concern around push attempts; every moment does nothing unless overridden."""

    def before(self, push: Push) -> None:
        return None

    def after(self, push: Push, result: Settlement | None, error: BaseException | None) -> None:
        return None

    def settled(self, batch: Sequence[Settlement], letters: Sequence[Filed | None]) -> None:
        return None

    def expired(self, letters: Sequence[Filed]) -> None:
        return None

    def transitions(self, transitions: Sequence[Transition]) -> None:
        return None


class PushHooks:
    """The hooks of one worker, run around each attempt by :meth:`run`."""

    def __init__(self, hooks: Sequence[PushHook] = ()) -> None:
        self._hooks = tuple(hooks)

    def run(self, push: Push, work: Callable[[Push], Settlement]) -> Settlement:
        """``work(push)`` between the hooks' ``before`` and ``after``."""
        for hook in self._hooks:
            hook.before(push)
        try:
            result = work(push)
        except BaseException as error:
            for hook in self._hooks:
                hook.after(push, None, error)
            raise
        for hook in self._hooks:
            hook.after(push, result, None)
        return result

    def settled(self, batch: Sequence[Settlement], letters: Sequence[Filed | None]) -> None:
        for hook in self._hooks:
            hook.settled(batch, letters)

    def expired(self, letters: Sequence[Filed]) -> None:
        for hook in self._hooks:
            hook.expired(letters)

    def transitions(self, transitions: Sequence[Transition]) -> None:
        for hook in self._hooks:
            hook.transitions(transitions)
