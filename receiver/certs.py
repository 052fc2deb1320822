"""Where signing certificates may come from, how they are fetched, and how long they are kept.

Trust in a push rests entirely on *where* its certificate was downloaded from
(docs/protocol.md#certificate-url-allowlist): the certificate itself is self-signed, tiny and long
expired. So the URL check is the security boundary, and it is designed to be boring:

* :class:`CertificateURLPolicy` decides from the URL string alone, before any I/O, and the
  fetcher then requests exactly that string (no redirects), so what was checked is what is
  fetched.
* A prefix pins scheme, host, port and path start. It is never a host suffix match: the
  official hosts are object-storage buckets, and ``*.aliyuncs.com`` would trust any bucket an
  attacker creates.
* :class:`CertificateCache` is the only way to a public key, and it runs the policy first, so
  no code path can fetch an unchecked URL.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from urllib.parse import unquote, urlsplit

import requests
from cachetools import TTLCache
from cryptography.hazmat.primitives.asymmetric import rsa

from receiver.exceptions import CertificateFetchError, CertificateURLError, ReceiverError
from receiver.verify import public_key_from_pem

__all__ = [
    "OFFICIAL_CERT_URL_PREFIXES",
    "REGION_PLACEHOLDER",
    "CertificateCache",
    "CertificateFetcher",
    "CertificateURLPolicy",
    "RequestsCertificateFetcher",
]

REGION_PLACEHOLDER = "{region}"
"""In a prefix, stands for one region name such as ``cn-hangzhou``: letters, digits, dashes."""

OFFICIAL_CERT_URL_PREFIXES: tuple[str, ...] = (
    "https://mnstest.oss-cn-hangzhou.aliyuncs.com/",
    "https://mns-cert.oss-cn-{region}.aliyuncs.com/",
)
"""Where Alibaba Cloud MNS publishes its signing certificates.

docs/protocol.md#certificate-url-allowlist
"""

# A region can contain neither "." nor "/", so it can never move the host boundary.
_REGION_PATTERN = "[a-z0-9-]+"

CertificateFetcher = Callable[[str], bytes]
"""Certificate URL -> PEM bytes. Raise on any failure; the URL has already passed the policy."""


class CertificateURLPolicy:
    """An allowlist of certificate URL prefixes, matched exactly from the start of the URL.

    Each prefix is ``scheme://host[:port]/path``; the path is matched as a plain string prefix
    (end it with ``/`` to mean a folder), and ``{region}`` may stand for a region name. A
    prefix without a path gets ``/``, so ``http://127.0.0.1:8080`` cannot match
    ``http://127.0.0.1:80800/`` or ``http://127.0.0.1:8080.evil.example/``. http is allowed
    only for prefixes that say ``http://``.

    Candidate URLs must also be plain: printable ASCII, no backslash, no ``.``/``..`` path
    segments (percent-encoded or not), no fragment. Anything else could be read differently
    by the HTTP client than by this check.
    """

    def __init__(self, prefixes: Iterable[str]) -> None:
        self.prefixes: tuple[str, ...] = tuple(_normalized_prefix(p) for p in prefixes)
        self._patterns = [_prefix_pattern(prefix) for prefix in self.prefixes]

    def allows(self, url: str) -> bool:
        """Whether a certificate may be fetched from ``url``."""
        return _is_plain_url(url) and any(p.match(url) for p in self._patterns)

    def check(self, url: str) -> None:
        """Raise :class:`CertificateURLError` unless :meth:`allows` ``url``."""
        if not self.allows(url):
            raise CertificateURLError(f"certificate URL {url!r} is not on the allowlist")


def _normalized_prefix(prefix: str) -> str:
    """Validate one allowlist prefix, appending ``/`` when it has no path."""
    problem = _prefix_problem(prefix)
    if problem:
        raise ValueError(f"bad certificate URL prefix {prefix!r}: {problem}")
    return prefix if urlsplit(prefix).path else prefix + "/"


def _prefix_problem(prefix: str) -> str | None:
    _, _, after_scheme = prefix.partition("://")
    if REGION_PLACEHOLDER in after_scheme.partition("/")[2]:
        return f"{REGION_PLACEHOLDER} may appear only in the host"
    if "{" in prefix.replace(REGION_PLACEHOLDER, ""):
        return f"the only placeholder is {REGION_PLACEHOLDER}"
    parts = urlsplit(prefix.replace(REGION_PLACEHOLDER, "region"))
    if parts.scheme not in ("http", "https"):
        return "scheme must be http or https"
    if not parts.hostname:
        return "host is missing"
    if "@" in parts.netloc:
        return "user info is not allowed"
    if parts.query or "?" in prefix:
        return "a query is not allowed"
    if not _is_plain_url(prefix):
        return "must be printable ASCII without fragment, backslash or dot segments"
    return None


def _prefix_pattern(prefix: str) -> re.Pattern[str]:
    literal_parts = (re.escape(part) for part in prefix.split(REGION_PLACEHOLDER))
    return re.compile(_REGION_PATTERN.join(literal_parts))


def _is_plain_url(url: str) -> bool:
    if not url.isascii() or not url.isprintable() or " " in url or "\\" in url or "#" in url:
        return False
    path = urlsplit(url).path
    return not any(segment in (".", "..") for segment in unquote(path).split("/"))


class RequestsCertificateFetcher:
    """The default :data:`CertificateFetcher`: one GET with ``requests``, bounded three ways.

    ``timeout`` bounds connecting and each read; ``max_bytes`` bounds the download (a
    certificate is about 1 KiB; the default leaves room for long chains); redirects are not
    followed, because a redirect would lead off the allowlisted URL.
    """

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        max_bytes: int = 64 * 1024,
        session: requests.Session | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._session = session

    def __call__(self, url: str) -> bytes:
        if self._session is not None:
            return self._get(self._session, url)
        # A fresh session per fetch: fetches are rare, and no pooled socket survives to be
        # shared by the worker processes that gunicorn --preload forks after a prefetch.
        with requests.Session() as session:
            return self._get(session, url)

    def _get(self, session: requests.Session, url: str) -> bytes:
        try:
            with session.get(
                url, timeout=self.timeout, stream=True, allow_redirects=False
            ) as response:
                if response.status_code != 200:
                    raise CertificateFetchError(
                        f"GET {url!r} answered {response.status_code}, expected 200"
                    )
                return _read_at_most(response.iter_content(8192), self.max_bytes, url)
        except requests.RequestException as exc:
            raise CertificateFetchError(f"GET {url!r} failed: {type(exc).__name__}") from exc


def _read_at_most(chunks: Iterator[bytes], max_bytes: int, url: str) -> bytes:
    received = bytearray()
    for chunk in chunks:  # bounded: stops once max_bytes is exceeded
        received += chunk
        if len(received) > max_bytes:
            raise CertificateFetchError(f"certificate at {url!r} exceeds {max_bytes} bytes")
    return bytes(received)


class CertificateCache:
    """Public keys by exact certificate URL: policy before any fetch, one fetch per URL per TTL.

    * A URL that is not cached must pass the policy before anything else happens. Only such
      URLs are ever fetched and cached, so a cache hit needs no second check.
    * Keys are cached for ``ttl`` seconds of ``timer``; failures are never cached, so a
      certificate server that was briefly down is asked again on the next push.
    * Concurrent lookups of the same uncached URL share one fetch (its key or its error),
      so a burst of pushes after startup or expiry costs one download, not one per thread.

    Thread-safe. Each process has its own cache (call :meth:`public_key` at startup to warm
    it, before gunicorn forks its workers with ``--preload``).
    """

    def __init__(
        self,
        fetcher: CertificateFetcher,
        *,
        policy: CertificateURLPolicy,
        ttl: float = 3600.0,
        maxsize: int = 128,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._policy = policy
        self._keys: TTLCache[str, rsa.RSAPublicKey] = TTLCache(maxsize, ttl, timer=timer)
        self._in_flight: dict[str, Future[rsa.RSAPublicKey]] = {}
        self._lock = threading.Lock()

    def public_key(self, url: str) -> rsa.RSAPublicKey:
        """The public key of the certificate at ``url``, fetched only if not cached.

        Raises :class:`CertificateURLError` (before any I/O) for a URL off the allowlist, and
        :class:`CertificateFetchError` or :class:`InvalidCertificateError` when the download
        or the certificate is bad.
        """
        with self._lock:
            key = self._keys.get(url)
        if key is not None:
            return key
        self._policy.check(url)
        with self._lock:
            key = self._keys.get(url)
            if key is not None:  # fetched by another thread meanwhile
                return key
            pending = self._in_flight.get(url)
            if pending is None:
                pending = self._in_flight[url] = Future()
                leader = True
            else:
                leader = False
        if not leader:
            return pending.result()  # the leader's fetcher is bounded by its own timeout
        return self._fetch_as_leader(url, pending)

    def _fetch_as_leader(self, url: str, pending: Future[rsa.RSAPublicKey]) -> rsa.RSAPublicKey:
        try:
            key = self._download(url)
        except BaseException as exc:  # waiters must never be left hanging, whatever happened
            with self._lock:
                del self._in_flight[url]
            pending.set_exception(exc)
            raise
        with self._lock:
            self._keys[url] = key
            del self._in_flight[url]
        pending.set_result(key)
        return key

    def _download(self, url: str) -> rsa.RSAPublicKey:
        try:
            pem = self._fetcher(url)
        except ReceiverError:
            raise
        except Exception as exc:  # a custom fetcher's own errors still mean "unverifiable"
            raise CertificateFetchError(f"fetching {url!r} failed: {type(exc).__name__}") from exc
        return public_key_from_pem(pem)
