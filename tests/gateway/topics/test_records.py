"""A subscription's resource name (``topic/name``), written and read back by one pair of pure
functions wherever the gateway keeps it (breakers, rate limits, tags, operator events)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.topics.records import subscription_names, subscription_resource

#: MNS names: letters, digits and hyphens (docs/protocol.md); never a slash.
NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,63}", fullmatch=True)


def test_a_resource_names_its_topic_then_its_subscription() -> None:
    assert subscription_resource("orders", "billing") == "orders/billing"
    assert subscription_names("orders/billing") == ("orders", "billing")


@given(NAMES, NAMES)
def test_the_names_read_back_are_the_names_written(topic: str, name: str) -> None:
    assert subscription_names(subscription_resource(topic, name)) == (topic, name)
