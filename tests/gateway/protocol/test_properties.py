"""What counts against MaximumMessageSize, for queues and topics alike."""

from __future__ import annotations

from gateway.protocol.properties import TOO_LARGE, properties_size, size_error

PROPERTIES = {"UserProperties": [{"Name": "k", "Type": "STRING", "Value": "vé"}]}


def test_user_properties_count_every_name_type_and_value_in_utf8_bytes() -> None:
    assert properties_size(PROPERTIES) == len("kSTRINGvé".encode())
    assert properties_size({}) == 0


def test_a_message_of_exactly_the_maximum_fits_and_one_byte_more_does_not() -> None:
    extra = properties_size(PROPERTIES)
    assert size_error(1024 - extra, PROPERTIES, 1024) is None
    error = size_error(1025 - extra, PROPERTIES, 1024)
    assert error is not None
    assert (error.code, error.message) == ("InvalidArgument", TOO_LARGE)
