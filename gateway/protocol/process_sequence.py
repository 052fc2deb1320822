"""A random per-process token and a counter: ids unique across processes and hosts without any
coordination, and without a system call per id.

Request ids and MessageIds both need this. The token is redrawn in a forked child, so gunicorn
workers forked from one preloaded app never share a sequence. One fork hook serves every
sequence alive at the time, instead of a hook per sequence (each store a test creates makes one,
and hooks can never be unregistered) or an ``os.getpid()`` check per id.
"""

from __future__ import annotations

import itertools
import os
import secrets
import weakref


class ProcessSequence:
    """``token`` (8 uppercase hex characters) is this process's; ``next()`` counts from 1."""

    def __init__(self) -> None:
        self.reseed()
        _alive.add(self)

    def reseed(self) -> None:
        self.token = secrets.token_hex(4).upper()
        self._counter = itertools.count(1)

    def next(self) -> int:
        return next(self._counter)


_alive: weakref.WeakSet[ProcessSequence] = weakref.WeakSet()


def _reseed_alive() -> None:
    for sequence in list(_alive):
        sequence.reseed()


os.register_at_fork(after_in_child=_reseed_alive)
