"""The CPU of each pure step of a push, one at a time in this process (issue 49).

What bench/push_profile.py's samples cannot separate cleanly: the pure pieces of rendering and
signing one push, each timed alone with ``time.process_time`` over ``--repeat`` calls (median
of 5 runs), how often the pipeline makes each, and which give the same bytes for every
subscription of a message (shareable work). Before the pipeline was one (issue 49) the push
path and the creation trace context were made twice per attempt and the outcome went through
strings in three modules; now each is made once. No network, no database; single-threaded.

    .venv/bin/python bench/push_steps.py [--repeat 20000]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric import rsa
from harness import ROOT  # noqa: F401  (puts the checkout on sys.path)

from gateway.delivery.formats import (
    ContentFormat,
    content_md5,
    http_date,
    push_headers,
    push_path,
    render,
    string_to_sign,
)
from gateway.delivery.notifications import notification_of
from gateway.delivery.records import DeliveryJob
from gateway.delivery.signing import SigningKey, cert_url, sign_headers
from gateway.delivery.wire import encode_request, origin_of
from gateway.protocol.properties import trace_context
from gateway.protocol.request_ids import new_request_id
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.topics.records import Subscription, TopicMessage

URL = "http://127.0.0.1:8080/s3"


def _median_us(step: Callable[[], object], repeat: int) -> float:
    runs = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeat):
            step()
        runs.append((time.process_time() - start) / repeat * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20000)
    args = parser.parse_args()
    message = TopicMessage("M00000001", "fanout", "x" * 256, "X", 1_700_000_000_000)
    key = SigningKey("0123456789abcdef", rsa.generate_private_key(65537, 2048), b"")
    jobs = {
        fmt: DeliveryJob(
            "d1",
            0,
            message,
            Subscription("fanout", "s003", URL, **{"notify_content_format": fmt}),
            "http://127.0.0.1:8080",
        )
        for fmt in ContentFormat
    }
    note = notification_of(jobs[ContentFormat.XML], "1234567890")
    rendered = render(note, ContentFormat.XML)
    date, request_id = http_date(time.time()), new_request_id()
    certificate = cert_url("http://127.0.0.1:8080", key.key_id)
    headers = push_headers(
        note, rendered, date=date, request_id=request_id, signing_cert_url=certificate
    )
    path = push_path(URL)
    signed = sign_headers(key, headers, path)
    result = PushResult(204, PushOutcome.SUCCESS, None, 1.0)
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    attributes = {"SystemProperties": [{"Name": "traceparent", "Value": traceparent}]}
    steps: list[tuple[str, Callable[[], object], str]] = [
        (
            "notification_of (job -> notification)",
            lambda: notification_of(jobs[ContentFormat.XML], "1234567890"),
            "per subscription",
        ),
        (
            "render XML body",
            lambda: render(note, ContentFormat.XML),
            "per subscription (SubscriptionName in the body)",
        ),
        (
            "render JSON body",
            lambda: render(note, ContentFormat.JSON),
            "per subscription (SubscriptionName in the body)",
        ),
        (
            "render SIMPLIFIED body",
            lambda: render(note, ContentFormat.SIMPLIFIED),
            "same bytes for every subscription",
        ),
        (
            "content_md5 (XML body)",
            lambda: content_md5(rendered.body),
            "per body; SIMPLIFIED: same for every subscription",
        ),
        (
            "signing-cert-url header (base64)",
            lambda: base64.b64encode(certificate.encode()).decode("ascii"),
            "same for every push of a key",
        ),
        ("http_date (cached per second)", lambda: http_date(time.time()), "per second"),
        ("new_request_id", new_request_id, "per push"),
        (
            "push_headers (incl. checked_headers)",
            lambda: push_headers(
                note, rendered, date=date, request_id=request_id, signing_cert_url=certificate
            ),
            "per push",
        ),
        ("string_to_sign", lambda: string_to_sign("POST", headers, path), "per push"),
        (
            "sign_headers (RSA signature + base64 + insert)",
            lambda: sign_headers(key, headers, path),
            "per push (request id, subscription name and path signed)",
        ),
        (
            "push_path (lru_cache hit)",
            lambda: push_path(URL),
            "once per push: the transport sends the path signed",
        ),
        ("origin_of (lru_cache hit)", lambda: origin_of(URL), "per push"),
        (
            "encode_request (request bytes)",
            lambda: encode_request(path, "127.0.0.1:8080", signed, rendered.body),
            "per push",
        ),
        (
            "trace_context read (tracing on)",
            lambda: trace_context(attributes),
            "once per attempt, when its span starts",
        ),
        (
            "outcome to strings (.value, ok ? 'succeeded')",
            lambda: (result.outcome.value, "succeeded" if result.ok else "failed"),
            "per push: the operation log's Outcome (metrics keep a counter per outcome)",
        ),
    ]
    print(f"{'step':<58}{'µs':>8}  computed")
    for name, step, note_text in steps:
        repeat = max(args.repeat // 50, 20) if "RSA" in name else args.repeat
        print(f"{name:<58}{_median_us(step, repeat):>8.2f}  {note_text}", flush=True)


if __name__ == "__main__":
    main()
