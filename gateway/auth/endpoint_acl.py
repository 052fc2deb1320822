"""The public endpoint's switch and allow-list (EnableEndpoint, DisableEndpoint,
AuthorizeEndpointAcl, RevokeEndpointAcl; docs/control-plane.md#endpoint-and-acl): pure, apart
from :class:`EndpointGate`'s injected reader and clock.

What it decides: whether a request of the data API (the 2015-06-06 XML API: sends, receives,
publishes and its management calls) may reach the gateway. A disabled endpoint refuses every such
request; an enabled one with allow rules accepts only peers inside one of their CIDRs; an enabled
one without rules (the state a gateway starts in) accepts every peer, so a gateway that never
uses the switch behaves as if it did not exist. The control plane itself is not behind it, as
the service's control endpoint is not.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Final

ENDPOINT_TYPES: Final = ("public",)
ACL_STRATEGIES: Final = ("allow",)
#: How long a process trusts the state it read (it is shared through the database).
REFRESH_SECONDS: Final = 1.0


def normalized_cidr(text: str) -> str:
    """``192.168.1.1/24`` as the network it names, ``192.168.1.0/24``; ValueError if not one."""
    return str(ipaddress.ip_network(text.strip(), strict=False))


@dataclass(frozen=True, slots=True)
class AclRule:
    cidr: str
    strategy: str = "allow"
    create_time: int = 0


@dataclass(frozen=True, slots=True)
class EndpointAcl:
    enabled: bool = True
    rules: tuple[AclRule, ...] = field(default_factory=tuple)

    def allows(self, address: str) -> bool:
        if not self.enabled:
            return False
        if not self.rules:
            return True
        try:
            peer = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            return False
        return any(peer in ipaddress.ip_network(rule.cidr) for rule in self.rules)

    def authorize(self, cidrs: Iterable[str], strategy: str, now: int) -> EndpointAcl:
        known = {rule.cidr for rule in self.rules}
        added = tuple(AclRule(c, strategy, now) for c in dict.fromkeys(cidrs) if c not in known)
        return replace(self, rules=self.rules + added)

    def revoke(self, cidrs: Iterable[str]) -> EndpointAcl:
        gone = set(cidrs)
        return replace(self, rules=tuple(r for r in self.rules if r.cidr not in gone))

    def to_json(self) -> str:
        rules = [[r.cidr, r.strategy, r.create_time] for r in self.rules]
        return json.dumps({"enabled": self.enabled, "rules": rules})

    @classmethod
    def from_json(cls, text: str | None) -> EndpointAcl:
        if not text:
            return cls()
        stored = json.loads(text)
        return cls(stored["enabled"], tuple(AclRule(*rule) for rule in stored["rules"]))


class EndpointGate:
    """``allows(address)`` over the shared state, read at most every ``REFRESH_SECONDS``: a
    change made on one replica holds on every replica a second later."""

    def __init__(
        self, read: Callable[[], EndpointAcl], monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._read = read
        self._monotonic = monotonic
        self._state: EndpointAcl | None = None
        self._read_at = 0.0

    def allows(self, address: str) -> bool:
        now = self._monotonic()
        # A clock set back (the injected one may be the wall clock) reads again too.
        if self._state is None or not 0 <= now - self._read_at < REFRESH_SECONDS:
            self._state, self._read_at = self._read(), now
        return self._state.allows(address)
