"""What ``mns-gateway serve`` checks before gunicorn forks its workers.

A worker that cannot build the app fails to boot, and gunicorn reports that in dozens of lines
ending in "Worker failed to boot", the cause buried among them. So whatever the operator set
that a worker would trip over is checked here first, and raised as the one-line
:class:`~gateway.errors.GatewayError` the command prints: the database URL's scheme,
the SQLite settings, the egress CIDR lists, the worker class, the SMS provider and SMTP relay,
the configured signing key and certificate files, the push proxy and TLS files (a CA bundle, a
client certificate and key), a PostgreSQL server that answers (each value's
own form is checked as it is read, :mod:`gateway.config.checks`). The arbiter must not load
psycopg, nor anything that imports ``ssl`` (the workers inherit its modules before gevent patches
them), so all but the first two are checked in a forked child (when set), and nothing
imported here may hold a lock or thread class (a long poll would then block a gevent
worker's whole loop).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gateway.config.settings import Settings
from gateway.errors import GatewayError
from gateway.errors.commands import SettingsError
from gateway.store.backends.reach import backend_of, check_sqlite_settings


def check_before_forking(settings: Settings) -> None:
    if backend_of(settings.database_url) == "sqlite":
        check_sqlite_settings(settings.sqlite_synchronous)
    if settings.log_dir is not None:
        check_log_dir(settings.log_dir)
    checks: list[Callable[[], None]] = []
    if settings.egress_allow or settings.egress_deny:
        checks.append(lambda: check_egress(settings))
    if settings.worker_class not in ("gevent", "gthread"):  # the gateway's own, always there
        checks.append(lambda: _check_worker_class(settings))
    if settings.sms_provider or settings.smtp_url:
        checks.append(lambda: _check_message_senders(settings))
    if settings.signing_key_file is not None or settings.signing_cert_file is not None:
        checks.append(lambda: _check_signing_files(settings))
    if _push_network_set(settings):
        checks.append(lambda: _check_push_network(settings))
    if settings.database_url:
        checks.append(lambda: _check_reachable(settings.database_url))
    if checks:
        in_child(lambda: [check() for check in checks])


def check_log_dir(path: Path) -> None:
    """The operation logs' directory: one, or one this process can make (the log is written
    from the first logged operation on, long after start; a file there failed only then)."""
    existing = next(folder for folder in (path, *path.absolute().parents) if folder.exists())
    if not existing.is_dir():
        reason = "a file" if existing == path else f"to be made in {existing}, a file"
    elif not os.access(existing, os.W_OK | os.X_OK):
        reason = f"in {existing}, which this process cannot write"
    else:
        return
    raise SettingsError(f"MNS_GATEWAY_LOG_DIR={str(path)!r} is not usable: {reason}")


def check_egress(settings: Settings) -> None:
    """The egress CIDR lists, as the push transport reads them."""
    from gateway.delivery.egress import EgressPolicy
    from gateway.errors.delivery import EgressError

    for name, cidrs in (("ALLOW", settings.egress_allow), ("DENY", settings.egress_deny)):
        try:
            EgressPolicy(allow=cidrs)
        except EgressError as error:
            raise SettingsError(f"MNS_GATEWAY_EGRESS_{name} is not valid: {error}") from error


def _check_worker_class(settings: Settings) -> None:
    """The worker class gunicorn will load (``eventlet`` was gunicorn's own traceback)."""
    from gunicorn.util import load_class

    try:
        load_class(settings.gunicorn_worker_class, section="gunicorn.workers")
    except RuntimeError as error:
        lines = [line.strip(" []") for line in str(error).splitlines() if line.strip(" []")]
        raise SettingsError(
            f"MNS_GATEWAY_WORKER_CLASS={settings.worker_class!r} cannot be loaded ({lines[-1]}): "
            "use gevent (the default) or gthread"
        ) from error


def _check_message_senders(settings: Settings) -> None:
    """The SMS provider's and the SMTP relay's settings, read as the delivery worker will."""
    from gateway.pushing.mail import SmtpSettings
    from gateway.pushing.providers import sms_sender
    from gateway.pushing.transport import PushTransport

    sms_sender(settings, PushTransport())
    if settings.smtp_url:
        SmtpSettings.from_url(settings.smtp_url)


def _check_signing_files(settings: Settings) -> None:
    from gateway.pushing.keyring import check_configured_files

    check_configured_files(settings.signing_key_file, settings.signing_cert_file)


def _push_network_set(settings: Settings) -> bool:
    return bool(
        settings.push_proxy
        or settings.push_no_proxy
        or settings.push_ca_file
        or settings.push_client_cert
        or settings.push_client_key
    )


def _check_push_network(settings: Settings) -> None:
    """The proxy URL, NO_PROXY and the TLS files, loaded as the delivery worker will."""
    from gateway.pushing.push_network import push_network

    push_network(settings)


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
