"""Receipt handles: round trip, tampering, other queues, hostile input."""

from __future__ import annotations

import base64

import pytest

from gateway.protocol.errors import MNSError
from gateway.queues.receipts import Receipt, ReceiptSigner, new_nonce, new_secret

RECEIPT = Receipt("0018BCFE56A12-1A2B3C4D-00000001", 2**62 + 12345, 1_700_000_030_000)


@pytest.fixture()
def signer() -> ReceiptSigner:
    return ReceiptSigner(new_secret())


def rejected(signer: ReceiptSigner, queue: str, handle: str) -> bool:
    with pytest.raises(MNSError) as caught:
        signer.verify(queue, handle)
    return caught.value.code == "ReceiptHandleError" and caught.value.status == 400


def test_round_trip(signer: ReceiptSigner) -> None:
    handle = signer.issue("q", RECEIPT)
    assert signer.verify("q", handle) == RECEIPT


def test_handles_are_plain_base64_and_may_contain_plus_and_slash(signer: ReceiptSigner) -> None:
    handles = [signer.issue("q", Receipt(RECEIPT.message_id, new_nonce(), 1)) for _ in range(64)]
    assert any("+" in h for h in handles) and any("/" in h for h in handles)
    for handle in handles:
        base64.b64decode(handle, validate=True)
        assert signer.verify("q", handle).message_id == RECEIPT.message_id


def test_a_form_decoded_plus_still_works(signer: ReceiptSigner) -> None:
    handles = [signer.issue("q", Receipt("m", new_nonce(), 1)) for _ in range(64)]
    handle = next(h for h in handles if "+" in h)
    assert signer.verify("q", handle.replace("+", " ")).message_id == "m"


def test_every_altered_byte_is_caught(signer: ReceiptSigner) -> None:
    raw = bytearray(base64.b64decode(signer.issue("q", RECEIPT)))
    for position in range(len(raw)):
        changed = bytearray(raw)
        changed[position] ^= 0x01
        assert rejected(signer, "q", base64.b64encode(bytes(changed)).decode())


def test_other_queues_and_other_secrets_reject(signer: ReceiptSigner) -> None:
    handle = signer.issue("q", RECEIPT)
    assert rejected(signer, "q2", handle)
    assert rejected(ReceiptSigner(new_secret()), "q", handle)


@pytest.mark.parametrize(
    "handle",
    ["", "%%%", "1-ODU4OTkzNDU5My0xNDM1MTk3NjAwLTItNg==", "中文", "A" * 4000, "QUJD"],
)
def test_garbage_is_a_receipt_handle_error(signer: ReceiptSigner, handle: str) -> None:
    assert rejected(signer, "q", handle)


def test_secrets_must_be_long_enough() -> None:
    with pytest.raises(ValueError):
        ReceiptSigner(b"short")
