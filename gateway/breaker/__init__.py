"""The endpoint breaker, in one place (docs/delivery.md#endpoint-health), pure.

One name: the **breaker** (what operators see is its circuit: ``subscriptions circuit``, the
``EndpointCircuit`` record, the console's circuits). Its parts:

- :mod:`~gateway.breaker.state`: the state machine (closed, open, half-open), what counts as a
  failure, admission of claimed deliveries, overrides;
- :mod:`~gateway.breaker.events`: the ``EndpointCircuit`` operation-log record, the operator
  event's body, and the guard against a forged one;
- :mod:`~gateway.breaker.failing_routes`: a worker's route pause (a failed push pauses its route
  until recorded; a timeout also waits for its wave);
- :mod:`~gateway.breaker.dispatch_buffer`: what a worker has claimed and is pushing per route,
  with a route's first share until it answers;
- its store side, behind one module of the store: :mod:`gateway.store.breakers` (statements in
  ``store/sql/breaker_sql.py`` and ``store/sql/held_sql.py``).

**The trade-off: the breaker's work is done inside the claim's and the settle's transactions.**
A claim reads the breakers that are not closed, holds an open one's due backlog out of the due
range, lets a probe's turn out and admits what it claimed, all in the one write transaction that
leases the deliveries; a settle counts the outcomes into the breakers and gives a closed one's
backlog back in the transaction that records them. So every worker and replica shares each
breaker exactly (no push is admitted past a breaker another process just opened, no backlog is
held behind one another just closed), an operator event is published once, by the transaction
that made its transition, and a crash leaves nothing half done. The price is paid there: every claim
reads the breakers that are not closed (``push_breakers`` keeps no row for a healthy one, so
with none open that read finds nothing), and while some breaker is not closed a claim takes a
few more statements and row locks; a settle reads, locked, the breaker rows of the
subscriptions whose outcomes it counts, so the settles of one failing endpoint's outcomes queue
behind each other, and a claim holding or admitting for it waits for them. A breaker kept apart
(in memory, or in its own transaction) would cost claims nothing and be wrong across replicas;
docs/benchmarks.md#endpoint-health has the measurements.

The worker side (route pause, first share) is per process and only saves attempts between a
failure and its record; the store's breaker decides.
"""
