"""The embedded gateway: ``mns-gateway serve`` in a child process with its access key, a push
recorder and the inbox (see :mod:`gateway.testing`)."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from gateway.cli.admin_client import AdminClient
from gateway.testing.inbox import Inbox
from gateway.testing.process import GatewayProcess, log_tail
from gateway.testing.pushes import PushRecorder

#: The embedded gateway's settings; ``EmbeddedGateway(settings=...)`` adds or overrides any.
DEFAULT_SETTINGS: Mapping[str, str] = {
    "MNS_GATEWAY_INBOX": "1",
    # Retries a hundred times sooner (BACKOFF_RETRY waits 0.1-0.2 s), so a test sees them.
    "MNS_GATEWAY_RETRY_SCALE": "0.01",
    "MNS_GATEWAY_MAIL_FROM": "mns-gateway@example.test",
    # A test gateway's data dir is thrown away: no fsync per write.
    "MNS_GATEWAY_SQLITE_SYNCHRONOUS": "OFF",
    "MNS_GATEWAY_DELIVERY_THREADS": "8",
}
T = TypeVar("T")


def _environment(settings: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment without its ``MNS_GATEWAY_*`` (a developer's shell may point at
    a real database), plus the embedded gateway's own settings."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    return {**inherited, **DEFAULT_SETTINGS, **settings}


def _started(part: T | None) -> T:
    """A part that exists once the gateway is started."""
    if part is None:
        raise RuntimeError("the embedded gateway is not started")
    return part


class EmbeddedGateway:
    """A gateway process with its access key, a push recorder and the inbox.

    ``settings`` are more ``MNS_GATEWAY_*`` variables (docs: the README's table);
    ``data_dir`` keeps the data somewhere of your choosing instead of a temporary directory
    removed at :meth:`stop`.
    """

    def __init__(
        self,
        *,
        settings: Mapping[str, str] | None = None,
        data_dir: Path | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.settings = dict(settings or {})
        self.access_key_id = f"test{secrets.token_hex(6)}"
        self.access_key_secret = secrets.token_urlsafe(24)
        self._root = Path(tempfile.mkdtemp(prefix="mns-gateway-"))
        self.data_dir = data_dir or self._root / "data"
        self.start_timeout = start_timeout
        self._process: GatewayProcess | None = None
        self._pushes: PushRecorder | None = None

    # lifecycle ----------------------------------------------------------------------------
    def start(self) -> Self:
        env = _environment(
            {
                "MNS_GATEWAY_ACCESS_KEY_ID": self.access_key_id,
                "MNS_GATEWAY_ACCESS_KEY_SECRET": self.access_key_secret,
                **self.settings,
            }
        )
        self._process = GatewayProcess.start(
            self.data_dir, env, log_file=self._root / "gateway.log", timeout=self.start_timeout
        )
        self._pushes = PushRecorder(f"{self.url}/certs/").start()
        return self

    def stop(self) -> None:
        if self._pushes is not None:
            self._pushes.stop()
        if self._process is not None:
            # Nothing of a test gateway needs a graceful drain, which takes a second or more
            # (gunicorn's workers look at their state once a second); SIGINT ends at once.
            self._process.stop(graceful=False)
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # what a test uses -----------------------------------------------------------------------
    @property
    def process(self) -> GatewayProcess:
        return _started(self._process)

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def log_file(self) -> Path:
        """The gateway's output, for a test that wants to see why something went wrong."""
        return self._root / "gateway.log"

    def log_tail(self, size: int = 8000) -> str:
        """The end of the gateway's log (its last ``size`` bytes): the pytest plugin adds it to
        the report of a failed test that used the gateway."""
        return log_tail(self.log_file, size)

    @property
    def pushes(self) -> PushRecorder:
        return _started(self._pushes)

    @property
    def inbox(self) -> Inbox:
        return Inbox(self.client())

    def client(self) -> AdminClient:
        """Signed JSON requests to the gateway's ``/dev/`` and ``/admin/`` endpoints."""
        return AdminClient(self.url, self.access_key_id, self.access_key_secret)

    def account(self) -> Any:
        """An official-SDK ``mns.account.Account`` for this gateway."""
        try:
            from mns.account import Account
        except ImportError as exc:
            raise RuntimeError(
                "account() needs the official MNS SDK: pip install aliyun-mns-sdk"
            ) from exc
        return Account(self.url, self.access_key_id, self.access_key_secret)

    def reset(self) -> None:
        """Empty the gateway (topics, queues, messages, dead letters, the inbox) and forget the
        pushes received; its URL, keys and credentials stay."""
        self.client().call("POST", "/dev/reset")
        self.pushes.clear()
