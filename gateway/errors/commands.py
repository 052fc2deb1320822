"""What stops a command (:class:`~gateway.errors.StopsCommandError`): the command prints the
error's one line as its only output on stderr and exits 1, or 2 for a :class:`UsageError`
(:class:`~gateway.errors.ExitCode`, decided by :func:`~gateway.errors.answer_for`).

Settings and the data dir are checked before anything is written or started, the database before
it is used, the address before gunicorn forks (``serving/preflight.py``), so none of these ends
in a traceback or in gunicorn's "Worker failed to boot".
"""

from __future__ import annotations

from gateway.errors import ExitCode, StopsCommandError


# configuration -------------------------------------------------------------------------------
class SettingsError(StopsCommandError, ValueError):
    """A setting's value cannot be read; the message names the variable and the value."""


class DataDirError(StopsCommandError):
    """The data dir cannot be created or written."""


class CannotListenError(StopsCommandError):
    """The address to serve on is taken, not local, or not ours to bind."""


class InvalidProbeAddressError(StopsCommandError):
    """``--probes`` / ``MNS_GATEWAY_WORKER_PROBES`` is not ``HOST:PORT``."""


class TracingUnavailableError(StopsCommandError):
    """Tracing was asked for and the ``otel`` extra is not installed."""


# the database --------------------------------------------------------------------------------
class DatabaseError(StopsCommandError):
    """The database cannot be opened, reached or used as configured (the message says which
    database, without its password, and why)."""


class DatabaseConfigError(DatabaseError, ValueError):
    """The database is configured with a value it cannot take."""


class UnsupportedDatabaseError(DatabaseConfigError):
    """``MNS_GATEWAY_DATABASE_URL`` names a database this gateway cannot use."""


class DatabaseVersionError(DatabaseError, RuntimeError):
    """The database software is older than the gateway needs."""


# what a command was asked --------------------------------------------------------------------
class CommandError(StopsCommandError):
    """A command cannot do what it was asked; its message is the one line the user sees."""


class UsageError(CommandError):
    """A command was asked something it cannot take (what argparse cannot see: a window of
    time that cannot be replayed): one line, and argparse's status for a usage error."""

    exit_code = ExitCode.USAGE


class AdminError(StopsCommandError):
    """A remote gateway's admin API refused a request (its MNS error code and message), or could
    not be reached (``mns-gateway admin``, ``credentials check``)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class PipelineError(StopsCommandError):
    """Root of the errors the report pipeline raises on purpose (bad arguments, missing input)."""
