"""Hooks: what runs around every operation, registered once, in one order, for every front end.

Modelled on dramatiq's middleware. A :class:`Hook` may implement any of three moments:

- :meth:`Hook.before`, when the operation starts, before any rule is applied;
- :meth:`Hook.drafted`, with the messages about to be stored (SendMessage, BatchSendMessage,
  PublishMessage), which it may return changed: tracing adds the creation context there, so a
  message is built once and stored with it;
- :meth:`Hook.after`, when the operation ended, with its result or the exception it raised.

Every moment runs the hooks in registration order, so a hook registered later sees what an
earlier one left: tracing comes first, and the operation log after it writes the span's trace
id, whichever moment started the span.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from gateway.operations.calls import Call

Result = TypeVar("Result")
Draft = TypeVar("Draft")


class Hook:
    """A concern around operations; every moment does nothing unless overridden."""

    def before(self, call: Call) -> None:
        return None

    def drafted(self, call: Call, drafts: list[Draft]) -> list[Draft]:
        return drafts

    def after(self, call: Call, result: object, error: BaseException | None) -> None:
        return None


class Hooks:
    """The hooks of one application, run around each operation by :meth:`run`.

    Each moment keeps only the hooks that act on it: an operation pays nothing for a moment
    its hooks leave to :class:`Hook`'s default.
    """

    def __init__(self, hooks: Sequence[Hook] = ()) -> None:
        self._before = [h.before for h in hooks if type(h).before is not Hook.before]
        self._drafted = [h.drafted for h in hooks if type(h).drafted is not Hook.drafted]
        self._after = [h.after for h in hooks if type(h).after is not Hook.after]

    def run(self, call: Call, work: Callable[[Call], Result]) -> Result:
        """``work(call)`` between the hooks' ``before`` and ``after``."""
        for before in self._before:
            before(call)
        try:
            result = work(call)
        except BaseException as error:
            for after in self._after:
                after(call, None, error)
            raise
        for after in self._after:
            after(call, result, None)
        return result

    def drafted(self, call: Call, drafts: list[Draft]) -> list[Draft]:
        for drafted in self._drafted:
            drafts = drafted(call, drafts)
        return drafts
