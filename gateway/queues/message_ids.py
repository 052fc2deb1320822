"""MessageIds that sort by send time: ``{send ms:011X}-{process token}-{counter:08X}``.

Receive breaks ties between messages that became Active in the same millisecond by MessageId, so
ids must grow with send order; the per-process token and counter of a
:class:`~gateway.protocol.process_sequence.ProcessSequence` keep ids unique across gunicorn workers
sharing one database without any coordination, also when the factory was created before
gunicorn forked them.
"""

from __future__ import annotations

from gateway.protocol.process_sequence import ProcessSequence


class MessageIdFactory:
    def __init__(self) -> None:
        self._sequence = ProcessSequence()

    def new_id(self, now_ms: int) -> str:
        return f"{now_ms:011X}-{self._sequence.token}-{self._sequence.next():08X}"


def first_id_at(ms: int) -> str:
    """A string no MessageId made at ``ms`` or later sorts below (and every one made earlier
    does): a range of ids is a range of send times (the delivered history's purge uses it)."""
    return f"{ms:011X}"
