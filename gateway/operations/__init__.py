"""The operation layer: each MNS operation written once, between the front ends and the store.

A front end (the XML API, the JSON API, the console, the control plane, the admin API, the
command line) parses its request into typed values, names who asks in a
:class:`~gateway.operations.calls.Caller`, calls one function here, and renders what it returns.
The function applies every rule of the operation once (limits, ownership, rate limits, the store
call, metrics) and runs the :mod:`hooks <gateway.operations.hooks>` registered once for every
front end: tracing, the operation log, metrics and outage bookkeeping
(docs/architecture.md#the-operation-layer).

Nothing here knows Flask, a wire format or a request global.
"""

from gateway.operations.calls import Call, Caller
from gateway.operations.hooks import Hook, Hooks
from gateway.operations.wiring import Operations

__all__ = ["Call", "Caller", "Hook", "Hooks", "Operations"]
