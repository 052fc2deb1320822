"""Pushes through a real forward proxy (Debian's tinyproxy) on 127.0.0.1: absolute-form HTTP,
CONNECT tunnels for https kept alive, credentials, NO_PROXY, refusals, and the egress policy
judging the endpoint rather than the proxy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.delivery.egress import EgressPolicy
from gateway.delivery.proxy import ProxyRoutes, parse_no_proxy, parse_proxy_url
from gateway.pushing.tls import PushTls, TlsFiles
from gateway.pushing.transport import PushOutcome, PushTransport
from gateway.testing import PushRecorder
from gateway.testing.process import free_port
from tests.support.egress import CertificateAuthority, tinyproxy

from .conftest import WAIT_SECONDS

HEADERS = [("Content-Type", "text/plain;charset=utf-8"), ("x-mns-message-id", "MID")]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture()
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority(tmp_path / "ca")


@pytest.fixture()
def https_endpoint(ca: CertificateAuthority) -> Iterator[PushRecorder]:
    recorder = PushRecorder.raw(max_hold=WAIT_SECONDS).start(tls=ca.server_context())
    try:
        yield recorder
    finally:
        recorder.stop()


def _through(
    proxy_url: str,
    *,
    no_proxy: tuple[str, ...] = (),
    ca: CertificateAuthority | None = None,
    egress: EgressPolicy | None = None,
    resolver: object = None,
) -> PushTransport:
    routes = ProxyRoutes(parse_proxy_url(proxy_url), parse_no_proxy(no_proxy))
    tls = PushTls(TlsFiles(ca_file=ca.cert_file)) if ca is not None else None
    extra = {"resolver": resolver} if resolver is not None else {}
    return PushTransport(egress, proxy=routes, tls=tls, default_timeout=WAIT_SECONDS, **extra)  # type: ignore[arg-type]


def test_an_http_push_goes_to_the_proxy_in_absolute_form(
    tmp_path: Path, endpoint: PushRecorder
) -> None:
    with tinyproxy(tmp_path / "proxy") as proxy, _through(proxy.url) as transport:
        result = transport.send(endpoint.url + "/hook?x=1", HEADERS, b"payload")

    assert result.ok, result.error
    [request] = endpoint.received
    assert (request.path, request.body) == ("/hook?x=1", b"payload")
    assert request.headers["host"] == endpoint.url.removeprefix("http://")
    assert "proxy-authorization" not in request.headers
    assert proxy.requests() == [f"POST {endpoint.url}/hook?x=1 HTTP/1.1"]


def test_https_pushes_tunnel_with_connect_and_keep_the_tunnel_alive(
    tmp_path: Path, ca: CertificateAuthority, https_endpoint: PushRecorder
) -> None:
    port = _port(https_endpoint.url)
    with (
        tinyproxy(tmp_path / "proxy", connect_ports=[port]) as proxy,
        _through(proxy.url, ca=ca) as transport,
    ):
        results = [transport.send(https_endpoint.url + "/hook", HEADERS, b"x") for _ in range(3)]

    assert [result.error for result in results] == [None, None, None]
    assert len(https_endpoint.received) == 3
    assert https_endpoint.connections == 1  # one tunnel carried all three
    assert proxy.requests() == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]


def test_the_proxy_credentials_are_sent_for_http_and_for_connect(
    tmp_path: Path,
    ca: CertificateAuthority,
    endpoint: PushRecorder,
    https_endpoint: PushRecorder,
) -> None:
    port = _port(https_endpoint.url)
    credentials = ("gw", "s3cret")
    with (
        tinyproxy(tmp_path / "proxy", connect_ports=[port], basic_auth=credentials) as proxy,
        _through(proxy.url_with(*credentials), ca=ca) as transport,
    ):
        plain = transport.send(endpoint.url, HEADERS, b"x")
        tunnelled = transport.send(https_endpoint.url, HEADERS, b"x")

    assert (plain.error, tunnelled.error) == (None, None)
    assert len(endpoint.received) == len(https_endpoint.received) == 1
    # tinyproxy removes the credentials it checked; they never reach the endpoint either way
    assert "proxy-authorization" not in endpoint.received[0].headers
    assert "proxy-authorization" not in https_endpoint.received[0].headers


@pytest.mark.parametrize(
    ("scheme", "password", "body", "answer"),
    [
        # Without credentials tinyproxy answers 407, reads nothing more and closes: the answer
        # arrives whole when no body is left unread ...
        ("http", None, b"", "answered HTTP 407"),
        # ... and is lost in the connection reset when one is (the proxy is named all the same).
        ("http", None, b"x" * 100_000, "dropped the push: "),
        ("https", None, b"x", "with 407 Proxy Authentication Required"),
        # tinyproxy 1.11 answers wrong credentials 401 (to a plain-HTTP push too, which is then
        # an HTTP error whose text is tinyproxy's page: docs/delivery.md#egress-proxy).
        ("https", "wrong", b"x", "with 401 Unauthorized"),
    ],
)
def test_a_proxy_refusing_the_credentials_is_the_push_connection_error(
    tmp_path: Path,
    ca: CertificateAuthority,
    endpoint: PushRecorder,
    https_endpoint: PushRecorder,
    scheme: str,
    password: str | None,
    body: bytes,
    answer: str,
) -> None:
    target = endpoint if scheme == "http" else https_endpoint
    port = _port(https_endpoint.url)
    with tinyproxy(tmp_path / "proxy", connect_ports=[port], basic_auth=("gw", "right")) as proxy:
        proxy_url = proxy.url if password is None else proxy.url_with("gw", password)
        with _through(proxy_url, ca=ca) as transport:
            result = transport.send(target.url, HEADERS, body)

    assert result.outcome is PushOutcome.CONNECTION_ERROR
    assert result.status is None
    assert result.error is not None
    assert result.error.startswith(f"ProxyError: the proxy {proxy.url} ")
    assert answer in result.error
    assert "wrong" not in result.error
    assert target.received == []


def test_a_connect_the_proxy_refuses_is_the_push_connection_error_with_its_answer(
    tmp_path: Path, ca: CertificateAuthority, https_endpoint: PushRecorder
) -> None:
    with tinyproxy(tmp_path / "proxy") as proxy, _through(proxy.url, ca=ca) as transport:
        result = transport.send(https_endpoint.url, HEADERS, b"x")  # its port is not allowed

    port = _port(https_endpoint.url)
    assert result.outcome is PushOutcome.CONNECTION_ERROR
    assert result.error == (
        f"ProxyError: the proxy {proxy.url} answered CONNECT 127.0.0.1:{port} "
        "with 403 Access violation"
    )
    assert https_endpoint.received == []


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_that_is_down_is_the_push_connection_error(
    endpoint: PushRecorder, https_endpoint: PushRecorder, scheme: str
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    target = endpoint if scheme == "http" else https_endpoint
    with _through(nowhere) as transport:
        result = transport.send(target.url, HEADERS, b"x")

    assert result.outcome is PushOutcome.CONNECTION_ERROR
    assert result.error is not None
    assert result.error.startswith(f"ProxyError: cannot connect to the proxy {nowhere}: ")
    assert "Connection refused" in result.error


@pytest.mark.parametrize("entry", ["127.0.0.1", "127.0.0.0/8", "localhost", "*"])
def test_no_proxy_hosts_are_reached_directly(
    tmp_path: Path, endpoint: PushRecorder, entry: str
) -> None:
    url = endpoint.url.replace("127.0.0.1", "localhost") if entry == "localhost" else endpoint.url
    with (
        tinyproxy(tmp_path / "proxy") as proxy,
        _through(
            proxy.url, no_proxy=(entry,), resolver=lambda host, port: ["127.0.0.1"]
        ) as transport,
    ):
        result = transport.send(url, HEADERS, b"x")

    assert result.ok, result.error
    assert len(endpoint.received) == 1
    assert proxy.requests() == []


def test_hosts_not_listed_in_no_proxy_still_go_through_it(
    tmp_path: Path, endpoint: PushRecorder
) -> None:
    with (
        tinyproxy(tmp_path / "proxy") as proxy,
        _through(proxy.url, no_proxy=("internal.corp", "10.0.0.0/8")) as transport,
    ):
        assert transport.send(endpoint.url, HEADERS, b"x").ok

    assert len(proxy.requests()) == 1


def test_the_egress_policy_judges_the_endpoint_not_the_proxy(
    tmp_path: Path, endpoint: PushRecorder
) -> None:
    """The proxy listens on 127.0.0.1, which the policy denies; the endpoint's name resolves
    (for the gateway) to 127.0.0.2, which it permits: the push goes. The proxy resolves
    ``localhost`` itself and reaches the endpoint."""
    url = endpoint.url.replace("127.0.0.1", "localhost")

    def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.2"] if host == "localhost" else [host]

    denies_proxy = EgressPolicy(deny=["127.0.0.1/32"])
    with (
        tinyproxy(tmp_path / "proxy") as proxy,
        _through(proxy.url, egress=denies_proxy, resolver=resolver) as transport,
    ):
        result = transport.send(url, HEADERS, b"x")

    assert result.ok, result.error
    assert len(endpoint.received) == 1


def test_an_endpoint_the_egress_policy_refuses_is_refused_before_the_proxy_is_asked(
    tmp_path: Path, endpoint: PushRecorder
) -> None:
    with (
        tinyproxy(tmp_path / "proxy") as proxy,
        _through(proxy.url, egress=EgressPolicy(deny=["127.0.0.0/8"])) as transport,
    ):
        result = transport.send(endpoint.url, HEADERS, b"x")

    assert result.outcome is PushOutcome.REFUSED_BY_POLICY
    assert result.error is not None and "127.0.0.1" in result.error
    assert proxy.requests() == []
    assert endpoint.received == []
