"""One push attempt against real receivers on 127.0.0.1: outcomes, pooling, egress, the wire."""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
from collections.abc import Iterator

import pytest

from gateway.delivery.egress import EgressPolicy
from gateway.delivery.formats import (
    ContentFormat,
    push_headers,
    push_path,
    render,
)
from gateway.delivery.signing import sign_headers
from gateway.pushing.keyring import KeyRing
from gateway.pushing.transport import (
    MAX_RESPONSE_BYTES,
    PushOutcome,
    PushResult,
    PushTransport,
)
from gateway.testing import Answer, PushRecorder
from tests.support.notifications import billing_notification

from .conftest import WAIT_SECONDS, RawEndpoint, TlsFiles

HEADERS = [("Content-Type", "text/plain;charset=utf-8"), ("x-mns-message-id", "MID")]
LOOPBACK = ["127.0.0.0/8", "::1/128"]  # "localhost" may resolve to either family


def test_2xx_is_success_and_the_request_arrives_intact(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    result = transport.send(endpoint.url + "/hook?x=1", HEADERS, b"payload")

    assert result.outcome == "success" and result.ok
    assert (result.status, result.error) == (204, None)
    assert result.latency_ms > 0
    [request] = endpoint.received  # the recorder takes POST only
    assert (request.path, request.body) == ("/hook?x=1", b"payload")


def test_a_body_larger_than_the_send_buffer_arrives_whole(
    raw_endpoint: RawEndpoint, transport: PushTransport
) -> None:
    """One send() takes what the socket's buffers hold (a few MiB on loopback); the rest
    follows."""
    body = bytes(range(256)) * 131072  # 32 MiB
    assert transport.send(raw_endpoint.url, HEADERS, body, timeout=WAIT_SECONDS).ok
    assert raw_endpoint.done.wait(WAIT_SECONDS)
    assert raw_endpoint.received.endswith(b"\r\n\r\n" + body)


def test_a_large_body_arrives_whole_over_tls(
    tls_endpoint: PushRecorder, tls_files: TlsFiles
) -> None:
    body = bytes(range(256)) * 4096  # 1 MiB, what the recorder keeps of a body
    trusting = ssl.create_default_context(cafile=str(tls_files.certificate))
    with PushTransport(ssl_context=trusting) as transport:
        assert transport.send(tls_endpoint.url, HEADERS, body, timeout=WAIT_SECONDS).ok
    assert [request.body for request in tls_endpoint.received] == [body]


@pytest.mark.parametrize("status", [200, 201, 202, 299])
def test_every_2xx_status_is_success(
    endpoint: PushRecorder, transport: PushTransport, status: int
) -> None:
    endpoint.status = status

    assert transport.send(endpoint.url, HEADERS, b"x").ok


def test_an_endpoint_without_a_path_receives_at_notifications(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    transport.send(endpoint.url, HEADERS, b"x")

    assert endpoint.received[0].path == "/notifications"


def test_the_request_target_on_the_wire_is_the_signed_push_path(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    url = endpoint.url + "/a b/%7e/../c?q=x y&z=ü"

    assert transport.send(url, HEADERS, b"x").ok
    assert endpoint.received[0].path == push_path(url) == "/a%20b/c?q=x%20y&z=%C3%BC"


def test_5xx_is_an_http_error_with_the_body_excerpt(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    endpoint.answer(Answer(503, b"down for maintenance"))

    result = transport.send(endpoint.url, HEADERS, b"x")

    assert (result.outcome, result.status) == (PushOutcome.HTTP_ERROR, 503)
    assert result.error == "HTTP 503: down for maintenance"


def test_redirects_are_failures_and_not_followed(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    endpoint.status = 302
    endpoint.answer(Answer(302, headers=(("Location", "/redirected"),)))

    result = transport.send(endpoint.url, HEADERS, b"x")

    assert (result.outcome, result.status) == (PushOutcome.HTTP_ERROR, 302)
    assert len(endpoint.received) == 1


def test_a_slow_endpoint_times_out(endpoint: PushRecorder, transport: PushTransport) -> None:
    endpoint.hold()  # the receiver holds every request until the test ends

    result = transport.send(endpoint.url, HEADERS, b"x", timeout=0.3)

    assert endpoint.received  # it arrived
    assert (result.outcome, result.status) == (PushOutcome.TIMEOUT, None)
    assert "timed out" in (result.error or "")


def test_a_2xx_after_the_deadline_is_a_timeout(endpoint: PushRecorder) -> None:
    ten_seconds_per_reading = itertools.count(0.0, 10.0).__next__

    with PushTransport(clock=ten_seconds_per_reading, default_timeout=5.0) as transport:
        result = transport.send(endpoint.url, HEADERS, b"x")

    assert (result.outcome, result.status, result.latency_ms) == (PushOutcome.TIMEOUT, 204, 10_000)


def test_a_refused_connection_is_a_connection_error(transport: PushTransport) -> None:
    with socket.socket() as bound_but_not_listening:
        bound_but_not_listening.bind(("127.0.0.1", 0))
        port = bound_but_not_listening.getsockname()[1]

        result = transport.send(f"http://127.0.0.1:{port}/", HEADERS, b"x")

    assert (result.outcome, result.status) == (PushOutcome.CONNECTION_ERROR, None)
    assert "refused" in (result.error or "").lower()


def test_an_unsupported_scheme_is_a_connection_error(transport: PushTransport) -> None:
    assert transport.send("ftp://127.0.0.1/", HEADERS, b"x").outcome == "connection_error"


def test_connections_are_kept_alive_and_reused(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    results = [transport.send(endpoint.url, HEADERS, b"x") for _ in range(5)]

    assert all(result.ok for result in results)
    assert len(endpoint.received) == 5
    assert endpoint.connections == 1


def test_the_least_recently_used_host_s_connections_go_when_there_are_too_many_hosts(
    endpoint: PushRecorder,
) -> None:
    port = int(endpoint.url.rsplit(":", 1)[1])
    with PushTransport(max_hosts=2, resolver=lambda host, port: ["127.0.0.1"]) as transport:
        for host in "abacab":  # c's pool evicts b's (a was used since), then b's evicts c's
            assert transport.send(f"http://{host}.example.test:{port}/", HEADERS, b"x").ok

    # a's connection served all three of its pushes; b's and c's were replaced. Evicting the
    # oldest pool instead of the least recently used would have closed a's at c (5).
    assert endpoint.connections == 4


def test_an_oversized_response_is_not_drained_and_its_connection_is_replaced(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    endpoint.answer(Answer(500, b"x" * (MAX_RESPONSE_BYTES + 10)))
    assert transport.send(endpoint.url, HEADERS, b"x").outcome == "http_error"

    assert transport.send(endpoint.url, HEADERS, b"x").ok
    assert transport.send(endpoint.url, HEADERS, b"x").ok

    assert endpoint.connections == 2


def send_in_background(
    transport: PushTransport, url: str, results: list[PushResult]
) -> threading.Thread:
    thread = threading.Thread(
        target=lambda: results.append(transport.send(url, HEADERS, b"x", timeout=WAIT_SECONDS))
    )
    thread.start()
    return thread


@pytest.fixture()
def one_per_host() -> Iterator[PushTransport]:
    with PushTransport(max_per_host=1) as transport:
        yield transport


def test_concurrency_per_host_is_bounded(
    endpoint: PushRecorder, one_per_host: PushTransport
) -> None:
    endpoint.hold()
    first: list[PushResult] = []
    thread = send_in_background(one_per_host, endpoint.url, first)
    endpoint.wait_for(1, timeout=WAIT_SECONDS)

    second = one_per_host.send(endpoint.url, HEADERS, b"x", timeout=0.2)
    endpoint.release()
    thread.join(WAIT_SECONDS)

    assert (second.outcome, second.status) == (PushOutcome.TIMEOUT, None)
    assert "no free connection" in (second.error or "")
    assert first[0].ok
    assert endpoint.connections == 1 and len(endpoint.received) == 1


def test_a_busy_host_does_not_block_other_hosts(
    endpoint: PushRecorder, second_endpoint: PushRecorder, one_per_host: PushTransport
) -> None:
    endpoint.hold()
    first: list[PushResult] = []
    thread = send_in_background(one_per_host, endpoint.url, first)
    endpoint.wait_for(1, timeout=WAIT_SECONDS)

    other = one_per_host.send(second_endpoint.url, HEADERS, b"x", timeout=WAIT_SECONDS)
    endpoint.release()
    thread.join(WAIT_SECONDS)

    assert other.ok and first[0].ok


def localhost_url(endpoint: PushRecorder) -> str:
    return endpoint.url.replace("127.0.0.1", "localhost")


def test_a_hostname_resolving_to_loopback_is_permitted_by_default(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    assert transport.send(localhost_url(endpoint), HEADERS, b"x").ok


def test_a_hostname_resolving_to_a_denied_address_is_refused(endpoint: PushRecorder) -> None:
    with PushTransport(EgressPolicy(deny=LOOPBACK)) as transport:
        result = transport.send(localhost_url(endpoint), HEADERS, b"x")

    assert (result.outcome, result.status) == (PushOutcome.REFUSED_BY_POLICY, None)
    assert "localhost resolves to" in (result.error or "")
    assert endpoint.received == []


def test_a_refused_address_is_never_connected_to() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:  # listens, never accepts
        url = f"http://localhost:{listener.getsockname()[1]}/"
        listener.setblocking(False)
        with PushTransport(EgressPolicy(deny=LOOPBACK)) as refusing:
            assert refusing.send(url, HEADERS, b"x").outcome == "refused_by_policy"
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection is waiting in the backlog

        with PushTransport() as permitting:  # control: a permitted attempt does show up
            assert permitting.send(url, HEADERS, b"x", timeout=0.2).outcome == "timeout"
        connection, _ = listener.accept()
        connection.close()


def test_only_permitted_resolved_addresses_are_tried(endpoint: PushRecorder) -> None:
    lookups: list[tuple[str, int]] = []

    def resolver(host: str, port: int) -> list[str]:
        lookups.append((host, port))
        return ["169.254.169.254", "127.0.0.1"]

    port = int(endpoint.url.rsplit(":", 1)[1])
    with PushTransport(resolver=resolver) as transport:
        result = transport.send(f"http://push.example.test:{port}/hook", HEADERS, b"x")

    assert result.ok
    assert lookups == [("push.example.test", port)]
    assert endpoint.received[0].headers["host"] == f"push.example.test:{port}"


def test_a_name_resolving_only_to_metadata_is_refused() -> None:
    with PushTransport(resolver=lambda host, port: ["169.254.169.254"]) as transport:
        result = transport.send("http://metadata.example.test/latest/", HEADERS, b"x")

    assert result.outcome == "refused_by_policy"
    assert "169.254.169.254" in (result.error or "")


def signed_push_headers(
    ring: KeyRing, body_format: ContentFormat
) -> tuple[list[tuple[str, str]], bytes]:
    notification = billing_notification("hello 中文", tag="标签")
    rendered = render(notification, body_format)
    headers = push_headers(
        notification,
        rendered,
        date="Tue, 14 Nov 2023 22:13:20 GMT",
        request_id="0123456789ABCDEF01234567",
        signing_cert_url="http://127.0.0.1:8080/certs/0123456789abcdef.pem",
    )
    return sign_headers(ring.current, headers, "/notifications"), rendered.body


def test_header_spellings_arrive_on_the_wire_exactly(
    raw_endpoint: RawEndpoint, transport: PushTransport, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ring = KeyRing(tmp_path_factory.mktemp("keys"), bits=1024)
    headers, body = signed_push_headers(ring, ContentFormat.XML)

    assert transport.send(raw_endpoint.url, headers, body).ok
    assert raw_endpoint.done.wait(WAIT_SECONDS)

    head, _, received_body = raw_endpoint.received.partition(b"\r\n\r\n")
    port = raw_endpoint.url.rsplit(":", 1)[1]
    assert head.split(b"\r\n") == [
        b"POST /notifications HTTP/1.1",
        f"Host: 127.0.0.1:{port}".encode(),
        f"Content-Length: {len(body)}".encode(),
        *(f"{name}: {value}".encode() for name, value in headers),  # UTF-8 for the tag
    ]
    assert received_body == body


def test_https_endpoints_are_pushed_to_and_checked_alike(
    tls_endpoint: PushRecorder, tls_files: TlsFiles
) -> None:
    trusting = ssl.create_default_context(cafile=str(tls_files.certificate))
    with PushTransport(ssl_context=trusting) as transport:
        assert transport.send(tls_endpoint.url + "/secure", HEADERS, b"x").ok
        assert transport.send(localhost_url(tls_endpoint), HEADERS, b"x").ok
    with PushTransport(EgressPolicy(deny=LOOPBACK), ssl_context=trusting) as refusing:
        assert refusing.send(localhost_url(tls_endpoint), HEADERS, b"x").outcome == (
            "refused_by_policy"
        )
    with PushTransport() as untrusting:
        result = untrusting.send(tls_endpoint.url, HEADERS, b"x")

    assert result.outcome == "connection_error"
    assert "CERTIFICATE_VERIFY_FAILED" in (result.error or "")
    assert [request.path for request in tls_endpoint.received] == ["/secure", "/notifications"]


def test_https_connections_are_kept_alive_too(
    tls_endpoint: PushRecorder, tls_files: TlsFiles
) -> None:
    trusting = ssl.create_default_context(cafile=str(tls_files.certificate))
    with PushTransport(ssl_context=trusting) as transport:
        assert all(transport.send(tls_endpoint.url, HEADERS, b"x").ok for _ in range(4))
    assert tls_endpoint.connections == 1 and len(tls_endpoint.received) == 4


def test_a_connection_closed_by_the_endpoint_is_not_reused(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    endpoint.answer(Answer(), Answer(connection="close"))
    assert transport.send(endpoint.url, HEADERS, b"x").ok
    assert transport.send(endpoint.url, HEADERS, b"x").ok  # answered with Connection: close
    assert transport.send(endpoint.url, HEADERS, b"x").ok
    assert endpoint.connections == 2


def test_a_kept_alive_connection_the_endpoint_hung_up_on_is_not_reused(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    endpoint.answer(Answer(connection="drop"))
    assert transport.send(endpoint.url, HEADERS, b"x").ok
    endpoint.wait_closed(1, timeout=5)
    assert transport.send(endpoint.url, HEADERS, b"x").ok  # reusing the dead socket would fail
    assert endpoint.connections == 2


#: Host spellings a URL may use for the unspecified address (the system resolver reads them).
UNSPECIFIED_HOSTS = ["0.0.0.0", "0", "0x0", "00", "0.0", "[::]", "[0::0]", "[::ffff:0.0.0.0]"]


@pytest.mark.parametrize("host", UNSPECIFIED_HOSTS)
def test_the_unspecified_address_never_reaches_a_denied_local_host(host: str) -> None:
    """On Linux a connection to 0.0.0.0 or :: arrives at the local host: a service listening on
    127.0.0.1 (or ::1) must not be dialled when loopback is denied, however the URL spells it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        listener.setblocking(False)
        with PushTransport(EgressPolicy(deny=LOOPBACK)) as transport:
            result = transport.send(f"http://{host}:{port}/a", HEADERS, b"x", timeout=0.5)
        assert result.outcome == "refused_by_policy", result
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_the_unspecified_ipv6_address_never_reaches_a_denied_ipv6_loopback() -> None:
    try:
        listener = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with listener:
        port = listener.getsockname()[1]
        listener.setblocking(False)
        with PushTransport(EgressPolicy(deny=LOOPBACK)) as transport:
            assert transport.send(f"http://[::]:{port}/a", HEADERS, b"x").outcome == (
                "refused_by_policy"
            )
        with pytest.raises(BlockingIOError):
            listener.accept()
