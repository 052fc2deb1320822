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

from gateway.store.sql.control_sql import (
    EndpointFilter,
    EndpointShape,
    Listing,
    ListQuery,
)
from gateway.store.sql.rates_sql import PUSH_FAILED, PUSH_OK

__all__ = [
    "PUSH_FAILED",
    "PUSH_OK",
    "EndpointFilter",
    "EndpointShape",
    "ListQuery",
    "Listing",
]
