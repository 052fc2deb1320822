"""Which resolved addresses a push may connect to."""

from __future__ import annotations

import ipaddress

import pytest

from gateway.delivery.egress import EgressPolicy
from gateway.errors import DeliveryError
from gateway.errors.delivery import EgressError


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",  # cloud metadata (AWS, GCP, Azure, ...)
        "100.100.100.200",  # Alibaba Cloud ECS metadata
        "169.254.0.1",
        "fe80::1",
        "fe80::1%lo",
        "fd00:ec2::254",
        "::ffff:169.254.169.254",  # IPv4-mapped IPv6 form of the metadata address
        "[::ffff:a9fe:a9fe]",
        "64:ff9b::a9fe:a9fe",  # NAT64 form of the metadata address
    ],
)
def test_link_local_and_metadata_addresses_are_refused_by_default(address: str) -> None:
    assert not EgressPolicy().permits(address)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "10.1.2.3",
        "100.100.100.201",
        "192.168.0.10",
        "8.8.8.8",
        "2001:db8::1",
    ],
)
def test_everything_else_is_permitted_by_default(address: str) -> None:
    assert EgressPolicy().permits(address)


def test_accepts_ipaddress_objects() -> None:
    policy = EgressPolicy()
    assert policy.permits(ipaddress.ip_address("127.0.0.1"))
    assert not policy.permits(ipaddress.ip_address("169.254.169.254"))


def test_allow_reopens_only_the_allowed_part_of_a_default_denied_range() -> None:
    policy = EgressPolicy(allow=["169.254.10.0/24"])

    assert policy.permits("169.254.10.7")
    assert policy.permits("::ffff:169.254.10.7")
    assert not policy.permits("169.254.169.254")


def test_explicit_deny_wins_over_allow() -> None:
    policy = EgressPolicy(allow=["10.0.0.0/8"], deny=["10.1.0.0/16"])

    assert policy.permits("10.2.0.1")
    assert not policy.permits("10.1.0.1")


def test_deny_list_covers_mapped_forms_of_its_addresses() -> None:
    policy = EgressPolicy(deny=["127.0.0.0/8"])

    assert not policy.permits("127.0.0.1")
    assert not policy.permits("::ffff:127.0.0.1")
    assert policy.permits("::1")


def test_mapped_ipv6_cidrs_in_the_configuration_mean_their_ipv4_range() -> None:
    policy = EgressPolicy(deny=["::ffff:10.0.0.0/104"])

    assert not policy.permits("10.9.9.9")
    assert policy.permits("11.0.0.1")


def test_nat64_addresses_must_pass_both_as_ipv6_and_as_their_ipv4() -> None:
    policy = EgressPolicy(deny=["192.0.2.0/24"])

    assert not policy.permits("64:ff9b::c000:0201")
    assert policy.permits("64:ff9b::0808:0808")


def test_host_bits_in_a_cidr_are_tolerated() -> None:
    assert not EgressPolicy(deny=["10.1.2.3/8"]).permits("10.200.0.1")


@pytest.mark.parametrize("cidr", ["10.0.0.0/33", "example.com", ""])
def test_invalid_cidrs_are_configuration_errors(cidr: str) -> None:
    with pytest.raises(EgressError) as caught:
        EgressPolicy(deny=[cidr])
    assert isinstance(caught.value, DeliveryError)


def test_invalid_address_is_an_egress_error() -> None:
    with pytest.raises(EgressError):
        EgressPolicy().permits("not-an-address")


def test_repr_names_the_configured_lists() -> None:
    policy = EgressPolicy(allow=["169.254.10.0/24"], deny=["::ffff:127.0.0.0/104"])

    assert repr(policy) == "EgressPolicy(allow=['169.254.10.0/24'], deny=['127.0.0.0/8'])"


LOCAL_HOST_DENIED = EgressPolicy(deny=["127.0.0.0/8", "::1/128"])


@pytest.mark.parametrize(
    "address",
    ["0.0.0.0", "0.1.2.3", "::", "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0", "[::ffff:0:0]", "64:ff9b::"],
)
def test_unspecified_addresses_are_the_local_host(address: str) -> None:
    assert not LOCAL_HOST_DENIED.permits(address)
    assert EgressPolicy().permits(address)  # loopback is permitted unless denied
    assert not EgressPolicy(deny=["127.0.0.1/32"]).permits(address)
