"""The egress proxy's pure parts: its URL, NO_PROXY, and what is said to it."""

from __future__ import annotations

import base64

import pytest

from gateway.delivery.proxy import (
    NoProxy,
    ProxyRoutes,
    PushProxy,
    absolute_target,
    connect_request,
    parse_connect_answer,
    parse_no_proxy,
    parse_proxy_url,
)


def test_a_proxy_url_names_host_and_port() -> None:
    assert parse_proxy_url("http://proxy.corp:3128") == PushProxy("proxy.corp", 3128)
    assert parse_proxy_url(" http://10.0.0.1/ ") == PushProxy("10.0.0.1", 80)
    assert parse_proxy_url("http://[fd00::1]:8080").shown == "http://[fd00::1]:8080"


def test_credentials_become_basic_proxy_authorization_and_are_never_shown() -> None:
    proxy = parse_proxy_url("http://gate%40way:p%3Ass@proxy.corp:3128")

    assert proxy.authorization is not None
    scheme, token = proxy.authorization.split(" ")
    assert (scheme, base64.b64decode(token)) == ("Basic", b"gate@way:p:ss")
    assert proxy.shown == "http://proxy.corp:3128"
    assert "p:ss" not in repr(proxy.shown)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://proxy.corp:3128", "http://"),
        ("socks5://proxy.corp:1080", "http://"),
        ("proxy.corp:3128", "http://"),
        ("http://:3128", "host"),
        ("http://proxy.corp:99999", "port"),
        ("http://proxy.corp:x", "port"),
        ("http://proxy.corp:3128/path", "path"),
        ("http://proxy.corp:3128?q=1", "path"),
    ],
)
def test_an_unusable_proxy_url_says_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_proxy_url(url)


def test_an_error_never_repeats_the_password() -> None:
    with pytest.raises(ValueError) as raised:
        parse_proxy_url("https://user:secret@proxy.corp:3128")
    assert "secret" not in str(raised.value)


@pytest.mark.parametrize(
    ("entries", "host", "bypassed"),
    [
        (["example.com"], "example.com", True),
        (["example.com"], "api.example.com", True),
        (["example.com"], "EXAMPLE.com.", True),
        ([".example.com"], "api.example.com", True),
        ([".example.com"], "example.com", True),
        (["example.com"], "notexample.com", False),
        (["example.com"], "example.com.evil.test", False),
        (["api.example.com"], "example.com", False),
        (["10.0.0.0/8"], "10.1.2.3", True),
        (["10.0.0.0/8"], "11.1.2.3", False),
        (["10.0.0.0/8"], "ten.example.com", False),
        (["192.168.1.7"], "192.168.1.7", True),
        (["192.168.1.7"], "192.168.1.8", False),
        (["fd00::/8"], "[fd00::5]", True),
        (["fd00::/8"], "fd00::5", True),
        (["127.0.0.0/8"], "::ffff:127.0.0.1", True),
        (["*"], "anything.example", True),
        ([], "example.com", False),
    ],
)
def test_no_proxy_matches_names_as_suffixes_and_addresses_by_cidr(
    entries: list[str], host: str, bypassed: bool
) -> None:
    assert parse_no_proxy(entries).bypasses(host) is bypassed


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "exa mple.com", "host:8080", "1.2.3.4.5", "@"])
def test_a_no_proxy_entry_that_is_none_of_them_is_named(entry: str) -> None:
    with pytest.raises(ValueError, match="'" + entry.replace(".", r"\.")):
        parse_no_proxy(["ok.example", entry])


def test_routes_send_everything_but_the_bypassed_hosts_through_the_proxy() -> None:
    proxy = PushProxy("proxy.corp", 3128)
    routes = ProxyRoutes(proxy, NoProxy(names=("internal.corp",)))

    assert routes.proxy_for("hooks.example.com") is proxy
    assert routes.proxy_for("billing.internal.corp") is None


def test_what_is_said_to_the_proxy() -> None:
    assert absolute_target("example.com:8080", "/hook?x=1") == "http://example.com:8080/hook?x=1"
    assert connect_request("example.com:443", None) == (
        b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
    )
    assert b"\r\nProxy-Authorization: Basic dTpw\r\n" in connect_request("h:1", "Basic dTpw")


@pytest.mark.parametrize(
    ("head", "answer"),
    [
        (
            b"HTTP/1.0 200 Connection established\r\nProxy-agent: x\r\n\r\n",
            (200, "Connection established"),
        ),
        (
            b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n",
            (407, "Proxy Authentication Required"),
        ),
        (b"HTTP/1.1 200\r\n\r\n", (200, "")),
    ],
)
def test_the_answer_to_connect_is_its_status_line(head: bytes, answer: tuple[int, str]) -> None:
    assert parse_connect_answer(head) == answer


@pytest.mark.parametrize("head", [b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/2 200\r\n\r\n", b"\r\n\r\n"])
def test_an_answer_that_is_not_http_is_refused(head: bytes) -> None:
    with pytest.raises(ValueError, match="not an HTTP answer"):
        parse_connect_answer(head)
