"""``x-mns-request-id`` values: 24 uppercase hex characters, like the service's.

``{epoch seconds:08X}{process token:8}{counter:08X}``: the random per-process token and the
counter keep ids unique across processes and hosts without a system call per request (every API
response and every push carries one). The token is redrawn in a forked child, so gunicorn
workers forked from one preloaded app never share a sequence.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time


class _Sequence:
    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        self.token = secrets.token_hex(4).upper()
        self.counter = itertools.count(1)


_sequence = _Sequence()
os.register_at_fork(after_in_child=_sequence.reseed)


def new_request_id() -> str:
    seconds = int(time.time()) & 0xFFFFFFFF
    return f"{seconds:08X}{_sequence.token}{next(_sequence.counter) & 0xFFFFFFFF:08X}"
