"""Receipt handles: round trip, tampering, other queues, hostile input."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gateway.errors.mns import MNSError
from gateway.queues import receipts
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


# which stored message a handle acts on (issue 36 item 2) -------------------------------------
NOW = 1_700_000_000_000
#: A message hidden by the receive RECEIPT names, until RECEIPT's NextVisibleTime.
HELD = {
    "message_id": RECEIPT.message_id,
    "nonce": RECEIPT.nonce,
    "visible_at": RECEIPT.visible_at,
    "expires_at": NOW + 86_400_000,
    "dequeue_count": 1,
}


def test_a_visibility_change_keeps_the_receive_and_moves_the_time() -> None:
    moved = RECEIPT.moved_to(NOW + 99_000)
    assert (moved.message_id, moved.nonce, moved.visible_at) == (
        RECEIPT.message_id,
        RECEIPT.nonce,
        NOW + 99_000,
    )


def test_the_replaced_handle_acts_on_the_message_while_its_receive_holds_it() -> None:
    # ChangeMessageVisibility moved the message to another time: the handle it replaced still
    # names the receive, whether the new time is later or earlier than the handle's.
    for visible_at in (RECEIPT.visible_at + 60_000, NOW + 1):
        moved = {**HELD, "visible_at": visible_at}
        assert receipts.matches(receipts.of_its_receive(RECEIPT, NOW), **moved)
        assert not receipts.matches(receipts.exactly(RECEIPT, NOW), **moved)
    assert receipts.matches(receipts.exactly(RECEIPT, NOW), **HELD)


def test_the_replaced_handle_outlives_its_own_time_while_the_message_is_hidden() -> None:
    later = RECEIPT.visible_at + 1
    held_longer = {**HELD, "visible_at": later + 60_000}
    assert receipts.matches(receipts.of_its_receive(RECEIPT, later), **held_longer)


@pytest.mark.parametrize(
    "stored",
    [
        {**HELD, "nonce": RECEIPT.nonce + 1},  # received again (or released)
        {**HELD, "visible_at": NOW},  # visible again: Active
        {**HELD, "visible_at": NOW - 1},
        {**HELD, "expires_at": NOW},  # expired while hidden
        {**HELD, "message_id": "0018BCFE56A12-1A2B3C4D-00000002"},  # another of its batch
    ],
)
def test_no_handle_acts_on_a_message_its_receive_no_longer_holds(stored: dict[str, Any]) -> None:
    assert not receipts.matches(receipts.of_its_receive(RECEIPT, NOW), **stored)
    assert not receipts.matches(receipts.exactly(RECEIPT, NOW), **stored)


def test_a_delayed_send_handle_acts_until_the_message_is_active() -> None:
    delayed = {**HELD, "dequeue_count": 0}
    assert receipts.matches(receipts.of_its_receive(RECEIPT, NOW), **delayed)
    assert not receipts.matches(receipts.of_its_receive(RECEIPT, RECEIPT.visible_at), **delayed)
