"""What every error gets for an answer, decided once for every front end (issue 33).

The gateway's errors fall into groups by the answer they get, not by where they are raised:

- a **refused request** (:class:`RefusedError`): the client asked for something the rules do not
  allow; it carries its own status, code and message (the MNS ones, or the control plane's);
- **try again** (:class:`TryAgainError`): the gateway cannot do it now (its database is
  unreachable or its disk full); nothing was done, and the same request may be retried, so the
  answer is 503 ``ServiceUnavailable`` with ``Retry-After`` and no traceback;
- anything else is a bug: 500 ``InternalError``, and a traceback in the log.

:func:`answer_for` is that decision; the XML API, the JSON API, the control plane, the console
and the command line only render its :class:`Answer` (as XML, JSON, a page or an exit status).
This module imports nothing from ``gateway`` so that every layer may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

#: ``Retry-After`` of a 503 ServiceUnavailable: a restarting database is usually back within it.
RETRY_AFTER_SECONDS: Final = 1
SERVICE_UNAVAILABLE: Final = "ServiceUnavailable"
INTERNAL_ERROR: Final = "InternalError"
INTERNAL_MESSAGE: Final = "Internal error."


class ExitCode(IntEnum):
    """The command line's exit statuses, named once."""

    OK = 0
    #: The command failed; its one line on stderr says why.
    FAILED = 1
    #: A wrong option or argument (argparse's own status).
    USAGE = 2


class GatewayError(Exception):
    """Root of every error the gateway raises on purpose: the MNS errors a request is answered
    with (:class:`gateway.protocol.errors.MNSError`), the delivery errors
    (:class:`gateway.delivery.DeliveryError`), and what stops a command (bad settings, a
    database it cannot open or reach, a data dir it cannot write, a signing key it cannot read).
    Its message is one line a person can act on: the command line prints it as the command's
    only output on stderr and exits 1."""


# refused request ---------------------------------------------------------------------------
class RefusedError(GatewayError):
    """A request refused by a rule: answered with its ``status``, ``code`` and ``message``
    (:class:`gateway.protocol.errors.MNSError`, with the MNS code table it is looked up in, and
    the control plane's :class:`gateway.api.control.errors.ControlError`)."""

    status: int
    code: str
    message: str


# try again (outage) ------------------------------------------------------------------------
class TryAgainError(GatewayError):
    """The gateway cannot do it now; nothing was done and the request may be retried.
    ``public_message`` is what a client is told (the error's own text may name internals)."""

    public_message = "The service is temporarily unavailable; retry later."


class StoreUnavailableError(TryAgainError):
    """The database cannot be reached, or cannot store anything more (a full disk).

    Nothing was done (the transaction rolled back, or was never begun), so retrying the same
    request later is safe. ``full`` says the storage is full rather than unreachable.
    """

    def __init__(self, reason: str, *, full: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.full = full

    @property
    def public_message(self) -> str:  # type: ignore[override]
        if self.full:
            return "The gateway's storage is full; retry later."
        return "The gateway's database is unavailable; retry later."


# permanent delivery failure ----------------------------------------------------------------
class DeliveryError(GatewayError):
    """Root of every exception the delivery package raises deliberately."""


class PermanentDeliveryError(DeliveryError):
    """The delivery can never succeed; the reason is kept on the dead letter."""


# configuration that stops a command --------------------------------------------------------
class SettingsError(GatewayError, ValueError):
    """A setting's value cannot be read; the message names the variable and the value."""


class DataDirError(GatewayError):
    """The data dir cannot be created or written."""


class CannotListenError(GatewayError):
    """The address to serve on is taken, not local, or not ours to bind."""


class DatabaseError(GatewayError):
    """The database cannot be opened, reached or used as configured (the message says which
    database, without its password, and why)."""


class DatabaseConfigError(DatabaseError, ValueError):
    """The database is configured with a value it cannot take."""


class DatabaseVersionError(DatabaseError, RuntimeError):
    """The database software is older than the gateway needs."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a front end says about an error, whatever its format."""

    status: int
    code: str
    message: str
    #: ``Retry-After`` in seconds, for an answer the client may retry.
    retry_after: int | None = None
    #: Whether the error is a bug whose traceback belongs in the log.
    log_traceback: bool = False
    exit_code: ExitCode = ExitCode.FAILED


def answer_for(error: BaseException) -> Answer:
    """The one mapping from an error to its answer on every front end."""
    if isinstance(error, RefusedError):
        return Answer(error.status, error.code, error.message)
    if isinstance(error, TryAgainError):
        return Answer(503, SERVICE_UNAVAILABLE, error.public_message, RETRY_AFTER_SECONDS)
    return Answer(500, INTERNAL_ERROR, INTERNAL_MESSAGE, log_traceback=True)
