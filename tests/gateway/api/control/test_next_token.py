"""ListTagResources' NextToken, pure: a position round-trips, whatever characters the names
and keys hold; anything else is InvalidParameter, never a 500."""

from __future__ import annotations

import pytest

from gateway.api.control import next_token
from gateway.errors.control import ControlError


@pytest.mark.parametrize("key", ["k", 'a "quoted", [bracketed] key', "标签/键=值", "x" * 128])
def test_a_position_round_trips(key: str) -> None:
    token = next_token.encode("queue", "orders-1", key)
    assert token.isascii() and "=" not in token and "+" not in token and "/" not in token
    assert next_token.decode(token, "queue") == ("orders-1", key)


@pytest.mark.parametrize(
    "token",
    [
        "%%%",
        "YWJj",  # "abc": not JSON
        "WzEsInF1ZXVlIiwibmFtZSJd",  # [1,"queue","name"]: a part missing
        "WzEsInF1ZXVlIiwxLDJd",  # [1,"queue",1,2]: not text
        "WzIsInF1ZXVlIiwibiIsImsiXQ",  # [2,"queue","n","k"]: another version
        "gA",  # not UTF-8
        "W" * 3000,
    ],
)
def test_anything_else_is_invalid_parameter(token: str) -> None:
    with pytest.raises(ControlError) as caught:
        next_token.decode(token, "queue")
    assert (caught.value.status, caught.value.code) == (400, "InvalidParameter")


def test_a_token_belongs_to_its_resource_type() -> None:
    with pytest.raises(ControlError):
        next_token.decode(next_token.encode("topic", "t", "k"), "queue")
