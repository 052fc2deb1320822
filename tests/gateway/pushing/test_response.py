"""Reading an endpoint's answer, byte for byte as endpoints send it, over a real socket pair."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from gateway.errors.delivery import MalformedResponseError
from gateway.pushing.response import read_response

LIMIT = 1024


@pytest.fixture()
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, endpoint = socket.socketpair()
    with ours, endpoint:
        yield ours, endpoint


def answer(
    pair: tuple[socket.socket, socket.socket], *chunks: bytes, hang_up: bool = False
) -> tuple[int, bytes, bool]:
    ours, endpoint = pair
    for chunk in chunks:
        endpoint.sendall(chunk)
    if hang_up:
        endpoint.shutdown(socket.SHUT_WR)
    return read_response(ours, lambda: 5.0, LIMIT)


def test_an_empty_204_keeps_the_connection(pair: tuple[socket.socket, socket.socket]) -> None:
    assert answer(pair, b"HTTP/1.1 204 No Content\r\n\r\n") == (204, b"", True)


def test_a_body_with_a_length_arriving_in_pieces(pair: tuple[socket.socket, socket.socket]) -> None:
    head = b"HTTP/1.1 500 Oops\r\nContent-Length: 11\r\n\r\n"
    assert answer(pair, head[:9], head[9:] + b"hello", b" world") == (500, b"hello world", True)


def test_a_chunked_body(pair: tuple[socket.socket, socket.socket]) -> None:
    response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    assert answer(pair, response) == (200, b"hello", True)


def test_connection_close_is_honoured(pair: tuple[socket.socket, socket.socket]) -> None:
    response = b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
    assert answer(pair, response) == (204, b"", False)


def test_http_1_0_is_not_kept_alive(pair: tuple[socket.socket, socket.socket]) -> None:
    assert answer(pair, b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n") == (200, b"", False)


def test_a_body_that_ends_with_the_connection(pair: tuple[socket.socket, socket.socket]) -> None:
    response = b"HTTP/1.1 200 OK\r\n\r\nall of it"
    assert answer(pair, response, hang_up=True) == (200, b"all of it", False)


def test_an_interim_answer_is_skipped(pair: tuple[socket.socket, socket.socket]) -> None:
    response = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
    assert answer(pair, response) == (201, b"", True)


def test_a_body_over_the_limit_gives_up_the_connection(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    head = b"HTTP/1.1 500 Oops\r\nContent-Length: 100000\r\n\r\n"
    status, body, reusable = answer(pair, head + b"x" * (LIMIT + 100))
    assert (status, len(body), reusable) == (500, LIMIT + 1, False)


def test_bytes_after_the_answer_give_up_the_connection(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    response = b"HTTP/1.1 204 No Content\r\n\r\n"
    assert answer(pair, response + response) == (204, b"", False)


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        ((b"",), "without answering"),
        ((b"HTTP/1.1 204",), "without answering"),
        ((b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",), "mid-response"),
        ((b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",), "mid-response"),
    ],
)
def test_a_hang_up_before_the_answer_is_complete_is_an_error(
    pair: tuple[socket.socket, socket.socket], chunks: tuple[bytes, ...], message: str
) -> None:
    with pytest.raises(MalformedResponseError, match=message):
        answer(pair, *chunks, hang_up=True)


@pytest.mark.parametrize(
    "response",
    [b"SMTP ready\r\n\r\n", b"HTTP/1.1 abc OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"],
)
def test_what_is_not_http_is_malformed(
    pair: tuple[socket.socket, socket.socket], response: bytes
) -> None:
    with pytest.raises(MalformedResponseError, match="malformed"):
        answer(pair, response)


def test_silence_runs_into_the_deadline(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair

    def no_time_left() -> float:
        raise TimeoutError("timed out")

    with pytest.raises(TimeoutError):
        read_response(ours, no_time_left, LIMIT)
