"""What the gateway fuzz suite (test_fuzz.py) sends: hypothesis strategies for unsigned garbage,
signed requests with one hostile value, and ambiguous framing with a request hidden behind it."""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import strategies as st

from tests.mns_http import RawClient

QUEUE, TOPIC, SUBSCRIPTION = "fz-q", "fz-t", "fz-s"


# garbage ----------------------------------------------------------------------------------------
#: No HEAD: its answer has no body to frame it, so it could not be told from what follows (the
#: hostile requests send HEAD alone on a connection).
TOKENS = st.sampled_from(
    [
        "GET",
        "POST",
        "PUT",
        "DELETE",
        "OPTIONS",
        "PATCH",
        "CONNECT",
        "TRACE",
        "PRI",
        "G ET",
        "get",
        "MNS",
        "",
    ]
)
TARGETS = st.one_of(
    st.sampled_from(
        [
            "/",
            "/healthz",
            "/readyz",
            "/metrics",
            "/queues",
            f"/queues/{QUEUE}/messages",
            f"/topics/{TOPIC}",
            "*",
            "http://x/queues",
            "//queues",
            "/queues//messages",
            "/%00",
            "/a b",
            "/\xff",
        ]
    ),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40).map(
        lambda t: "/" + t
    ),
)
VERSIONS = st.sampled_from(
    ["HTTP/1.1", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1 ", "HTTP/1", ""]
)
HEADER_NAMES = st.sampled_from(
    [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Content-Type",
        "Connection",
        "Expect",
        "Authorization",
        "Date",
        "x-mns-version",
        "Content-MD5",
        "X_Under",
        "X Space",
        "",
        "Upgrade",
    ]
)
HEADER_VALUES = st.one_of(
    st.sampled_from(
        [
            "x",
            "0",
            "5",
            "1_0",
            "+5",
            "-1",
            "chunked",
            "gzip",
            "chunked, chunked",
            "close",
            "keep-alive",
            "100-continue",
            "MNS a:b",
            "h2c",
            "\u0663".encode().decode("latin-1"),
        ]
    ),
    st.binary(max_size=30).map(lambda b: b.decode("latin-1")),
)


@st.composite
def garbage(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(st.binary(min_size=1, max_size=200))
    line = f"{draw(TOKENS)} {draw(TARGETS)} {draw(VERSIONS)}"
    headers = draw(st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=6))
    if draw(st.booleans()):
        headers.insert(0, ("Host", "fuzz"))
    head = "\r\n".join([line, *(f"{name}: {value}" for name, value in headers)])
    ending = draw(st.sampled_from(["\r\n\r\n", "\r\n\r\n", "\n\n", "\r\n", ""]))
    body = draw(
        st.one_of(
            st.just(b""),
            st.binary(max_size=100),
            st.sampled_from(
                [b"0\r\n\r\n", b"5\r\nhello\r\n0\r\n\r\n", b"zz\r\n", b"FFFFFFFFFFFFFFFFFF\r\n"]
            ),
        )
    )
    return (head + ending).encode("latin-1") + body


# hostile, correctly signed requests ------------------------------------------------------------
#: What Python's int() takes for a number and MNS does not, and what is not a number at all.
LENIENT_INTEGERS = [
    "1_0",
    "+3",
    "\u0663",
    "\uff13",
    "\uff11\uff10",
    "-1",
    "0x10",
    "1e3",
    "3.0",
    "1 0",
    "",
    "99999999999999999999",
    "\u00b2",
    "\u2163",
]
QUEUE_ATTRIBUTES = [
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "VisibilityTimeout",
    "PollingWaitSeconds",
]
ENCODINGS = [
    "bogus",
    "rot13",
    "utf-32",
    "shift_jis",
    "idna",
    "undefined",
    "zlib",
    "hex",
    "x-user-defined",
    "utf-7",
    "base64",
    "a" * 300,
]


@st.composite
def hostile(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(method, uri, body) of a signed operation that the gateway must refuse."""
    number = draw(st.sampled_from(LENIENT_INTEGERS))
    encoding = draw(st.sampled_from(ENCODINGS))
    declared = f'<?xml version="1.0" encoding="{encoding}"?>'
    attribute = draw(st.sampled_from(QUEUE_ATTRIBUTES))
    choices = [
        (
            "PUT",
            f"/queues/{QUEUE}?metaoverride=true",
            f"<Queue><{attribute}>{number}</{attribute}></Queue>",
        ),
        ("PUT", "/queues/fz-new", f"<Queue><{attribute}>{number}</{attribute}></Queue>"),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"<Message><MessageBody>x</MessageBody><DelaySeconds>{number}</DelaySeconds></Message>",
        ),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"<Message><MessageBody>x</MessageBody><Priority>{number}</Priority></Message>",
        ),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"<Messages><Message><MessageBody>x</MessageBody><DelaySeconds>{number}</DelaySeconds></Message></Messages>",
        ),
        ("GET", f"/queues/{QUEUE}/messages?numOfMessages={quote(number)}", ""),
        ("GET", f"/queues/{QUEUE}/messages?waitseconds={quote(number)}", ""),
        ("PUT", f"/queues/{QUEUE}/messages?ReceiptHandle=x&VisibilityTimeout={quote(number)}", ""),
        (
            "PUT",
            "/topics/fz-new",
            f"<Topic><MaximumMessageSize>{number}</MaximumMessageSize></Topic>",
        ),
        (
            "PUT",
            f"/queues/{QUEUE}?metaoverride=true",
            f"{declared}<Queue><DelaySeconds>1</DelaySeconds></Queue>",
        ),
        ("PUT", "/queues/fz-new", f"{declared}<Queue/>"),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"{declared}<Message><MessageBody>x</MessageBody></Message>",
        ),
        (
            "POST",
            f"/topics/{TOPIC}/messages",
            f"{declared}<Message><MessageBody>x</MessageBody></Message>",
        ),
        (
            "PUT",
            f"/topics/{TOPIC}/subscriptions/fz-new",
            f"{declared}<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint></Subscription>",
        ),
        (
            "DELETE",
            f"/queues/{QUEUE}/messages",
            f"{declared}<ReceiptHandles><ReceiptHandle>x</ReceiptHandle></ReceiptHandles>",
        ),
        (
            "POST",
            f"/topics/{TOPIC}/messages",
            "<Message><MessageBody>x</MessageBody><MessageAttributes><DirectMail>"
            + "[" * 5000
            + "]" * 5000
            + "</DirectMail></MessageAttributes></Message>",
        ),
        (
            "POST",
            f"/topics/{TOPIC}/messages",
            '<?xml version="1.0" encoding="utf-8" standalone="maybe"?><Message/>',
        ),
        ("PUT", "/topics/fz-new", '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "b">]><Topic/>'),
    ]
    method, uri, body = draw(st.sampled_from(choices))
    if draw(st.integers(0, 3)) == 0:  # an undocumented method on a real path instead
        method = draw(st.sampled_from(["HEAD", "OPTIONS", "PATCH", "TRACE", "PROPFIND", "PURGE"]))
        uri = draw(
            st.sampled_from(
                [
                    f"/queues/{QUEUE}/messages",
                    f"/queues/{QUEUE}",
                    f"/topics/{TOPIC}",
                    "/queues",
                    "/admin/dead-letters",
                ]
            )
        )
    elif draw(st.integers(0, 4)) == 0:  # or an empty path segment in a destructive request
        method, body = "DELETE", ""
        uri = draw(
            st.sampled_from(
                [
                    f"//queues/{QUEUE}",
                    f"/queues//{QUEUE}",
                    f"/topics/{TOPIC}//subscriptions/{SUBSCRIPTION}",
                    f"/queues/{QUEUE}//messages",
                ]
            )
        )
    return method, uri, body.encode()


def signed_request(
    raw: RawClient, method: str, uri: str, body: bytes, *, chunks: list[int] | None
) -> bytes:
    headers = raw.headers_for(method, uri, body)
    lines = [f"{method} {uri} HTTP/1.1", "Host: fuzz", *(f"{k}: {v}" for k, v in headers.items())]
    if chunks is None:
        lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body
    lines.append("Transfer-Encoding: chunked")
    encoded, start = b"", 0
    for end in sorted({min(point, len(body)) for point in chunks} | {len(body)}):
        if end > start:
            encoded += b"%x\r\n%s\r\n" % (end - start, body[start:end])
            start = end
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + encoded + b"0\r\n\r\n"


# smuggling ---------------------------------------------------------------------------------------
FRAMINGS = [
    "Content-Length: {n}\r\nTransfer-Encoding: chunked",
    "Transfer-Encoding: chunked\r\nContent-Length: {n}",
    "Content-Length: {n}\r\nContent-Length: 0",
    "Content-Length: 0\r\nContent-Length: {n}",
    "Content-Length: {n}, 0",
    "Content-Length: +{n}",
    "Content-Length: {n}_0",
    "Content-Length: \u0661{n}",
    "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity",
    "Transfer-Encoding: gzip, chunked\r\nContent-Length: {n}",
    "Transfer-Encoding: xchunked",
    "Transfer-Encoding: chunked, gzip",
    "Transfer-Encoding:\tchunked\r\nContent-Length: {n}",
    "Transfer-Encoding : chunked",
    "Transfer-Encoding: chunked\r\n Content-Length: {n}",
]
BAD_CHUNKS = [
    b"zz\r\n",
    b"-0\r\n",
    b"0x5\r\n",
    b"FFFFFFFFFFFFFFFFFFFF\r\n",
    b"5 \r\n",
    b"5\n",
    b"\r\n",
]
