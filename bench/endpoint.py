"""A lean push endpoint for benchmarks: asyncio, keep-alive, answers 204, records latencies.

    python bench/endpoint.py PORT [--hang] [--tls CERT KEY]

With ``--tls`` it serves HTTPS with that certificate and key (PEM files). Every POST is
answered ``204`` (or, with ``--hang``, never: a dead endpoint that times out every
push). ``GET /stats`` returns JSON: pushes received, first/last arrival (epoch s), arrivals per
second (``per_second``, keyed by epoch second) and the publish-to-delivery latencies in ms
(arrival time minus ``x-mns-publish-time``). ``GET /count`` returns only the count and the
first/last arrival (cheap to poll during a long run). ``GET /reset`` clears them. Cheap per
request so that the gateway, not the endpoint, is what is measured.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import sys
import time

STATS: dict[str, object] = {}
#: Only two headers matter here; searching for them beats parsing every header of every push.
CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
PUBLISH_TIME = re.compile(rb"\r\nx-mns-publish-time:[ \t]*(\d+)", re.IGNORECASE)


def reset() -> None:
    STATS.update(count=0, first=None, last=None, latencies_ms=[], per_second={})


class PushProtocol(asyncio.Protocol):
    def __init__(self, hang: bool) -> None:
        self.hang = hang
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
            length_header = CONTENT_LENGTH.search(head)
            length = int(length_header.group(1)) if length_header else 0
            if len(rest) < length:
                return
            self.buffer = rest[length:]
            self.handle(head)

    def handle(self, head: bytes) -> None:
        method, target, _ = head.split(b" ", 2)
        if method == b"GET":
            if target == b"/reset":
                reset()
            shown = STATS
            if target == b"/count":
                shown = {key: STATS[key] for key in ("count", "first", "last")}
            body = json.dumps(shown).encode()
            self.transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )  # type: ignore[attr-defined]
            return
        if self.hang:
            return
        now = time.time()
        STATS["count"] = int(STATS["count"]) + 1  # type: ignore[call-overload]
        STATS["first"] = STATS["first"] or now
        STATS["last"] = now
        second = str(int(now))
        per_second: dict[str, int] = STATS["per_second"]  # type: ignore[assignment]
        per_second[second] = per_second.get(second, 0) + 1
        published = PUBLISH_TIME.search(head)
        if published:
            STATS["latencies_ms"].append(now * 1000 - int(published.group(1)))  # type: ignore[attr-defined]
        self.transport.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")  # type: ignore[attr-defined]


async def main(port: int, hang: bool, tls: ssl.SSLContext | None = None) -> None:
    reset()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: PushProtocol(hang), "127.0.0.1", port, backlog=1024, ssl=tls
    )
    async with server:
        await server.serve_forever()


def _tls(args: list[str]) -> ssl.SSLContext | None:
    if "--tls" not in args:
        return None
    cert, key = args[args.index("--tls") + 1 : args.index("--tls") + 3]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), "--hang" in sys.argv[2:], _tls(sys.argv[2:])))
