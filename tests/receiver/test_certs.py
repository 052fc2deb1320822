"""Certificate URL policy, the real HTTP fetcher, and the cache in front of it."""

from __future__ import annotations

import socket
import threading

import pytest

from receiver.certs import (
    OFFICIAL_CERT_URL_PREFIXES,
    CertificateCache,
    CertificateURLPolicy,
    RequestsCertificateFetcher,
)
from receiver.exceptions import (
    CertificateFetchError,
    CertificateURLError,
    InvalidCertificateError,
)
from receiver.testing import SigningIdentity
from tests.support.clock import Clock

from .conftest import CountingFetcher, FileServer, Route

OFFICIAL = CertificateURLPolicy(OFFICIAL_CERT_URL_PREFIXES)


class TestOfficialAllowlist:
    @pytest.mark.parametrize(
        "url",
        [
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem",
            "https://mns-cert.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem",
            "https://mns-cert.oss-cn-beijing.aliyuncs.com/a/b.pem",
            "https://mns-cert.oss-cn-hongkong.aliyuncs.com/cert.pem?v=2",
        ],
    )
    def test_allows_the_official_locations(self, url: str) -> None:
        assert OFFICIAL.allows(url)

    @pytest.mark.parametrize(
        "url",
        [
            # http when the prefix says https
            "http://mnstest.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem",
            "http://mns-cert.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem",
            # another bucket on the same storage service: a suffix match would trust these
            "https://attacker.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem",
            "https://evil-mns-cert.oss-cn-hangzhou.aliyuncs.com/cert.pem",
            "https://mns-cert.evil.oss-cn-hangzhou.aliyuncs.com/cert.pem",
            # the official host as a prefix of another host
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com.evil.example/cert.pem",
            "https://mns-cert.oss-cn-hangzhou.aliyuncs.com.evil.example/cert.pem",
            # a region token that tries to smuggle a dot or path into the host
            "https://mns-cert.oss-cn-x.evil.example/.aliyuncs.com/cert.pem",
            "https://mns-cert.oss-cn-.aliyuncs.com/cert.pem",
            # user info, ports, case, odd characters, traversal
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com@evil.example/cert.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com:8443/cert.pem",
            "https://MNSTEST.oss-cn-hangzhou.aliyuncs.com/cert.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/a\\..\\cert.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/a/../cert.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/a/%2E%2E/cert.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/cert.pem#frag",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/c ert.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/cért.pem",
            "https://mnstest.oss-cn-hangzhou.aliyuncs.com/cert.pem\r\nX: y",
            "file:///etc/passwd",
            "",
        ],
    )
    def test_refuses_everything_else(self, url: str) -> None:
        assert not OFFICIAL.allows(url)
        with pytest.raises(CertificateURLError):
            OFFICIAL.check(url)


class TestCustomPrefixes:
    def test_http_is_allowed_only_when_listed(self) -> None:
        policy = CertificateURLPolicy(["http://127.0.0.1:8080/certs/"])
        assert policy.allows("http://127.0.0.1:8080/certs/key-1.pem")
        assert not policy.allows("https://127.0.0.1:8080/certs/key-1.pem")
        assert not policy.allows("http://127.0.0.1:8080/other/key-1.pem")

    def test_a_prefix_without_path_is_pinned_to_its_host_and_port(self) -> None:
        policy = CertificateURLPolicy(["http://127.0.0.1:8080"])
        assert policy.prefixes == ("http://127.0.0.1:8080/",)
        assert policy.allows("http://127.0.0.1:8080/certs/k.pem")
        assert not policy.allows("http://127.0.0.1:80800/certs/k.pem")
        assert not policy.allows("http://127.0.0.1:8080.evil.example/k.pem")
        assert not policy.allows("http://127.0.0.1:8080@evil.example/k.pem")

    def test_an_empty_allowlist_refuses_everything(self) -> None:
        assert not CertificateURLPolicy([]).allows(OFFICIAL_CERT_URL_PREFIXES[0] + "x.pem")

    @pytest.mark.parametrize(
        "prefix",
        [
            "ftp://127.0.0.1/",
            "127.0.0.1:8080/certs/",
            "http:///certs/",
            "http://user@127.0.0.1/",
            "http://127.0.0.1/certs?x=1",
            "http://127.0.0.1/{region}/",
            "http://{bucket}.example/",
            "http://127.0.0.1/a/../b/",
        ],
    )
    def test_refuses_prefixes_that_could_not_be_matched_safely(self, prefix: str) -> None:
        with pytest.raises(ValueError, match="bad certificate URL prefix"):
            CertificateURLPolicy([prefix])


class TestRequestsFetcher:
    def test_downloads_a_certificate(
        self, file_server: FileServer, identity: SigningIdentity
    ) -> None:
        file_server.routes["/certs/k.pem"] = Route(200, identity.certificate_pem)
        fetched = RequestsCertificateFetcher()(file_server.url("/certs/k.pem"))
        assert fetched == identity.certificate_pem

    def test_a_non_200_answer_is_a_failure(self, file_server: FileServer) -> None:
        with pytest.raises(CertificateFetchError, match="404"):
            RequestsCertificateFetcher()(file_server.url("/missing.pem"))

    def test_redirects_are_not_followed(
        self, file_server: FileServer, identity: SigningIdentity
    ) -> None:
        file_server.routes["/moved.pem"] = Route(302, headers={"Location": "/elsewhere.pem"})
        file_server.routes["/elsewhere.pem"] = Route(200, identity.certificate_pem)
        with pytest.raises(CertificateFetchError, match="302"):
            RequestsCertificateFetcher()(file_server.url("/moved.pem"))
        assert file_server.hits == ["/moved.pem"]

    def test_refuses_bodies_over_the_size_cap(self, file_server: FileServer) -> None:
        file_server.routes["/huge.pem"] = Route(200, b"x" * 5000)
        with pytest.raises(CertificateFetchError, match="exceeds 4096 bytes"):
            RequestsCertificateFetcher(max_bytes=4096)(file_server.url("/huge.pem"))

    def test_gives_up_on_a_server_that_never_answers(self) -> None:
        with socket.socket() as silent:  # accepts connections (backlog) but never replies
            silent.bind(("127.0.0.1", 0))
            silent.listen(1)
            url = f"http://127.0.0.1:{silent.getsockname()[1]}/k.pem"
            with pytest.raises(CertificateFetchError, match="Timeout"):
                RequestsCertificateFetcher(timeout=0.2)(url)

    def test_a_refused_connection_is_a_failure(self) -> None:
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{closed.getsockname()[1]}/k.pem"
        with pytest.raises(CertificateFetchError, match="ConnectionError"):
            RequestsCertificateFetcher(timeout=2)(url)


LOCAL_POLICY = CertificateURLPolicy(["https://certs.test/"])
URL_A = "https://certs.test/a.pem"
URL_B = "https://certs.test/b.pem"


@pytest.fixture
def two_certs(identity: SigningIdentity, legacy: SigningIdentity) -> CountingFetcher:
    return CountingFetcher({URL_A: identity.certificate_pem, URL_B: legacy.certificate_pem})


class TestCertificateCache:
    def test_fetches_once_for_many_lookups(self, two_certs: CountingFetcher) -> None:
        cache = CertificateCache(two_certs, policy=LOCAL_POLICY)
        keys = {id(cache.public_key(URL_A)) for _ in range(50)}
        assert two_certs.calls == [URL_A]
        assert len(keys) == 1

    def test_a_new_url_fetches_again(self, two_certs: CountingFetcher) -> None:
        cache = CertificateCache(two_certs, policy=LOCAL_POLICY)
        assert cache.public_key(URL_A).key_size == 2048
        assert cache.public_key(URL_B).key_size == 512
        cache.public_key(URL_A)
        assert two_certs.calls == [URL_A, URL_B]

    def test_failures_are_not_cached(self, two_certs: CountingFetcher) -> None:
        cache = CertificateCache(two_certs, policy=LOCAL_POLICY)
        two_certs.failing.add(URL_A)
        with pytest.raises(CertificateFetchError):
            cache.public_key(URL_A)
        two_certs.failing.clear()
        cache.public_key(URL_A)
        assert two_certs.calls == [URL_A, URL_A]

    def test_an_invalid_certificate_is_not_cached_either(self, two_certs: CountingFetcher) -> None:
        good = two_certs.pems[URL_A]
        two_certs.pems[URL_A] = b"garbage"
        cache = CertificateCache(two_certs, policy=LOCAL_POLICY)
        with pytest.raises(InvalidCertificateError):
            cache.public_key(URL_A)
        two_certs.pems[URL_A] = good
        cache.public_key(URL_A)
        assert len(two_certs.calls) == 2

    def test_entries_expire_after_the_ttl(self, two_certs: CountingFetcher) -> None:
        clock = Clock(0)
        cache = CertificateCache(two_certs, policy=LOCAL_POLICY, ttl=60, timer=clock)
        cache.public_key(URL_A)
        clock.advance(59)
        cache.public_key(URL_A)
        assert len(two_certs.calls) == 1
        clock.advance(2)
        cache.public_key(URL_A)
        assert len(two_certs.calls) == 2

    def test_urls_off_the_allowlist_are_never_fetched(self, two_certs: CountingFetcher) -> None:
        cache = CertificateCache(two_certs, policy=LOCAL_POLICY)
        with pytest.raises(CertificateURLError):
            cache.public_key("https://certs.test.evil.example/a.pem")
        assert two_certs.calls == []

    def test_a_fetcher_crash_becomes_a_fetch_error(self) -> None:
        def broken(url: str) -> bytes:
            raise OSError("disk on fire")

        cache = CertificateCache(broken, policy=LOCAL_POLICY)
        with pytest.raises(CertificateFetchError, match="OSError"):
            cache.public_key(URL_A)


class TestConcurrentLookups:
    """Threads asking for the same uncached URL share one fetch, success or failure."""

    THREADS = 8

    def run_concurrently(self, cache: CertificateCache) -> list[object]:
        results: list[object] = []
        start = threading.Barrier(self.THREADS)

        def look_up() -> None:
            start.wait(timeout=5)
            try:
                results.append(cache.public_key(URL_A))
            except Exception as exc:
                results.append(exc)

        threads = [threading.Thread(target=look_up) for _ in range(self.THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        return results

    def test_share_one_successful_fetch(self, two_certs: CountingFetcher) -> None:
        results = self.run_concurrently(
            CertificateCache(GatedFetcher(two_certs), policy=LOCAL_POLICY)
        )
        assert two_certs.calls == [URL_A]
        assert len(results) == self.THREADS
        assert len({id(key) for key in results}) == 1

    def test_share_one_failed_fetch_then_retry(self, two_certs: CountingFetcher) -> None:
        two_certs.failing.add(URL_A)
        cache = CertificateCache(GatedFetcher(two_certs), policy=LOCAL_POLICY)
        results = self.run_concurrently(cache)
        assert two_certs.calls == [URL_A]
        assert len(results) == self.THREADS
        assert all(isinstance(result, CertificateFetchError) for result in results)
        two_certs.failing.clear()
        cache.public_key(URL_A)
        assert two_certs.calls == [URL_A, URL_A]


class GatedFetcher:
    """Holds the first fetch until a second fetch starts, or for at most 0.5 s.

    With single-flight working no second fetch starts, so the first one is held long enough
    for every other thread to arrive and wait on it; without single-flight, a second fetch
    starts, releases the first at once, and the recorded calls show the duplicate.
    """

    def __init__(self, inner: CountingFetcher) -> None:
        self.inner = inner
        self.started = 0
        self._lock = threading.Lock()
        self._second_started = threading.Event()

    def __call__(self, url: str) -> bytes:
        with self._lock:
            self.started += 1
            first = self.started == 1
        if first:
            self._second_started.wait(timeout=0.5)
        else:
            self._second_started.set()
        return self.inner(url)
