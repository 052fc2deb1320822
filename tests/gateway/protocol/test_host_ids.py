"""``HostId`` without HTTP (the HTTP view of it: tests/gateway/api/test_response_shape.py)."""

import pytest

from gateway.protocol.host_ids import host_id_for

PUBLIC = "https://mns.example.org:8443"


@pytest.mark.parametrize(
    ("host", "host_id"),
    [
        (
            "1234567890.mns.cn-hangzhou.aliyuncs.com",
            "https://1234567890.mns.cn-hangzhou.aliyuncs.com",
        ),
        ("127.0.0.1:8080", "https://127.0.0.1:8080"),
        ("[::1]:80", "https://[::1]:80"),
    ],
)
def test_the_host_addressed_with_the_public_urls_scheme(host: str, host_id: str) -> None:
    assert host_id_for(PUBLIC, host) == host_id


@pytest.mark.parametrize(
    "host",
    ["", "bad host<>", "a.example\r\nX-Injected: 1", "a.example:123456", "[not-v6]", "a" * 254],
)
def test_no_host_or_an_odd_one_is_the_public_url(host: str) -> None:
    assert host_id_for(PUBLIC, host) == PUBLIC
