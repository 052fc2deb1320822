"""The store: every front end (the API, the console, the control plane, the admin operations, the
command line, the delivery worker) reaches persistence through :class:`~gateway.store.base.Store`,
built once by the composition root (:mod:`gateway.composition`, or :mod:`gateway.store.opening`
for the commands that only need the store), and through the value types exported here.

Front ends never import the SQL statements (``store.sql``), the backends (``store.backends``) or
the wake-ups (``store.notify``): an import-linter contract in pyproject.toml. What they need of
them is named here, and nothing heavier: importing this package loads no backend and no domain
operation, so a command that reads one value pays for nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gateway.store.sql.control_sql import (
    EndpointFilter,
    EndpointShape,
    Listing,
    ListQuery,
)
from gateway.store.sql.rates_sql import PUSH_FAILED, PUSH_OK
from gateway.store.values import MAX_TAGS, RateLimitPolicy, Tags

if TYPE_CHECKING:
    from gateway.store.base import Store
    from gateway.store.console import ConsoleReads
    from gateway.store.console_sessions import ConsoleSessions
    from gateway.store.shared import SharedSettings
    from gateway.store.sign_in import SignInAttempts
    from gateway.store.standard_webhooks import WebhookState
    from gateway.store.temporary_credentials import TemporaryCredentialStore

#: The store's classes a front end names (in annotations, mostly), loaded on first use: a
#: command that reads one value does not import the whole store for them.
_LAZY = {
    "Store": "gateway.store.base",
    "ConsoleReads": "gateway.store.console",
    "ConsoleSessions": "gateway.store.console_sessions",
    "SharedSettings": "gateway.store.shared",
    "SignInAttempts": "gateway.store.sign_in",
    "WebhookState": "gateway.store.standard_webhooks",
    "TemporaryCredentialStore": "gateway.store.temporary_credentials",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MAX_TAGS",
    "PUSH_FAILED",
    "PUSH_OK",
    "ConsoleReads",
    "ConsoleSessions",
    "EndpointFilter",
    "EndpointShape",
    "ListQuery",
    "Listing",
    "RateLimitPolicy",
    "SharedSettings",
    "SignInAttempts",
    "Store",
    "Tags",
    "TemporaryCredentialStore",
    "WebhookState",
]
