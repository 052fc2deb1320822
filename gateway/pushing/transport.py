"""One push attempt over HTTP: pooled keep-alive sockets with the egress check at connect time.

This is the hot path of delivery, so a push is one ``sendall`` of bytes built in one go on a
kept-alive socket, and the answer is parsed by llhttp (:mod:`gateway.pushing.response`): a
small fraction of the client CPU of urllib3, which spends most of its time validating headers
one by one (``requests`` costs twice urllib3). Connections are pooled per origin (scheme, host,
port); at most ``max_per_host`` are in use at once and waiting for one counts against the push
timeout, so one slow endpoint can occupy at most that many workers while healthy hosts use the
rest.

Nothing is retried or redirected here: a failed attempt is reported, and the retry schedule in
the store decides what happens next (that is what makes retries survive a restart).

The egress check happens inside the connection, on the addresses the hostname *resolves to*,
immediately before connecting — never on the URL text — so a hostname that resolves to the
metadata service is refused, and a refused address is never connected to.

With an egress proxy (:mod:`gateway.delivery.proxy`) the endpoint's addresses are judged all the
same before the proxy is asked for it, by name; a plain-HTTP push is sent to the proxy in
absolute form, an https push through a CONNECT tunnel (:mod:`gateway.pushing.proxy_tunnel`),
TLS inside it to the endpoint's name. The pools stay per endpoint: a proxy may tie a kept-alive
connection to the first host it carried (tinyproxy relays to it until either side closes).
https contexts come from :class:`~gateway.pushing.tls.PushTls`; when it reloads its files, the
connections opened with the old context are not used again.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self

from gateway.delivery.egress import EgressPolicy
from gateway.delivery.formats import push_path
from gateway.delivery.proxy import ProxyRoutes, PushProxy
from gateway.delivery.records import PushOutcome
from gateway.delivery.signing import SignedPush
from gateway.delivery.wire import Origin, authority, origin_of, request_bytes
from gateway.errors import DeliveryError
from gateway.errors.delivery import EgressRefusedError, ProxyError, PushTimeoutError
from gateway.pushing.pools import OriginPool
from gateway.pushing.proxy_tunnel import connect_to_proxy, open_tunnel
from gateway.pushing.response import read_response
from gateway.pushing.tls import PushTls

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


def resolve_host(host: str, port: int) -> list[str]:
    """The system resolver's TCP addresses for ``host``, duplicates removed, order kept."""
    infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise PushTimeoutError("timed out")
    return left


def _round_trip(sock: socket.socket, request: bytes, deadline: float) -> tuple[int, bytes, bool]:
    """Send the request, read the answer: (status, body, whether the socket may be reused)."""
    sock.settimeout(_remaining(deadline))
    # A push fits the socket's send buffer: one send() nearly always takes it whole, where
    # gevent's sendall() also asks the kernel for the buffer's size (a system call) every time.
    sent = sock.send(request)
    if sent < len(request):
        sock.sendall(memoryview(request)[sent:])
    return read_response(sock, lambda: _remaining(deadline), MAX_RESPONSE_BYTES)


def _dropped_by_proxy(exc: OSError, origin: Origin, proxy: PushProxy | None) -> ProxyError | None:
    """A plain-HTTP push's connection dropped by the proxy names the proxy: tinyproxy refuses
    (407, 403) and closes with the body unread, so its answer is lost in the reset. Inside a
    tunnel, and on timeouts, the error is the endpoint's, as without a proxy."""
    if proxy is None or origin.scheme == "https" or isinstance(exc, TimeoutError):
        return None
    return ProxyError(f"the proxy {proxy.shown} dropped the push: {type(exc).__name__}: {exc}")


def _classify_failure(exc: Exception) -> tuple[PushOutcome, str]:
    if isinstance(exc, EgressRefusedError):
        return PushOutcome.REFUSED_BY_POLICY, str(exc)
    if isinstance(exc, TimeoutError):  # socket timeouts and PushTimeoutError
        return PushOutcome.TIMEOUT, str(exc) or "timed out"
    return PushOutcome.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}"


def _error_excerpt(status: int, body: bytes) -> str:
    text = body[: _ERROR_EXCERPT_CHARS * 4].decode("utf-8", "replace")[:_ERROR_EXCERPT_CHARS]
    return f"HTTP {status}: {text}" if text else f"HTTP {status}"


class PushTransport:
    """Performs push attempts; thread-safe, share one per process.

    ``send`` never raises for anything the endpoint or the network does: every such failure is a
    :class:`PushResult`. ``tls`` (or a fixed ``ssl_context``) defaults to the system CAs with
    hostnames checked; ``proxy``, none, pushes directly. ``clock`` only measures latency;
    deadlines run on the monotonic clock.
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
        tls: PushTls | None = None,
        proxy: ProxyRoutes | None = None,
    ) -> None:
        if max_per_host < 1:
            raise ValueError(f"max_per_host must be >= 1, got {max_per_host}")
        self._egress = egress or EgressPolicy()
        self._max_per_host = max_per_host
        self._default_timeout = default_timeout
        self._max_hosts = max_hosts
        self._resolver = resolver
        self._clock = clock
        self._tls = tls or PushTls(context=ssl_context)
        self._tls_generation = 0
        self._proxy = proxy
        self._pools: OrderedDict[Origin, OriginPool] = OrderedDict()
        self._pools_lock = threading.Lock()

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
        with self._pools_lock:
            pools, self._pools = list(self._pools.values()), OrderedDict()
        for pool in pools:
            pool.close()

    def send(
        self,
        url: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        timeout: float | None = None,
        *,
        path: str | None = None,
    ) -> PushResult:
        """POST ``body`` to ``path`` on the URL's host: a signed push passes the path its
        signature covers (:attr:`~gateway.delivery.signing.SignedPush.path`), sent as it was
        signed; without one, ``push_path(url)``.

        Success is a 2xx received within ``timeout`` seconds of the call (waiting for a free
        connection to a saturated host counts); a 2xx that arrives later is a ``timeout``.
        Header names in ``headers`` must be unique; they are sent exactly as spelled.
        """
        return self.post(url, headers, body, timeout, path=path)[0]

    def send_signed(self, url: str, push: SignedPush, timeout: float | None = None) -> PushResult:
        """A signed push, exactly as it was signed: its path, headers and body."""
        return self.post(url, push.headers, push.body, timeout, path=push.path)[0]

    def post(
        self,
        url: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        timeout: float | None = None,
        *,
        path: str | None = None,
    ) -> tuple[PushResult, bytes]:
        """:meth:`send`, and the response body (up to :data:`MAX_RESPONSE_BYTES`; empty without
        a response), for callers that read the answer: an SMS provider's API."""
        timeout = self._default_timeout if timeout is None else timeout
        started = self._clock()
        try:
            origin = origin_of(url)
            proxy = self._proxy.proxy_for(origin.host) if self._proxy is not None else None
            target = push_path(url) if path is None else path
            request = request_bytes(origin, proxy, target, headers, body)
            status, response_body = self._exchange(origin, proxy, request, timeout)
        except (DeliveryError, OSError) as exc:
            outcome, error = _classify_failure(exc)
            return PushResult(None, outcome, error, self._elapsed_ms(started)), b""
        latency_ms = self._elapsed_ms(started)
        if latency_ms > timeout * 1000:
            error = f"HTTP {status} after {latency_ms:.0f} ms, over the {timeout:g} s timeout"
            return PushResult(status, PushOutcome.TIMEOUT, error, latency_ms), response_body
        if 200 <= status < 300:
            return PushResult(status, PushOutcome.SUCCESS, None, latency_ms), response_body
        error = _error_excerpt(status, response_body)
        return PushResult(status, PushOutcome.HTTP_ERROR, error, latency_ms), response_body

    def _exchange(
        self, origin: Origin, proxy: PushProxy | None, request: bytes, timeout: float
    ) -> tuple[int, bytes]:
        deadline = time.monotonic() + timeout
        context = None
        if origin.scheme == "https":
            generation, context = self._tls.current()
            if generation != self._tls_generation:
                self._forget_https_pools(generation)
        pool = self._pool(origin)
        if not pool.slots.acquire(timeout=timeout):
            raise PushTimeoutError(f"no free connection to the host within {timeout:g} s")
        try:
            sock = pool.take_idle() or self._connect(origin, proxy, context, deadline)
            reusable = False
            try:
                status, body, reusable = _round_trip(sock, request, deadline)
            except OSError as exc:
                dropped = _dropped_by_proxy(exc, origin, proxy)
                if dropped is None:
                    raise
                raise dropped from exc
            finally:
                # Not pooled if the TLS files were reloaded meanwhile: it has the old ones.
                if reusable and (context is None or context is self._tls.latest):
                    pool.give_back(sock)
                else:
                    sock.close()
            if status == 407 and proxy is not None and origin.scheme == "http":
                raise ProxyError(f"the proxy {proxy.shown} answered HTTP 407 (its credentials)")
            return status, body
        finally:
            pool.slots.release()

    def _pool(self, origin: Origin) -> OriginPool:
        # The usual case, a known origin, takes no lock: an OrderedDict's get and move_to_end
        # are each one call into C, atomic under the GIL and between gevent's switches (the
        # lock is Python on both sides under gevent). Eviction may pop the origin in between.
        pool = self._pools.get(origin)
        if pool is not None:
            with contextlib.suppress(KeyError):
                self._pools.move_to_end(origin)
                return pool
        with self._pools_lock:
            pool = self._pools.get(origin)
            if pool is not None:
                self._pools.move_to_end(origin)
                return pool
            pool = self._pools[origin] = OriginPool(self._max_per_host)
            evicted = (
                self._pools.popitem(last=False)[1] if len(self._pools) > self._max_hosts else None
            )
        if evicted is not None:
            evicted.close()
        return pool

    def _forget_https_pools(self, generation: int) -> None:
        """The TLS files were reloaded: connections opened with the old ones are closed as
        they come back (in use) or now (idle); new pools open new ones."""
        with self._pools_lock:
            if generation == self._tls_generation:
                return
            self._tls_generation = generation
            # A snapshot first (list() copies in one call into C): a push may move an origin
            # to the end meanwhile, without the lock (_pool), and an OrderedDict refuses to go
            # on iterating once it was reordered.
            stale = [origin for origin in list(self._pools) if origin.scheme == "https"]
            pools = [self._pools.pop(origin) for origin in stale]
        for pool in pools:
            pool.close()

    def _connect(
        self,
        origin: Origin,
        proxy: PushProxy | None,
        context: ssl.SSLContext | None,
        deadline: float,
    ) -> socket.socket:
        """Resolve, keep only addresses the egress policy permits, connect to the first that
        answers (as ``socket.create_connection`` does), or to the proxy; then TLS for https."""
        addresses = self._resolver(origin.host, origin.port)
        permitted = [address for address in addresses if self._egress.permits(address)]
        if not permitted:
            raise EgressRefusedError(
                f"{origin.host} resolves to {', '.join(addresses) or 'nothing'}, "
                f"refused by {self._egress!r}"
            )
        if proxy is None:
            sock = self._connect_first(permitted, origin.port, deadline)
        else:
            sock = connect_to_proxy(
                proxy,
                self._resolver,
                lambda found, port: self._connect_first(found, port, deadline),
            )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if context is None:
            return sock
        try:
            if proxy is not None:
                open_tunnel(sock, proxy, authority(origin), lambda: _remaining(deadline))
            sock.settimeout(_remaining(deadline))
            return context.wrap_socket(sock, server_hostname=origin.host)
        except BaseException:
            sock.close()
            raise

    @staticmethod
    def _connect_first(addresses: Sequence[str], port: int, deadline: float) -> socket.socket:
        *earlier, last = addresses
        for address in earlier:
            try:
                return socket.create_connection((address, port), _remaining(deadline))
            except OSError:
                continue
        return socket.create_connection((last, port), _remaining(deadline))

    def _elapsed_ms(self, started: float) -> float:
        return (self._clock() - started) * 1000
