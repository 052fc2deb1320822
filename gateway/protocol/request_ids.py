"""``x-mns-request-id`` values: 24 uppercase hex characters, like the service's.

``{epoch seconds:08X}{process token:8}{counter:08X}``: every API response and every push carries
one, so the token and counter come from a
:class:`~gateway.protocol.process_sequence.ProcessSequence`
(unique across processes, redrawn after a fork) rather than a random draw per request.
"""

from __future__ import annotations

import time

from gateway.protocol.process_sequence import ProcessSequence

_sequence = ProcessSequence()


def new_request_id() -> str:
    seconds = int(time.time()) & 0xFFFFFFFF
    return f"{seconds:08X}{_sequence.token}{_sequence.next() & 0xFFFFFFFF:08X}"
