"""Request framing on byte streams: what is a request, what is refused, and that how the bytes
arrive never changes either."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors.mns import MNSError
from gateway.serving.http1.framing import Phase, Request, RequestParser

LIMIT = 1024


def parse(data: bytes, *, limit: int = LIMIT) -> tuple[list[Request], MNSError | None]:
    """Every request framed from ``data``, and the refusal that ended the stream, if any."""
    parser = RequestParser(max_body_bytes=limit)
    parser.feed(data)
    requests: list[Request] = []
    try:
        while (request := parser.pop()) is not None:
            requests.append(request)
    except MNSError as error:
        return requests, error
    return requests, None


def refusal(data: bytes, **options: int) -> tuple[int, str]:
    requests, error = parse(data, **options)
    assert error is not None, requests
    return error.status, error.code


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


# the attack campaign's requests ---------------------------------------------------------------
def test_content_length_beside_chunked_is_refused_and_nothing_after_it_runs() -> None:
    smuggle = (
        b"POST /topics/t/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 39\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HEALTHZ
    )
    assert parse(smuggle)[0] == []
    assert refusal(smuggle) == (400, "MalformedRequest")


@pytest.mark.parametrize(
    "lengths",
    [
        b"Content-Length: 3\r\nContent-Length: 4\r\n",
        b"Content-Length: 3\r\nContent-Length: 3\r\n",
        b"Content-Length: 3, 3\r\n",
        b"Content-Length: 1_0\r\n",
        b"Content-Length: +61\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: \xd9\xa3\r\n",  # U+0663 ARABIC-INDIC DIGIT THREE
        b"Content-Length: \xef\xbc\x93\r\n",  # U+FF13 FULLWIDTH DIGIT THREE
        b"Content-Length: 0x3\r\n",
    ],
)
def test_a_content_length_must_be_one_number_in_ascii_digits(lengths: bytes) -> None:
    data = b"POST / HTTP/1.1\r\nHost: x\r\n" + lengths + b"\r\nabcd" + HEALTHZ
    assert refusal(data) == (400, "MalformedRequest")
    assert parse(data)[0] == []


@pytest.mark.parametrize(
    "chunks",
    [b"zz\r\nabc\r\n0\r\n\r\n", b"-5\r\nabc\r\n0\r\n\r\n",
     b"FFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n", b"3\r\nabcX0\r\n\r\n", b"3\nabc\n0\n\n",
     b"3 \r\nabc\r\n0\r\n\r\n"],
    ids=["non-hex", "negative", "huge", "no-crlf-after-data", "bare-lf", "space-after-size"],
)  # fmt: skip
def test_malformed_chunks_are_refused(chunks: bytes) -> None:
    data = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    assert refusal(data) == (400, "MalformedRequest")


@pytest.mark.parametrize(
    "encoding",
    [b"gzip", b"chunked, gzip", b"xchunked", b"identity", b"chunked\r\nTransfer-Encoding: chunked"],
)
def test_a_transfer_encoding_must_be_exactly_chunked(encoding: bytes) -> None:
    data = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + encoding + b"\r\n\r\n0\r\n\r\n"
    assert refusal(data) == (400, "MalformedRequest")


# heads ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "head,code",
    [
        (b"GET / HTTP/1.1\r\n\r\n", "MalformedRequest"),  # no Host
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "MalformedRequest"),
        (b"GET /\r\n\r\n", "MalformedRequest"),  # HTTP/0.9
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", "MalformedRequest"),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "MalformedRequest"),
        (b"GET / HTTP/1.1\nHost: x\n\n", "MalformedRequest"),
        (b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", "MalformedRequest"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", "MalformedRequest"),  # obs-fold
        (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", "MalformedRequest"),
        (b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n", "InvalidRequestURL"),
        (b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", "InvalidRequestURL"),
        (b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", "InvalidRequestURL"),
        (b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", "InvalidRequestURL"),
    ],
)
def test_malformed_heads_are_refused(head: bytes, code: str) -> None:
    assert refusal(head + HEALTHZ)[1] == code
    assert parse(head + HEALTHZ)[0] == []


def test_an_absolute_form_target_is_a_request_like_any_other() -> None:
    [request], error = parse(b"GET http://x:8080/queues?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (request.target, error) == ("http://x:8080/queues?a=1", None)


def test_a_head_over_the_limit_is_refused_however_slowly_it_arrives() -> None:
    parser = RequestParser(max_body_bytes=LIMIT, max_head_bytes=4096)
    parser.feed(b"GET / HTTP/1.1\r\nHost: x\r\n")
    for _ in range(10_000):
        parser.feed(b"X-slow: 0123456789\r\n"[:7])
        if parser.exhausted:
            break
    with pytest.raises(MNSError) as caught:
        parser.pop()
    assert (caught.value.status, caught.value.code) == (431, "RequestHeaderTooLarge")


def test_at_most_a_hundred_header_fields() -> None:
    fields = b"".join(b"X-%d: a\r\n" % i for i in range(100))
    assert refusal(b"GET / HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n")[0] == 431


# bodies ---------------------------------------------------------------------------------------
def test_a_chunked_body_arrives_decoded_and_without_its_trailers() -> None:
    data = (
        b"PUT /queues/q HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\n<Queu\r\n3\r\ne/>\r\n0\r\nContent-MD5: forged\r\n\r\n"
    )
    [request], error = parse(data)
    assert error is None
    assert request.body == b"<Queue/>"
    assert [name for name, _ in request.headers] == ["Host", "Transfer-Encoding"]


def test_bodies_over_the_limit_are_refused_before_they_are_read() -> None:
    declared = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (LIMIT + 1)
    assert refusal(declared) == (400, "InvalidArgument")
    chunked = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = b"".join(b"100\r\n" + b"x" * 256 + b"\r\n" for _ in range(5))
    assert refusal(chunked + chunks) == (400, "InvalidArgument")
    [exact], _ = parse(chunked + b"400\r\n" + b"x" * LIMIT + b"\r\n0\r\n\r\n")
    assert len(exact.body) == LIMIT


def test_chunk_framing_cannot_be_used_to_send_unbounded_bytes() -> None:
    chunked = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    extensions = b"1;" + b"e" * 4000 + b"\r\nx\r\n"
    assert refusal(chunked + extensions * 100, limit=LIMIT)[0] == 400


# connections ----------------------------------------------------------------------------------
def test_pipelined_requests_come_out_in_order_and_a_refusal_after_them() -> None:
    data = HEALTHZ + b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n" + b"BAD\r\n\r\n"
    requests, error = parse(data)
    assert [r.target for r in requests] == ["/healthz", "/readyz"]
    assert error is not None and error.code == "InvalidRequestURL"


def test_nothing_is_read_after_a_request_that_closes_the_connection() -> None:
    requests, _ = parse(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + HEALTHZ)
    assert [(r.target, r.keep_alive) for r in requests] == [("/", False)]


def test_http_1_0_closes_unless_asked_to_keep_alive() -> None:
    [plain], _ = parse(b"GET / HTTP/1.0\r\n\r\n")
    [kept], _ = parse(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert (plain.version, plain.keep_alive, kept.keep_alive) == ("HTTP/1.0", False, True)


def test_an_upgrade_request_is_answered_and_ends_the_connection() -> None:
    parser = RequestParser(max_body_bytes=LIMIT)
    parser.feed(
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n" + HEALTHZ
    )
    request = parser.pop()
    assert request is not None and not request.keep_alive
    assert parser.exhausted and parser.pop() is None


def test_expect_100_continue_is_reported_once_before_the_body() -> None:
    parser = RequestParser(max_body_bytes=LIMIT)
    parser.feed(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    assert parser.phase is Phase.BODY
    assert parser.take_continue() and not parser.take_continue()
    parser.feed(b"abc")
    assert parser.pop() is not None and parser.phase is Phase.IDLE


STREAM = (
    b"PUT /queues/q?metaoverride=true HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n<Queue/>"
    b"POST /queues/q/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"4\r\n<Mes\r\n6\r\nsage/>\r\n0\r\n\r\n" + HEALTHZ
)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=20))
def test_how_the_bytes_arrive_changes_nothing(cuts: list[int]) -> None:
    parser = RequestParser(max_body_bytes=LIMIT)
    edges = [0, *sorted(cuts), len(STREAM)]
    for start, end in itertools.pairwise(edges):
        parser.feed(STREAM[start:end])
    assert [parser.pop() for _ in range(3)] == parse(STREAM)[0]


@given(st.binary(max_size=300))
def test_any_bytes_are_requests_or_one_refusal(data: bytes) -> None:
    requests, error = parse(HEALTHZ + data)
    assert requests[0].target == "/healthz"
    assert error is None or error.status in (400, 431)
