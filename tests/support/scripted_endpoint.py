"""A real HTTP endpoint on 127.0.0.1 that answers pushes from a script and records them."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.gateway.pushing.conftest import ReceivedRequest
from tests.local_server import local_server


@dataclass
class ScriptedEndpoint:
    """Answers the n-th request with ``script[n]``, then ``default``.

    An entry is a status, ``"hang"`` (no answer until ``hang`` is set, then 500) or ``"hold"``
    (no answer until ``hang`` is set, then ``default``).
    """

    script: list[int | str] = field(default_factory=list)
    default: int = 204
    url: str = ""
    requests: list[ReceivedRequest] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    hang: threading.Event = field(default_factory=threading.Event)

    def answer(self) -> int | str:
        with self.arrived:
            return self.script.pop(0) if self.script else self.default

    def record(self, request: ReceivedRequest) -> None:
        with self.arrived:
            self.requests.append(request)
            self.arrived.notify_all()

    def wait_for(self, count: int, timeout: float = 15) -> list[ReceivedRequest]:
        """Block until ``count`` requests arrived (bounded), then return them all."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.requests) < count and time.monotonic() < deadline:
                self.arrived.wait(deadline - time.monotonic())
            assert len(self.requests) >= count, f"{len(self.requests)} of {count} pushes arrived"
            return list(self.requests)


def _handler(endpoint: ScriptedEndpoint) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            answer = endpoint.answer()
            endpoint.record(ReceivedRequest("POST", self.path, list(self.headers.items()), body))
            if answer in ("hang", "hold"):
                endpoint.hang.wait(30)
                answer = 500 if answer == "hang" else endpoint.default
            self.send_response(int(answer))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    return Handler


@contextmanager
def scripted_endpoint(*script: int | str, port: int = 0) -> Iterator[ScriptedEndpoint]:
    endpoint = ScriptedEndpoint(list(script))
    with local_server(_handler(endpoint), port=port) as endpoint.url:
        try:
            yield endpoint
        finally:
            endpoint.hang.set()  # a held request ends before the server stops
