"""Refusing an ``MNS_GATEWAY_*`` variable that is no setting, naming the closest one (pure).

``MNS_GATEWAY_PROT=8090`` was ignored without a word, and the gateway served on 8080. Which
names are settings is :func:`gateway.config.settings.known_names`' to say (one table, the
settings' readers); this module only compares.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Set

from gateway.errors.commands import SettingsError

#: What Kubernetes adds to a pod for each Service of its namespace (its "service links"): a
#: Service named ``mns-gateway`` gives ``MNS_GATEWAY_SERVICE_HOST``, ``MNS_GATEWAY_PORT_8080_TCP``
#: and so on, which nobody misspelled (docs/deploy.md#settings).
_SERVICE_LINK = re.compile(
    r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_[0-9]+_(TCP|UDP|SCTP)(_[A-Z]+)?)"
)
_SERVICE_ADDRESS = re.compile(r"(tcp|udp|sctp)://", re.IGNORECASE)


def refuse_unknown_names(env: Mapping[str, str], prefix: str, known: Set[str]) -> None:
    """Raise a :class:`SettingsError` for the first variable of ``env`` named with ``prefix``
    that is not in ``known`` (nor a service link), with the closest known name."""
    for name in sorted(env):
        if not name.startswith(prefix) or name in known or _service_link(name, env[name]):
            continue
        raise SettingsError(f"{name} is not a setting of mns-gateway{_hint(name, prefix, known)}")


def _hint(name: str, prefix: str, known: Set[str]) -> str:
    # Compared without the prefix, which every name shares and would make any two alike.
    suffixes = sorted(known_name.removeprefix(prefix) for known_name in known)
    close = difflib.get_close_matches(name.removeprefix(prefix), suffixes, n=1)
    if close:
        return f": did you mean {prefix}{close[0]}?"
    return " (docs/deploy.md#settings lists them)"


def _service_link(name: str, value: str) -> bool:
    return bool(
        _SERVICE_LINK.fullmatch(name) or (name.endswith("_PORT") and _SERVICE_ADDRESS.match(value))
    )
