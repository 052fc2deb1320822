"""MessageIds that sort by send time: ``{send ms:011X}-{process token}-{counter:08X}``.

Receive breaks ties between messages that became Active in the same millisecond by MessageId, so
ids must grow with send order; the per-process random token and counter keep ids unique across
gunicorn workers sharing one database without any coordination. The token is redrawn after a
fork, so a factory created before gunicorn forks its workers never hands two of them the same
sequence.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading


class MessageIdFactory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._token = ""
        self._counter = itertools.count(1)

    def new_id(self, now_ms: int) -> str:
        if self._pid != os.getpid():
            self._reset()
        return f"{now_ms:011X}-{self._token}-{next(self._counter):08X}"

    def _reset(self) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._token = secrets.token_hex(4).upper()
                self._counter = itertools.count(1)
                self._pid = os.getpid()
