"""How psycopg waits for the server under gevent: on the event loop itself, one greenlet blocked.

psycopg consumes a generator that says, each time it would block, whether it waits to read, to
write or both; a *wait function* waits for that and sends back what became ready. psycopg picks
one when it is imported: a C one that blocks the whole process (unusable under gevent) unless
gevent had already patched ``select``, else ``wait_poll``, which under gevent builds a poll
object, registers the socket and starts a watcher for every wait.

:func:`wait_on_hub` waits on one libev/libuv watcher on the hub instead, which costs a query
less client CPU (docs/benchmarks.md#waiting-for-postgresql-on-gevents-hub). A wait to write
(or to write or read) first asks the socket, without blocking, whether it is ready already:
in pipeline mode psycopg waits once per statement it sends, and the socket can almost always
take it at once, so a round of the hub for each would cost more than the statement
(docs/benchmarks.md#a-writable-socket-is-not-waited-for). Waits with a
deadline (``connection.notifies(timeout=…)``) keep psycopg's own function, which raises
psycopg's timeout error itself. A greenlet killed while it waits leaves no watcher behind: the
hub stops it, and it is closed on the way out.
"""

from __future__ import annotations

import functools
import select
import sys
from collections.abc import Callable
from typing import Any, Final

from psycopg import waiting
from psycopg.waiting import Ready, Wait

#: libev/libuv event masks (1 read, 2 write) per wait, and what is reported ready after it.
_EVENTS: Final = {Wait.R: 1, Wait.W: 2, Wait.RW: 3}
#: For ``RW`` both are reported: the generator's reading and flushing never block (libpq is in
#: non-blocking mode), so the one of the two that was not ready just does nothing.
_READY: Final = {Wait.R: Ready.R, Wait.W: Ready.W, Wait.RW: Ready.RW}
#: poll(2) events asked for a wait that may be answered without the hub, and what poll reports.
_ASKED: Final = {Wait.W: select.POLLOUT, Wait.RW: select.POLLOUT | select.POLLIN}
_TROUBLE: Final = select.POLLERR | select.POLLHUP | select.POLLNVAL


def gevent_patched() -> bool:
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("select")


#: psycopg's cooperative wait function, for waits with a deadline: ``wait_select`` looks
#: ``select.select`` up on every call, so it finds gevent's once gevent patched.
_with_deadline: Any = waiting.wait_select


def cooperative_waiting() -> None:
    """If gevent has patched ``select``, make psycopg wait on gevent's hub (a no-op otherwise,
    and when done already). Without gevent psycopg keeps its own choice."""
    global _with_deadline
    if gevent_patched() and waiting.wait is not wait_on_hub:
        # psycopg's C function blocks the process; its others cooperate once gevent patched.
        if waiting.wait is not getattr(waiting, "wait_c", None):
            _with_deadline = waiting.wait
        waiting.wait = wait_on_hub


def wait_on_hub(gen: Any, fileno: int, interval: float = 0.0, timeout: float | None = None) -> Any:
    """psycopg's wait function contract (``psycopg.waiting.wait``), on gevent's hub.

    ``interval`` only bounds how long psycopg's own functions block before checking for a
    KeyboardInterrupt; a greenlet blocks nothing, so it is not needed here.
    """
    if timeout is not None:
        return _with_deadline(gen, fileno, interval, timeout)
    from gevent import get_hub

    hub = get_hub()
    io = hub.loop.io
    try:
        state = next(gen)
        while True:
            if state is not Wait.R and (ready := _ready_now(fileno, state)):
                state = gen.send(ready)
                continue
            watcher = io(fileno, _EVENTS[state])
            try:
                hub.wait(watcher)
            finally:
                watcher.close()
            state = gen.send(_READY[state])
    except StopIteration as done:
        return done.value


def _ready_now(fileno: int, state: Wait) -> Ready:
    """What of ``state`` the socket is ready for at once (``Ready.NONE`` if nothing), asked of
    poll(2) with no timeout. An error or a hang-up reports all that was asked, for psycopg's
    reading or flushing to find it."""
    poller = _original_poll()()
    poller.register(fileno, _ASKED[state])
    found = poller.poll(0)
    if not found:
        return Ready.NONE
    events = found[0][1]
    if events & _TROUBLE:
        return _READY[state]
    return Ready((events & select.POLLIN and Ready.R) | (events & select.POLLOUT and Ready.W))


@functools.cache
def _original_poll() -> Callable[[], Any]:
    """``select.poll`` as the standard library has it: gevent's would go through the hub,
    which is what a check without a timeout is meant to spare."""
    from gevent.monkey import get_original

    return get_original("select", "poll")  # type: ignore[no-any-return]
