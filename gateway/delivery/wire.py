"""A push on the wire, pure: where it goes (its origin, the key of its connection pool) and the
bytes of its request, as :mod:`gateway.pushing.transport` sends them."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import urlsplit

from gateway.delivery.proxy import PushProxy, absolute_target
from gateway.errors import DeliveryError


class Origin(NamedTuple):
    """Where a push goes: the key of its connection pool. A tuple, so that hashing and comparing
    it, once per push, run in C (a dataclass's generated ``__hash__`` and ``__eq__`` are Python)."""

    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if self.scheme == "https" else 80
        return host if self.port == default_port else f"{host}:{self.port}"


@lru_cache(maxsize=4096)
def origin_of(url: str) -> Origin:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DeliveryError(f"cannot push to {url!r}: only http and https URLs")
    default_port = 443 if parts.scheme == "https" else 80
    return Origin(parts.scheme, parts.hostname, parts.port or default_port)


def encode_request(
    path: str, host_header: str, headers: Sequence[tuple[str, str]], body: bytes
) -> bytes:
    """The whole request as it goes on the wire: names exactly as given, values as UTF-8 (the
    bytes the signature covers); no Accept-Encoding, as MNS sends none."""
    lines = [f"POST {path} HTTP/1.1", f"Host: {host_header}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    joined = "".join(lines)
    if "\r" in joined or "\n" in joined:
        raise DeliveryError("a header or the path contains a line break")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def authority(origin: Origin) -> str:
    """``host:port`` as a CONNECT names it (an IPv6 address in brackets)."""
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    return f"{host}:{origin.port}"


def request_bytes(
    origin: Origin,
    proxy: PushProxy | None,
    path: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
) -> bytes:
    """The request's bytes: through the proxy, plain HTTP goes in absolute form (with the
    proxy's credentials); https goes unchanged inside the tunnel."""
    if proxy is None or origin.scheme == "https":
        return encode_request(path, origin.host_header, headers, body)
    if proxy.authorization is not None:
        headers = [("Proxy-Authorization", proxy.authorization), *headers]
    return encode_request(
        absolute_target(origin.host_header, path), origin.host_header, headers, body
    )
