"""The breaker's store side (docs/delivery.md#endpoint-health), the one module of the store the
delivery store asks about breakers: what a claim and a settle do for them inside their own
transactions (:mod:`gateway.breaker` says why there), the expiry's backstop, overrides and
the health listing; the events published for transitions and the listeners told of them.

Statements: :mod:`~gateway.store.sql.breaker_sql` (the breakers' rows) and
:mod:`~gateway.store.sql.held_sql` (an open breaker's backlog held out of the due range).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gateway.breaker.state import Breaker, BreakerPolicy, Override, State, Transition
from gateway.delivery.records import DeliveryJob, Settlement
from gateway.store.notify.notifier import Wakeups
from gateway.store.sql import breaker_sql, held_sql
from gateway.store.sql.connection import Connection

#: A delivery whose message outlived the topic's retention while its endpoint's breaker was
#: open is dead-lettered with this reason, not "expired" (docs/delivery.md#endpoint-health).
CIRCUIT_OPEN_REASON = "endpoint circuit open"

Listener = Callable[[list[Transition]], None]


@dataclass(slots=True)
class ClaimBreakers:
    """What one claim's transaction learned of the breakers: those not closed when it began
    (``seen``), the subscriptions it leaves out (``blocked``), where the next hold's reads
    start (``read_past``) and the transitions it made."""

    seen: dict[str, Breaker]
    blocked: set[str]
    read_past: dict[str, int] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)


class BreakerStore:
    """Every subscription's breaker, as the delivery store's claims and settles apply it."""

    def __init__(
        self,
        policy: BreakerPolicy,
        wakeups: Wakeups,
        new_message_id: Callable[[int], str],
    ) -> None:
        self.policy = policy
        #: A topic of this gateway each transition is published to ("" for none).
        self.events_topic = ""
        self._wakeups = wakeups
        self._new_message_id = new_message_id
        self._listeners: list[Listener] = []
        # Where the next hold's read of each held subscription starts (held_sql.read_past),
        # past the dead index entries its earlier holds left. Per process: a replica without
        # it reads from the subscription's first delivery, as before.
        self._read_past: dict[str, int] = {}

    # a claim's transaction ---------------------------------------------------------------------
    def before_claim(self, conn: Connection, now_ms: int) -> ClaimBreakers:
        """Leave out the subscriptions whose breaker is open (or probing): their due backlog is
        held out of the due range; a probe's turn gives back as many of it as probes go out."""
        seen = breaker_sql.not_closed(conn)
        view = ClaimBreakers(seen, breaker_sql.blocked(seen, self.policy, now_ms))
        self._hold(conn, view, now_ms)
        if turns := breaker_sql.probe_turns(conn, seen, view.blocked, self.policy, now_ms):
            held_sql.give_back(conn, turns)  # a probe's turn (rare)
        return view

    def _hold(self, conn: Connection, view: ClaimBreakers, now_ms: int) -> None:
        """The blocked subscriptions' due deliveries held out of the due range (held_sql.hold),
        so that this claim and the next do not walk past them."""
        found = held_sql.due_to_hold(conn, view.blocked, now_ms, self._read_past)
        held = view.blocked
        if found and conn.dialect.lock_row:
            # Read again under a share lock before holding: a settle that closes one (and
            # gives its deliveries back) has either committed, and it reads closed, or waits
            # for this claim. Else, on PostgreSQL, a claim that read it blocked just before
            # could hold the whole backlog again just after. Only to move something: else, or
            # if it has closed since, the claim merely leaves the subscription out this once.
            # SQLite's writers take turns.
            locked = breaker_sql.breakers(conn, sorted(found), lock=True, share=True)
            still = breaker_sql.blocked(locked, self.policy, now_ms)
            held = view.blocked - (found.keys() - still)
            found = {r: ids for r, ids in found.items() if r in still}
        held_sql.hold(conn, found, now_ms)
        view.read_past = held_sql.read_past(held, found, now_ms)

    def admit_claimed(
        self,
        conn: Connection,
        owner: str,
        jobs: list[DeliveryJob],
        view: ClaimBreakers,
        now_ms: int,
        lease_ms: int,
    ) -> list[DeliveryJob]:
        """What the claim may push of ``jobs``; the rest is handed back, untouched."""
        admitted = breaker_sql.admit_claimed(
            conn, owner, jobs, self.policy, now_ms, lease_ms, seen=view.seen
        )
        view.transitions = admitted.transitions
        self._publish_events(conn, view.transitions)
        return admitted.jobs

    def claimed(self, view: ClaimBreakers) -> None:
        """The claim committed: keep where its holds read to, and tell of its transitions."""
        self._read_past = view.read_past
        self.announce(view.transitions)

    # a settle's transaction --------------------------------------------------------------------
    def record_settled(
        self, conn: Connection, settlements: Sequence[Settlement], now_ms: int
    ) -> list[Transition]:
        """Count the attempts into their breakers (last in the settle, as a claim locks its
        deliveries before their breakers: never the reverse); a closed one's backlog back."""
        transitions = breaker_sql.record_settled(conn, settlements, self.policy, now_ms)
        held_sql.unhold(conn, {t.resource for t in transitions if t.after is State.CLOSED})
        self._publish_events(conn, transitions)
        return transitions

    # the expiry --------------------------------------------------------------------------------
    def holding(self, conn: Connection) -> set[str]:
        """The subscriptions whose breaker holds their deliveries now (what claims obey)."""
        return {
            r for r, b in breaker_sql.not_closed(conn).items() if b.effective() is not State.CLOSED
        }

    def expiry_reason(self, job: DeliveryJob, holding: set[str]) -> str:
        return CIRCUIT_OPEN_REASON if breaker_sql.resource_of(job) in holding else "expired"

    def tidy(self, conn: Connection, holding: set[str]) -> None:
        """Held deliveries whose breaker no longer holds them (closed without this replica's
        knowing how, or gone) given back here at the latest; gone subscriptions' breakers
        forgotten."""
        held_sql.unhold(conn, held_sql.holding(conn) - holding)
        breaker_sql.purge_orphans(conn)

    # operators ---------------------------------------------------------------------------------
    def read(self, conn: Connection, now_ms: int) -> tuple[dict[str, Breaker], dict[str, int]]:
        """Every kept breaker, and how many deliveries wait, due, for each."""
        return breaker_sql.all_breakers(conn), breaker_sql.waiting(conn, now_ms)

    def override(
        self, conn: Connection, resource: str, override: Override | None, now_ms: int
    ) -> tuple[Breaker, list[Transition]]:
        breaker, transition = breaker_sql.set_override(conn, resource, override, now_ms)
        if breaker.effective() is State.CLOSED:
            held_sql.unhold(conn, [resource])
        transitions = [transition] if transition else []
        self._publish_events(conn, transitions)
        return breaker, transitions

    # transitions -------------------------------------------------------------------------------
    def on_transitions(self, callback: Listener) -> None:
        """Call ``callback`` with the breaker transitions this process makes, once committed."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Listener) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def _publish_events(self, conn: Connection, transitions: list[Transition]) -> None:
        """Operator events (docs/delivery.md#operator-events), in the transaction that made the
        transitions; the workers are woken once it is committed (:meth:`announce`)."""
        if transitions and self.events_topic:
            breaker_sql.publish_events(conn, transitions, self.events_topic, self._new_message_id)

    def announce(self, transitions: list[Transition]) -> None:
        if transitions and self.events_topic:
            self._wakeups.announce_deliveries()
        for callback in list(self._listeners) if transitions else ():
            callback(transitions)
