"""What Standard Webhooks signatures add to rendering and signing a push, in one run.

In this process (no server, no socket): ``build_signed_push`` of one message with a 2048-bit
signing key (the gateway's default), as the push threads call it, with the subscription's
Standard Webhooks off, on (one secret) and during a rotation (two secrets). Rounds alternate
which variant goes first, so whatever else the machine does hits each alike. It prints each
round's CPU microseconds per push per variant, then each variant's range and its extra cost over
"off".

    .venv/bin/python bench/standard_webhooks.py [--rounds 6] [--pushes 2000] [--size 1024]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from gateway.delivery.formats import ContentFormat, PushNotification, message_md5
from gateway.delivery.signing import SigningKey, build_signed_push
from gateway.delivery.standard_webhooks import WebhookSecrets, secret_of, standard_webhook
from gateway.pushing.keyring import KeyRing

VARIANTS = {
    "off": None,
    "on": WebhookSecrets(secret_of(b"n" * 32)),
    "rotating": WebhookSecrets(secret_of(b"n" * 32), secret_of(b"o" * 32), 2**62),
}


def cpu_us_per_push(
    key: SigningKey, secrets: WebhookSecrets | None, pushes: int, size: int
) -> float:
    message = "x" * size
    notification = PushNotification(
        "1234567890", "orders", "1234567890", "billing", "M", message, message_md5(message), None, 0
    )
    start = time.process_time()
    for n in range(pushes):
        now = time.time()
        build_signed_push(
            notification,
            ContentFormat.JSON,
            "http://127.0.0.1:9/hook",
            key=key,
            public_url="http://gateway.local/",
            date="Thu, 01 Jan 1970 00:00:00 GMT",
            request_id=f"R{n}",
            webhook=standard_webhook(secrets, "orders", "billing", f"M{n}", now),
        )
    return (time.process_time() - start) / pushes * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--pushes", type=int, default=2000)
    parser.add_argument("--size", type=int, default=1024, help="message bytes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        key = KeyRing(Path(directory)).current
    figures: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for round_ in range(args.rounds):
        order = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
        for name in order:
            figures[name].append(cpu_us_per_push(key, VARIANTS[name], args.pushes, args.size))
        row = "  ".join(f"{name} {figures[name][-1]:7.1f}" for name in VARIANTS)
        print(f"round {round_ + 1}: CPU us/push  {row}")
    off = figures["off"]
    for name, values in figures.items():
        extra = [value - base for value, base in zip(values, off, strict=True)]
        print(
            f"{name:9s} {min(values):7.1f}-{max(values):7.1f} us/push"
            f"  (beside off in its round: {min(extra):+.1f} to {max(extra):+.1f})"
        )


if __name__ == "__main__":
    main()
