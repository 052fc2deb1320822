"""The request target as signed: origin form as it is, absolute form reduced to its path and
query (docs/protocol.md#absolute-form-request-targets)."""

from __future__ import annotations

import pytest

from gateway.api.context import origin_form_environ
from gateway.protocol.request_target import RequestTarget, parse_request_target


@pytest.mark.parametrize(
    "target, expected",
    [
        ("/queues/q", RequestTarget("/queues/q")),
        ("/queues/q/messages?ReceiptHandle=a+b/c==", RequestTarget("/queues/q/messages?Rece"
                                                                   "iptHandle=a+b/c==")),
        ("http://h.example/queues/q", RequestTarget("/queues/q", "h.example")),
        ("HTTP://h.example:8080/queues/q?x=1", RequestTarget("/queues/q?x=1", "h.example:8080")),
        ("https://1.mns.cn-hangzhou.aliyuncs.com/topics",
         RequestTarget("/topics", "1.mns.cn-hangzhou.aliyuncs.com")),
        ("http://h.example", RequestTarget("/", "h.example")),
        ("http://h.example?accountmeta=true", RequestTarget("/?accountmeta=true", "h.example")),
        ("http://h.example/a%20b?r=x+y", RequestTarget("/a%20b?r=x+y", "h.example")),
        ("/http://not-absolute/", RequestTarget("/http://not-absolute/")),
    ],
)  # fmt: skip
def test_targets(target: str, expected: RequestTarget) -> None:
    assert parse_request_target(target) == expected


def test_an_absolute_target_rewrites_the_environ_as_any_server_fills_it() -> None:
    for path_info in ("http://h.example/queues/a b", "/queues/a b"):  # gevent's, gunicorn's
        environ = {
            "RAW_URI": "http://h.example/queues/a%20b?waitseconds=3",
            "PATH_INFO": path_info,
            "QUERY_STRING": "waitseconds=3",
            "HTTP_HOST": "proxy.example",
        }
        origin_form_environ(environ)
        assert environ == {
            "RAW_URI": "/queues/a%20b?waitseconds=3",
            "REQUEST_URI": "/queues/a%20b?waitseconds=3",
            "PATH_INFO": "/queues/a b",
            "QUERY_STRING": "waitseconds=3",
            "HTTP_HOST": "h.example",
        }


def test_an_origin_target_is_left_alone() -> None:
    environ = {"RAW_URI": "/queues/q", "PATH_INFO": "/queues/q", "HTTP_HOST": "h"}
    origin_form_environ(environ)
    assert environ == {"RAW_URI": "/queues/q", "PATH_INFO": "/queues/q", "HTTP_HOST": "h"}
