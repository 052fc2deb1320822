"""Which pushes leave through the egress proxy, and what is said to it (pure).

``MNS_GATEWAY_PUSH_PROXY`` names an HTTP forward proxy (``http://[user:password@]host:port``);
``MNS_GATEWAY_PUSH_NO_PROXY`` lists the hosts reached directly, as curl's ``NO_PROXY`` does: a
name matches itself and every name under it (``example.com`` and ``.example.com`` both match
``example.com`` and ``api.example.com``), an IP address or CIDR range matches endpoints whose URL
holds an address in it, and ``*`` matches every host. The socket side is
:mod:`gateway.pushing.proxy_tunnel`; the egress policy still judges the endpoint's own addresses
(docs/delivery.md#egress-proxy).
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: A NO_PROXY name: letters, digits, hyphens, underscores and dots, as DNS names are spelled.
_NAME: Final = re.compile(r"\.?[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?")
#: The most a proxy's answer to CONNECT may hold before its blank line.
MAX_CONNECT_ANSWER_BYTES: Final = 16 * 1024


@dataclass(frozen=True, slots=True)
class PushProxy:
    """The proxy: where it listens and the ``Proxy-Authorization`` value, if it wants one."""

    host: str
    port: int
    authorization: str | None = None

    @property
    def shown(self) -> str:
        """The proxy as logs and errors name it: never its credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def parse_proxy_url(url: str) -> PushProxy:
    """``http://[user:password@]host[:port]`` (port 80 if none); ``ValueError`` says what is
    wrong, without repeating the password."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL with a valid port ({exc})") from None
    if parts.scheme != "http":
        raise ValueError(
            "must be an http:// URL (http://host:port): the proxy is spoken to in "
            "plain HTTP, and https endpoints are tunnelled through it with CONNECT"
        )
    if not parts.hostname:
        raise ValueError("must name the proxy's host (http://host:port)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("must be only http://host:port, without a path or query")
    authorization = None
    if parts.username is not None or parts.password is not None:
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        token = base64.b64encode(credentials.encode("utf-8")).decode("ascii")
        authorization = f"Basic {token}"
    return PushProxy(parts.hostname, port or 80, authorization)


@dataclass(frozen=True, slots=True)
class NoProxy:
    """The hosts reached directly; see the module docstring."""

    names: tuple[str, ...] = ()
    networks: tuple[Network, ...] = ()
    everything: bool = False

    def bypasses(self, host: str) -> bool:
        """Whether a push to ``host`` (as in its URL, an IPv6 address without brackets) goes
        directly rather than through the proxy."""
        if self.everything:
            return True
        host = host.strip("[]").rstrip(".").lower()
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return any(host == name or host.endswith(f".{name}") for name in self.names)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks) or host in self.names


def parse_no_proxy(entries: Sequence[str]) -> NoProxy:
    """The entries of ``MNS_GATEWAY_PUSH_NO_PROXY`` (already split at commas); ``ValueError``
    names an entry that is neither a host name, an IP address, a CIDR range nor ``*``."""
    names: list[str] = []
    networks: list[Network] = []
    everything = False
    for raw in entries:
        entry = raw.strip().lower()
        if entry == "*":
            everything = True
        elif _looks_like_address(entry):
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                raise ValueError(f"{raw!r} is neither an IP address nor a CIDR range") from None
        elif _NAME.fullmatch(entry):
            names.append(entry.lstrip(".").rstrip("."))
        else:
            raise ValueError(f"{raw!r} is not a host name, an IP address or a CIDR range")
    return NoProxy(tuple(names), tuple(networks), everything)


def _looks_like_address(entry: str) -> bool:
    return "/" in entry or ":" in entry or bool(re.fullmatch(r"[0-9.]+", entry))


@dataclass(frozen=True, slots=True)
class ProxyRoutes:
    """The proxy and the hosts that bypass it: which way a push to a host goes."""

    proxy: PushProxy
    no_proxy: NoProxy = NoProxy()

    def proxy_for(self, host: str) -> PushProxy | None:
        return None if self.no_proxy.bypasses(host) else self.proxy


def absolute_target(host_header: str, path: str) -> str:
    """The request target of a plain-HTTP push through the proxy (RFC 9112 3.2.2)."""
    return f"http://{host_header}{path}"


def connect_request(authority: str, authorization: str | None) -> bytes:
    """The ``CONNECT`` that opens a tunnel to ``authority`` (``host:port``) for an https push."""
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if authorization is not None:
        lines.append(f"Proxy-Authorization: {authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def parse_connect_answer(head: bytes) -> tuple[int, str]:
    """The status code and reason phrase of the proxy's answer to CONNECT (its head, through
    the blank line); ``ValueError`` when it is not an HTTP status line."""
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    found = re.fullmatch(r"HTTP/1\.[01] (\d{3})(?: (.*))?", status_line)
    if found is None:
        raise ValueError(f"not an HTTP answer: {status_line[:100]!r}")
    return int(found.group(1)), (found.group(2) or "").strip()
