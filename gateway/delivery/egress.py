"""Which network addresses a push may connect to (pure).

Subscribers choose the endpoint URL, so without a policy anyone allowed to subscribe could make
the gateway POST to the cloud metadata service (169.254.169.254, fd00:ec2::254) or to link-local
neighbours. The check is applied by :mod:`~gateway.pushing.transport` to each *resolved* address
just before connecting: checking the URL text would miss hostnames that resolve there, and
checking at subscribe time would miss DNS answers that change later.

Decision order: an explicit ``deny`` match refuses; otherwise an explicit ``allow`` match permits
(this is how an operator re-opens part of a default-denied range); otherwise the default deny list
refuses; everything else, loopback included, is permitted.

Addresses are judged as where a connection to them arrives (docs/delivery.md#egress-policy): an
IPv4-mapped address as its IPv4 address, an unspecified address as the local host.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from typing import Final

from gateway.errors.delivery import EgressError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Link-local (which holds the usual IPv4 metadata address), the IPv6 metadata address, and
#: Alibaba Cloud ECS's metadata service, which sits outside link-local — the cloud this gateway
#: imitates is the one it is most likely deployed on.
DEFAULT_DENY: Final[tuple[str, ...]] = (
    "169.254.0.0/16",
    "fe80::/10",
    "fd00:ec2::254/128",
    "100.100.100.200/32",
)

_IPV4_MAPPED: Final = ipaddress.IPv6Network("::ffff:0:0/96")
#: NAT64 well-known prefix: on an IPv6-only host, 64:ff9b::a9fe:a9fe reaches 169.254.169.254.
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
#: "This host on this network": Linux connects 0.0.0.0 (and ``::``) to the local host.
_THIS_HOST: Final = ipaddress.IPv4Network("0.0.0.0/8")
#: Where a connection to an unspecified address arrives: the local host, over either family.
_LOCAL_HOST: Final[tuple[Address, ...]] = (
    ipaddress.IPv4Address("127.0.0.1"),
    ipaddress.IPv6Address("::1"),
)


def _canonical_address(ip: str | Address) -> Address:
    """IPv4-mapped IPv6 (``::ffff:a.b.c.d``) is the IPv4 address it maps: same destination."""
    try:
        address = ip if not isinstance(ip, str) else ipaddress.ip_address(ip.strip("[]"))
    except ValueError as exc:
        raise EgressError(f"not an IP address: {ip!r}") from exc
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _canonical_network(cidr: str) -> Network:
    try:
        network = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError as exc:
        raise EgressError(f"not a CIDR range: {cidr!r}") from exc
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(_IPV4_MAPPED):
        low_bits = int(network.network_address) & 0xFFFFFFFF
        return ipaddress.IPv4Network((low_bits, network.prefixlen - 96))
    return network


def _reached(address: Address) -> tuple[Address, ...]:
    """The addresses a connection to ``address`` reaches, as far as the policy can tell."""
    if isinstance(address, ipaddress.IPv6Address) and address in _NAT64:
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        return (address, *_reached(embedded))
    if address in _THIS_HOST or (address.version == 6 and address.is_unspecified):
        return _LOCAL_HOST
    return (address,)


def _parse_networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    return tuple(_canonical_network(cidr) for cidr in cidrs)


def _matches(address: Address, networks: Sequence[Network]) -> bool:
    return any(address in network for network in networks)


class EgressPolicy:
    """Allow and deny CIDR lists on top of the default deny list; see the module docstring."""

    def __init__(self, allow: Sequence[str] = (), deny: Sequence[str] = ()) -> None:
        self._allow = _parse_networks(allow)
        self._deny = _parse_networks(deny)
        self._default_deny = _parse_networks(DEFAULT_DENY)

    def __repr__(self) -> str:
        allow = [str(network) for network in self._allow]
        deny = [str(network) for network in self._deny]
        return f"EgressPolicy(allow={allow}, deny={deny})"

    def permits(self, ip: str | Address) -> bool:
        """Whether a connection to ``ip`` may be opened: every address it reaches is permitted.

        A NAT64 address must be permitted both as itself and as the IPv4 address it embeds; an
        unspecified address (``0.0.0.0`` and the rest of ``0.0.0.0/8``, ``::``, in any
        spelling) reaches the local host, so it is judged as ``127.0.0.1`` and ``::1``.
        """
        return all(self._permits_one(address) for address in _reached(_canonical_address(ip)))

    def _permits_one(self, address: Address) -> bool:
        if _matches(address, self._deny):
            return False
        if _matches(address, self._allow):
            return True
        return not _matches(address, self._default_deny)
