"""Push delivery: turning a topic message into the signed HTTP POST that Alibaba Cloud MNS sends.

The package is split so that everything a receiver could observe is decided by pure functions
that tests can pin byte for byte, and the only IO lives in two thin shells:

- :mod:`~gateway.delivery.retry`     when to try again (pure; docs/protocol.md#retry-schedules).
- :mod:`~gateway.delivery.formats`   body, headers, string to sign, request path (pure).
- :mod:`~gateway.delivery.signing`   RSA-SHA1 signatures and the key ring (files in ``keys/``).
- :mod:`~gateway.delivery.egress`    which resolved addresses a push may connect to (pure).
- :mod:`~gateway.pushing.transport` one attempt on a pooled keep-alive socket; the answer is
                                     parsed by httptools in :mod:`~gateway.pushing.response`.

One attempt, as the delivery worker performs it::

    key = keyring.current
    rendered = render(notification, subscription.notify_content_format)  # a ContentFormat
    headers = push_headers(notification, rendered, date=http_date(now), request_id=new_id,
                           signing_cert_url=cert_url(public_url, key.key_id))
    path = push_path(endpoint_url)
    headers = sign_headers(key, headers, path)
    result = transport.send(endpoint_url, headers, rendered.body, push_timeout, path=path)
    delay = None if result.ok else retry_delay(strategy, retries_done, rng=rng, scale=scale)

(:func:`~gateway.delivery.signing.build_signed_push` does the middle steps in one call, and
``transport.send_signed(endpoint_url, push)`` sends its path, headers and body as signed.)

Every error raised on purpose by this package derives from
:class:`gateway.errors.DeliveryError` (:mod:`gateway.errors.delivery`), so callers can tell our
refusals from bugs with one ``except``.
"""

from __future__ import annotations
