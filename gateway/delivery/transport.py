"""One push attempt over HTTP: pooled urllib3 connections with the egress check at connect time.

This is the hot path of delivery. urllib3 is used directly because a ``requests.Session`` POST
costs about twice its client CPU. Connections are kept alive and pooled per origin (scheme, host,
port); each pool holds at most ``max_per_host`` connections and blocks beyond that, so one slow
endpoint can occupy at most that many worker threads while healthy hosts use the rest.

Nothing is retried or redirected here: a failed attempt is reported, and the retry schedule in
the store decides what happens next (that is what makes retries survive a restart).

The egress check happens inside the connection, on the addresses the hostname *resolves to*,
immediately before connecting — never on the URL text — so a hostname that resolves to the
metadata service is refused, and a refused address is never connected to.
"""

from __future__ import annotations

import socket
import ssl
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType
from typing import Any, Final, Self

from urllib3 import (
    BaseHTTPResponse,
    HTTPConnectionPool,
    HTTPSConnectionPool,
    PoolManager,
    Timeout,
)
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    EmptyPoolError,
    HTTPError,
    NameResolutionError,
    NewConnectionError,
)
from urllib3.exceptions import TimeoutError as UrllibTimeoutError
from urllib3.util import SKIP_HEADER
from urllib3.util.connection import allowed_gai_family, create_connection

from gateway.delivery import DeliveryError
from gateway.delivery.egress import EgressPolicy
from gateway.delivery.formats import push_path

DEFAULT_TIMEOUT_SECONDS: Final = 5.0
DEFAULT_MAX_PER_HOST: Final = 16
#: Receivers answer with an empty 204; more than this is read only to be discarded, so stop
#: and drop the connection instead of downloading whatever a hostile endpoint streams.
MAX_RESPONSE_BYTES: Final = 64 * 1024
_ERROR_EXCERPT_CHARS: Final = 200

#: ``resolver(host, port)`` -> IP addresses to try, in order. Injected so tests can point a
#: hostname at any address without touching DNS.
Resolver = Callable[[str, int], Sequence[str]]
Clock = Callable[[], float]


class PushOutcome(StrEnum):
    SUCCESS = "success"
    HTTP_ERROR = "http_error"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    REFUSED_BY_POLICY = "refused_by_policy"


@dataclass(frozen=True, slots=True)
class PushResult:
    """What one attempt did; ``status`` is ``None`` when no response was received."""

    status: int | None
    outcome: PushOutcome
    error: str | None
    latency_ms: float

    @property
    def ok(self) -> bool:
        return self.outcome is PushOutcome.SUCCESS


class EgressRefusedError(DeliveryError):
    """Every address the endpoint's host resolved to is refused by the egress policy."""


def resolve_host(host: str, port: int) -> list[str]:
    """The system resolver's TCP addresses for ``host``, duplicates removed, order kept."""
    infos = socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _EgressCheckedConnection(HTTPConnection):
    """An HTTPConnection that resolves its host itself and connects only to permitted addresses."""

    def __init__(
        self, *args: Any, egress_policy: EgressPolicy, resolver: Resolver, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._egress_policy = egress_policy
        self._resolver = resolver

    def _new_conn(self) -> socket.socket:
        host = self.host.strip("[]")
        try:
            addresses = self._resolver(host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        permitted = [address for address in addresses if self._egress_policy.permits(address)]
        if not permitted:
            raise EgressRefusedError(
                f"{self.host} resolves to {', '.join(addresses) or 'nothing'}, "
                f"refused by {self._egress_policy!r}"
            )
        try:
            sock = self._connect_first(permitted)
        except TimeoutError as exc:
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock

    def _connect_first(self, addresses: Sequence[str]) -> socket.socket:
        """Try each address in resolver order, as ``socket.create_connection`` does; the last
        address's error is the one reported."""
        *earlier, last = addresses
        for address in earlier:
            try:
                return self._connect(address)
            except OSError:
                continue
        return self._connect(last)

    def _connect(self, address: str) -> socket.socket:
        return create_connection(
            (address, self.port),
            self.timeout,
            source_address=self.source_address,
            socket_options=self.socket_options,
        )


class _EgressCheckedHTTPSConnection(_EgressCheckedConnection, HTTPSConnection):
    """TLS on top of the checked socket: HTTPSConnection.connect() wraps what _new_conn returns."""


class _EgressCheckedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _EgressCheckedConnection


class _EgressCheckedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _EgressCheckedHTTPSConnection


class _EgressCheckedPoolManager(PoolManager):
    """Hands the policy and resolver to every connection, outside the pool key.

    ``_new_pool`` is urllib3's documented customisation point; the extra keywords are added
    after the pool key is computed, so they cannot be confused with per-request settings.
    """

    def __init__(self, *, connection_kw: dict[str, Any], **pool_kw: Any) -> None:
        super().__init__(**pool_kw)
        self._connection_kw = connection_kw
        self.pool_classes_by_scheme = {
            "http": _EgressCheckedHTTPConnectionPool,
            "https": _EgressCheckedHTTPSConnectionPool,
        }

    def _new_pool(
        self,
        scheme: str,
        host: str,
        port: int,
        request_context: dict[str, Any] | None = None,
    ) -> HTTPConnectionPool:
        context = dict(self.connection_pool_kw if request_context is None else request_context)
        context.update(self._connection_kw)
        return super()._new_pool(scheme, host, port, context)


def _wire_headers(headers: Sequence[tuple[str, str]]) -> dict[str, str | bytes]:
    """Names exactly as given; non-ASCII values (a Chinese MessageTag) as the UTF-8 bytes the
    signature was computed over. Accept-Encoding is suppressed: MNS does not send it."""
    wire: dict[str, str | bytes] = {"Accept-Encoding": SKIP_HEADER}
    for name, value in headers:
        wire[name] = value if value.isascii() else value.encode("utf-8")
    return wire


def _read_bounded(response: BaseHTTPResponse) -> bytes:
    """Read the (usually empty) response so the connection can be reused, but no more than
    MAX_RESPONSE_BYTES: past that the connection is closed instead of drained."""
    try:
        data = response.read(MAX_RESPONSE_BYTES + 1, decode_content=False)
        if len(data) > MAX_RESPONSE_BYTES:
            response.close()
        return data
    finally:
        response.release_conn()


def _classify_failure(exc: Exception, timeout: float) -> tuple[PushOutcome, str]:
    if isinstance(exc, EgressRefusedError):
        return PushOutcome.REFUSED_BY_POLICY, str(exc)
    if isinstance(exc, EmptyPoolError):
        return PushOutcome.TIMEOUT, f"no free connection to the host within {timeout:g} s"
    if isinstance(exc, NewConnectionError):  # a subclass of urllib3's TimeoutError, test it first
        return PushOutcome.CONNECTION_ERROR, str(exc)
    if isinstance(exc, UrllibTimeoutError):
        return PushOutcome.TIMEOUT, str(exc)
    return PushOutcome.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}"


def _error_excerpt(status: int, body: bytes) -> str:
    text = body[: _ERROR_EXCERPT_CHARS * 4].decode("utf-8", "replace")[:_ERROR_EXCERPT_CHARS]
    return f"HTTP {status}: {text}" if text else f"HTTP {status}"


class PushTransport:
    """Performs push attempts; thread-safe, share one per process.

    ``send`` never raises for anything the endpoint or the network does: every such failure is a
    :class:`PushResult`. ``ssl_context`` defaults to urllib3's (system CAs, hostname checked).
    """

    def __init__(
        self,
        egress: EgressPolicy | None = None,
        *,
        max_per_host: int = DEFAULT_MAX_PER_HOST,
        default_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_hosts: int = 1000,
        resolver: Resolver = resolve_host,
        clock: Clock = time.perf_counter,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if max_per_host < 1:
            raise ValueError(f"max_per_host must be >= 1, got {max_per_host}")
        self._default_timeout = default_timeout
        self._clock = clock
        connection_kw = {"egress_policy": egress or EgressPolicy(), "resolver": resolver}
        self._pools = _EgressCheckedPoolManager(
            connection_kw=connection_kw,
            num_pools=max_hosts,
            maxsize=max_per_host,
            block=True,
            retries=False,
            ssl_context=ssl_context,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close every pooled connection."""
        self._pools.clear()

    def send(
        self,
        url: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        timeout: float | None = None,
    ) -> PushResult:
        """POST ``body`` to ``push_path(url)`` on the URL's host: the path the signature covers.

        Success is a 2xx received within ``timeout`` seconds of the call (waiting for a free
        connection to a saturated host counts); a 2xx that arrives later is a ``timeout``.
        Header names in ``headers`` must be unique; they are sent exactly as spelled.
        """
        timeout = self._default_timeout if timeout is None else timeout
        started = self._clock()
        try:
            pool = self._pools.connection_from_url(url)
            response = self._post(pool, push_path(url), headers, body, timeout)
            response_body = _read_bounded(response)
        except (DeliveryError, HTTPError, OSError) as exc:
            outcome, error = _classify_failure(exc, timeout)
            return PushResult(None, outcome, error, self._elapsed_ms(started))
        latency_ms = self._elapsed_ms(started)
        status = response.status
        if latency_ms > timeout * 1000:
            error = f"HTTP {status} after {latency_ms:.0f} ms, over the {timeout:g} s timeout"
            return PushResult(status, PushOutcome.TIMEOUT, error, latency_ms)
        if 200 <= status < 300:
            return PushResult(status, PushOutcome.SUCCESS, None, latency_ms)
        error = _error_excerpt(status, response_body)
        return PushResult(status, PushOutcome.HTTP_ERROR, error, latency_ms)

    @staticmethod
    def _post(
        pool: HTTPConnectionPool,
        path: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        timeout: float,
    ) -> BaseHTTPResponse:
        return pool.urlopen(
            "POST",
            path,
            body=body,
            headers=_wire_headers(headers),
            retries=False,
            redirect=False,
            timeout=Timeout(total=timeout),
            pool_timeout=timeout,
            preload_content=False,
        )

    def _elapsed_ms(self, started: float) -> float:
        return (self._clock() - started) * 1000
