"""The push transport's way out, from the settings: the egress proxy and the TLS files.

Read once per process by :mod:`gateway.composition`, and by ``mns-gateway serve``'s preflight
and ``mns-gateway worker`` before anything starts: a value that cannot be used is one line
naming its setting (:class:`~gateway.errors.commands.SettingsError`), never a push failing later.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config.settings import Settings, env_name
from gateway.delivery.proxy import ProxyRoutes, parse_no_proxy, parse_proxy_url
from gateway.errors.commands import SettingsError
from gateway.pushing.tls import PushTls, tls_files


@dataclass(frozen=True)
class PushNetwork:
    proxy: ProxyRoutes | None
    tls: PushTls


def push_network(settings: Settings) -> PushNetwork:
    try:
        no_proxy = parse_no_proxy(settings.push_no_proxy)
    except ValueError as error:
        raise SettingsError(f"{env_name('push_no_proxy')} is not valid: {error}") from None
    proxy = None
    if settings.push_proxy:
        try:
            proxy = ProxyRoutes(parse_proxy_url(settings.push_proxy), no_proxy)
        except ValueError as error:  # the value itself is not repeated: it may hold a password
            raise SettingsError(f"{env_name('push_proxy')} is not valid: {error}") from None
    return PushNetwork(proxy, PushTls(tls_files(settings)))
