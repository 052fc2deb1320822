"""A push on the wire (gateway/delivery/wire.py): its origin and its request's bytes, pure."""

from __future__ import annotations

import pytest

from gateway.delivery.proxy import PushProxy
from gateway.delivery.wire import Origin, authority, encode_request, origin_of, request_bytes
from gateway.errors import DeliveryError

HEADERS = [("Content-Type", "text/xml;charset=utf-8"), ("x-mns-message-id", "MID")]


@pytest.mark.parametrize(
    ("url", "origin", "host_header"),
    [
        ("http://hooks.example/notify", Origin("http", "hooks.example", 80), "hooks.example"),
        ("https://hooks.example/a?b=1", Origin("https", "hooks.example", 443), "hooks.example"),
        ("http://127.0.0.1:8080/", Origin("http", "127.0.0.1", 8080), "127.0.0.1:8080"),
        ("https://[::1]:8443/x", Origin("https", "::1", 8443), "[::1]:8443"),
        ("https://[::1]/x", Origin("https", "::1", 443), "[::1]"),
    ],
)
def test_an_endpoint_s_origin_and_host_header(url: str, origin: Origin, host_header: str) -> None:
    assert origin_of(url) == origin
    assert origin.host_header == host_header


@pytest.mark.parametrize("url", ["ftp://hooks.example/", "http:///path", "mailto:a@b"])
def test_only_http_and_https_urls_have_an_origin(url: str) -> None:
    with pytest.raises(DeliveryError, match="only http and https"):
        origin_of(url)


def test_the_request_is_the_headers_as_given_then_the_body() -> None:
    request = encode_request("/notify?a=1", "hooks.example", HEADERS, "体".encode())

    assert request == (
        b"POST /notify?a=1 HTTP/1.1\r\nHost: hooks.example\r\nContent-Length: 3\r\n"
        b"Content-Type: text/xml;charset=utf-8\r\nx-mns-message-id: MID\r\n\r\n" + "体".encode()
    )


@pytest.mark.parametrize(
    ("path", "headers"),
    [("/a\r\nX-Injected: 1", []), ("/", [("X-Name", "v\nX-Injected: 1")]), ("/", [("A\rB", "v")])],
)
def test_a_line_break_anywhere_is_refused(path: str, headers: list[tuple[str, str]]) -> None:
    with pytest.raises(DeliveryError, match="line break"):
        encode_request(path, "hooks.example", headers, b"")


def test_through_a_proxy_plain_http_goes_in_absolute_form_with_its_credentials() -> None:
    proxy = PushProxy("proxy.internal", 3128, "Basic dTpw")
    origin = origin_of("http://hooks.example:8080/notify")

    request = request_bytes(origin, proxy, "/notify", HEADERS, b"x")

    head = request.split(b"\r\n")
    assert head[0] == b"POST http://hooks.example:8080/notify HTTP/1.1"
    assert b"Proxy-Authorization: Basic dTpw" in head
    assert b"Host: hooks.example:8080" in head


def test_through_a_proxy_https_goes_unchanged_inside_the_tunnel() -> None:
    proxy = PushProxy("proxy.internal", 3128, "Basic dTpw")
    origin = origin_of("https://[::1]:8443/notify")

    request = request_bytes(origin, proxy, "/notify", HEADERS, b"x")

    assert request == encode_request("/notify", "[::1]:8443", HEADERS, b"x")
    assert authority(origin) == "[::1]:8443"
    assert authority(origin_of("https://hooks.example/")) == "hooks.example:443"
