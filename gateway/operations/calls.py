"""Who asks for an operation, and the operation under way: the values hooks see.

A :class:`Caller` is made by the front end, once per request, from what it alone knows (the
request id, the client's address, when the request arrived, the trace context it carried). A
:class:`Call` is made by the operation from the caller: which MNS operation, on which queue or
topic. Hooks read both and may leave the call's span on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gateway.observability.operations import Action, Field, RequestFacts
from gateway.observability.tracing import Span


@dataclass
class Caller:
    """The requester of one or more operations, as the front end saw them.

    ``span`` is the request's span once the tracing hook started one; the front end ends it,
    knowing the status it answered with. ``started`` is on the ``monotonic`` clock.
    """

    request_id: str = ""
    remote_address: str = ""
    started: float = field(default_factory=time.monotonic)
    #: The request's own ``traceparent``/``tracestate``, already checked (empty: none).
    trace_parent: Mapping[str, str] = field(default_factory=dict)
    #: When the request arrived, in epoch nanoseconds: the span is back-dated to it.
    arrived_ns: int | None = None
    span: Span | None = None
    monotonic: Callable[[], float] = time.monotonic


#: What the command line and other callers with no request pass.
def local_caller() -> Caller:
    return Caller(request_id="", remote_address="127.0.0.1")


@dataclass
class Call:
    """One operation under way: what it is, on what, for whom.

    ``kind`` is the messaging operation type of the semantic conventions (``send``,
    ``receive``, ``settle``), empty for the operations that manage resources.
    """

    action: Action | str
    resource: Field
    name: str
    caller: Caller
    kind: str = ""

    def facts(self, account_id: str) -> RequestFacts:
        """What every operation-log record of this call shares."""
        caller = self.caller
        span = caller.span
        return RequestFacts(
            resource=self.resource,
            name=self.name,
            request_id=caller.request_id,
            remote_address=caller.remote_address,
            account_id=account_id,
            process_time_ms=(caller.monotonic() - caller.started) * 1000,
            trace_id=span.trace_id if span is not None else "",
        )
