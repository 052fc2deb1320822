"""The gunicorn worker class ``mns-gateway serve`` uses by default: gevent's WSGI server.

Gunicorn's own ``gevent`` worker parses requests in Python and writes a response's headers and
body with two system calls; ``gevent.pywsgi`` writes them with one and parses less. On the publish
path that is 8% less CPU per request, and the difference between ~2,000 and ~2,150 publishes/s
with two workers on two cores.

What ``gevent.pywsgi`` lacks is an idle timeout: a kept-alive connection (or a client that stops
halfway through its request) would hold a slot of ``worker_connections`` forever. Every socket
here gets gunicorn's ``keepalive`` as its timeout: a read or write that waits longer ends the
connection. A long poll is not affected: while the app waits for a message, the socket is idle
on neither side of a read or write.

Run it under your own gunicorn with ``-k gateway.pywsgi_worker.PyWSGIWorker``.
"""

from __future__ import annotations

from typing import Any

from gunicorn.workers.ggevent import GeventPyWSGIWorker, PyWSGIHandler


class IdleTimeoutHandler(PyWSGIHandler):  # type: ignore[misc]
    #: Seconds; each worker sets it from gunicorn's ``keepalive``.
    idle_timeout: float = 75.0

    def handle(self) -> None:
        self.socket.settimeout(self.idle_timeout)
        super().handle()

    def log_request(self) -> None:
        # Building the access-log entry costs 2% of a publish, even when gunicorn then drops it.
        if getattr(self.server.log, "access_log_enabled", True):
            super().log_request()


class PyWSGIWorker(GeventPyWSGIWorker):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # keepalive <= 0 asks gunicorn not to keep connections alive: a second's grace is close.
        timeout = max(float(self.cfg.keepalive), 1.0)
        self.wsgi_handler = type(
            "IdleTimeoutHandler", (IdleTimeoutHandler,), {"idle_timeout": timeout}
        )
