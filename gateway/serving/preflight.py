"""What ``mns-gateway serve`` checks before gunicorn forks its workers.

A worker that cannot build the app fails to boot, and gunicorn reports that in dozens of lines
ending in "Worker failed to boot", the cause buried among them. So whatever the operator set
that a worker would trip over is checked here first, and raised as the one-line
:class:`~gateway.protocol.errors.GatewayError` the command prints: the database URL's scheme,
the SQLite settings, the configured signing key and certificate files, a PostgreSQL server that
answers. The arbiter must not load psycopg, nor anything that imports ``ssl`` (the workers
inherit its modules before gevent patches them), so the last two are checked in a forked child,
and nothing imported here may hold a lock or thread class (a long poll would then block a gevent
worker's whole loop).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from gateway.config.settings import Settings
from gateway.protocol.errors import GatewayError
from gateway.store.backends.reach import backend_of, check_sqlite_settings


def check_before_forking(settings: Settings) -> None:
    if backend_of(settings.database_url) == "sqlite":
        check_sqlite_settings(settings.sqlite_synchronous)
    checks: list[Callable[[], None]] = []
    if settings.signing_key_file is not None or settings.signing_cert_file is not None:
        checks.append(lambda: _check_signing_files(settings))
    if settings.database_url:
        checks.append(lambda: _check_reachable(settings.database_url))
    if checks:
        in_child(lambda: [check() for check in checks])


def _check_signing_files(settings: Settings) -> None:
    from gateway.pushing.keyring import check_configured_files

    check_configured_files(settings.signing_key_file, settings.signing_cert_file)


def _check_reachable(url: str) -> None:
    from gateway.store.backends.reach import check_reachable

    check_reachable(url)


def in_child(check: Callable[[], object]) -> None:
    """Run ``check`` in a forked child, so what it imports stays there; raise its error here."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing it does may return into the arbiter's code
        os.close(read_end)
        message = ""
        try:
            check()
        except GatewayError as error:
            message = str(error) or type(error).__name__
        except BaseException as error:
            message = f"unexpected {type(error).__name__}: {error}"
        os.write(write_end, message.encode("utf-8", "replace")[:4096])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode("utf-8", "replace")
    os.waitpid(pid, 0)
    if message:
        raise GatewayError(message)
