"""Delivery ids that grow with time: ``{ms:011x}{process token:8}{counter:013x}``, 32 lowercase
hex characters (the length of the random ids they replaced).

Every publish inserts one delivery per subscription, and every finished push deletes one,
through the deliveries' primary key. Random ids put each of those on a random page of that
index: at a fan-out of ten, a publish changed about ten of its pages, and each went into the
write-ahead log (synced before the 201) and back out at the checkpoint. Ids that grow with time
put inserts on the index's last pages and the deletes of a backlog pushed in order on its first
ones, where one page takes many rows.

Unique across processes and hosts as MessageIds and request ids are, by the per-process token
and counter of a :class:`~gateway.protocol.process_sequence.ProcessSequence`. Nothing depends
on their order: they only name a delivery (in leases, in the console, in a replay's answer).
"""

from __future__ import annotations

from gateway.protocol.process_sequence import ProcessSequence

_sequence = ProcessSequence()


def new_delivery_id(now_ms: int) -> str:
    """A new delivery's id; ``now_ms`` only orders it (any time will do)."""
    return f"{now_ms & 0xFFFFFFFFFFF:011x}{_sequence.token.lower()}{_sequence.next():013x}"
