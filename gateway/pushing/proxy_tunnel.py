"""Connecting to the egress proxy, and the CONNECT tunnel an https push goes through.

What is said to the proxy is :mod:`gateway.delivery.proxy`'s; this is the socket side. A proxy
that cannot be reached, or that answers CONNECT with anything but 2xx (407 when its credentials
are wrong, 403 when its rules refuse the endpoint), is a :class:`ProxyError`: that push's
connection error, its text the proxy's answer, as the operation log shows it. A proxy that does
not answer in time is the push's timeout, as an endpoint's silence is.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

from gateway.delivery.proxy import (
    MAX_CONNECT_ANSWER_BYTES,
    PushProxy,
    connect_request,
    parse_connect_answer,
)
from gateway.errors.delivery import ProxyError

#: ``connect(addresses, port)``: the first of the addresses that answers, as a socket.
Connector = Callable[[Sequence[str], int], socket.socket]


def connect_to_proxy(
    proxy: PushProxy,
    resolver: Callable[[str, int], Sequence[str]],
    connect: Connector,
) -> socket.socket:
    """A connection to the proxy (its address is not the egress policy's to judge: the
    endpoint's is, before this is called)."""
    try:
        addresses = resolver(proxy.host, proxy.port)
        if not addresses:
            raise OSError(f"{proxy.host} resolves to nothing")
        return connect(addresses, proxy.port)
    except TimeoutError:
        raise
    except OSError as exc:
        raise ProxyError(f"cannot connect to the proxy {proxy.shown}: {exc}") from exc


def open_tunnel(
    sock: socket.socket, proxy: PushProxy, authority: str, remaining: Callable[[], float]
) -> None:
    """Ask the proxy on ``sock`` for a tunnel to ``authority`` (``host:port``); return once it
    is open, so TLS to the endpoint can start on ``sock``. ``remaining()`` gives the seconds
    left for the push (and raises once there are none)."""
    sock.settimeout(remaining())
    sock.sendall(connect_request(authority, proxy.authorization))
    head = _read_head(sock, proxy, remaining)
    try:
        status, reason = parse_connect_answer(head)
    except ValueError as exc:
        raise ProxyError(f"the proxy {proxy.shown} answered CONNECT {authority}: {exc}") from exc
    if not 200 <= status < 300:
        said = f"{status} {reason}".strip()
        raise ProxyError(f"the proxy {proxy.shown} answered CONNECT {authority} with {said}")
    if not head.endswith(b"\r\n\r\n"):
        raise ProxyError(
            f"the proxy {proxy.shown} sent more than its answer to CONNECT {authority}"
        )


def _read_head(sock: socket.socket, proxy: PushProxy, remaining: Callable[[], float]) -> bytes:
    """The answer up to its blank line. An endpoint says nothing before the TLS client hello,
    so after a 2xx nothing else can have arrived; after a refusal the rest is not read."""
    head = b""
    while b"\r\n\r\n" not in head:
        if len(head) > MAX_CONNECT_ANSWER_BYTES:
            raise ProxyError(f"the proxy {proxy.shown} answered CONNECT with an endless head")
        sock.settimeout(remaining())
        data = sock.recv(4096)
        if not data:
            said = f": {head[:100]!r}" if head else ""
            raise ProxyError(f"the proxy {proxy.shown} closed the connection during CONNECT{said}")
        head += data
    end = head.index(b"\r\n\r\n") + 4
    status_ok = head[9:10] == b"2"  # "HTTP/1.x 2.."
    return head if status_ok else head[:end]
