"""Every error the gateway raises on purpose, and what each gets for an answer, decided once for
every front end (issue 33).

The gateway's errors fall into groups by the answer they get, not by where they are raised:

- a **refused request** (:class:`RefusedError`): the client asked for something the rules do not
  allow; it carries its own status, code and message: the MNS ones
  (:class:`~gateway.errors.mns.MNSError`, looked up in the code table of :mod:`.mns`), or the
  control plane's (:class:`~gateway.errors.control.ControlError`, :mod:`.control`);
- **try again** (:class:`TryAgainError`): the gateway cannot do it now (its database is
  unreachable or its disk full); nothing was done, and the same request may be retried, so the
  answer is 503 ``ServiceUnavailable`` with ``Retry-After`` and no traceback;
- a **delivery failure** (:class:`DeliveryError`, :class:`PermanentDeliveryError`): a push that
  failed, never a request's answer (:mod:`.delivery`);
- what **stops a command** (:class:`StopsCommandError`): settings, a data dir, a database, an
  address or a remote gateway a command cannot use; the command prints the one line and exits 1
  (:mod:`.commands`);
- anything else is a bug: 500 ``InternalError``, and a traceback in the log.

:func:`answer_for` is that decision; the XML API, the JSON API, the control plane, the console
and the command line only render its :class:`Answer` (as XML, JSON, a page or an exit status).
The package imports nothing else from ``gateway`` so that every layer may import it; its
submodules hold each group's errors and import only this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    """Root of every error the gateway raises on purpose: the refused requests
    (:class:`RefusedError`), the outages (:class:`TryAgainError`), the delivery errors
    (:class:`DeliveryError`), and what stops a command (:class:`StopsCommandError`: bad
    settings, a database it cannot open or reach, a data dir it cannot write).
    Its message is one line a person can act on: the command line prints it as the command's
    only output on stderr and exits 1."""


# refused request ---------------------------------------------------------------------------
class RefusedError(GatewayError):
    """A request refused by a rule: answered with its ``status``, ``code`` and ``message``
    (:class:`gateway.errors.mns.MNSError`, with the MNS code table it is looked up in, and
    the control plane's :class:`gateway.errors.control.ControlError`)."""

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


# delivery failure (permanent or not) -------------------------------------------------------
class DeliveryError(GatewayError):
    """Root of every exception delivery raises deliberately (:mod:`gateway.errors.delivery`):
    callers tell our refusals from bugs with one ``except``."""


class PermanentDeliveryError(DeliveryError):
    """The delivery can never succeed; the reason is kept on the dead letter."""


# what stops a command ---------------------------------------------------------------------
class StopsCommandError(GatewayError):
    """A command cannot run as configured or asked (:mod:`gateway.errors.commands`): it prints
    the message as its only output on stderr and exits with ``exit_code`` (1, or 2 for a usage
    error). Reaching a request, it is a bug."""

    exit_code: ExitCode = ExitCode.FAILED


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
    #: The command line's exit status for it.
    exit_code: ExitCode = ExitCode.FAILED
    #: The command line's one line on stderr: the error's own words (the operator running a
    #: command may read what a client is not told, such as which database is unreachable).
    line: str = field(default="", compare=False)


def answer_for(error: BaseException) -> Answer:
    """The one mapping from an error to its answer on every front end: the status, code and
    message a request gets, and the line and exit status a command ends with."""
    line = _one_line(error)
    if isinstance(error, RefusedError):
        return Answer(error.status, error.code, error.message, line=line)
    if isinstance(error, TryAgainError):
        return Answer(
            503, SERVICE_UNAVAILABLE, error.public_message, RETRY_AFTER_SECONDS, line=line
        )
    exit_code = error.exit_code if isinstance(error, StopsCommandError) else ExitCode.FAILED
    # A StopsCommandError or an OSError reaching a request is a bug like any other.
    return Answer(
        500, INTERNAL_ERROR, INTERNAL_MESSAGE, log_traceback=True, exit_code=exit_code, line=line
    )


def _one_line(error: BaseException) -> str:
    """What a command prints: the gateway's own errors say what to fix; an OSError names the
    file or address; anything else is a bug, still one line (with its type, for a report)."""
    if isinstance(error, GatewayError):
        text = str(error)
    elif isinstance(error, OSError):
        where = f" {error.filename}" if error.filename else ""
        text = f"{error.strerror or error}{where}".strip()
    else:
        text = f"unexpected {type(error).__name__}: {error}"
    lines = text.strip().splitlines()
    return lines[0] if lines else "failed"
