"""gevent's monkey-patching, the first thing a gateway process on greenlets does."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import metadata
from typing import Any


def patch_all() -> None:
    """``gevent.monkey.patch_all()``, the installed distributions' entry points read once."""
    from gevent import monkey

    with entry_points_read_once():
        monkey.patch_all()


@contextlib.contextmanager
def entry_points_read_once() -> Iterator[None]:
    """gevent looks for plugins of each of its patching events, two per module patched, and
    each look reads every installed distribution's metadata again: a process start spent about
    0.15 s of CPU on it with 126 distributions installed
    (docs/benchmarks.md#a-gateways-start-gevents-patching). Nothing is installed while
    a process patches itself, so one read answers them all; the function is given back after."""
    read = metadata.entry_points
    every = read()

    def entry_points(**selection: Any) -> Any:  # what ``read`` answers, with or without one
        return every.select(**selection) if selection else every

    metadata.entry_points = entry_points
    try:
        yield
    finally:
        metadata.entry_points = read
