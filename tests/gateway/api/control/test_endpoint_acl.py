"""The public endpoint's switch and allow-list: the pure rules, and through the Darabonba SDK
with the data API (``aliyun-mns-sdk``) refused or served by them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from alibabacloud_mns_open20220119 import models as m
from alibabacloud_mns_open20220119.client import Client
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
from mns.account import Account
from mns.mns_exception import MNSServerException

from gateway.auth.endpoint_acl import AclRule, EndpointAcl, EndpointGate
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.control.clients import darabonba


def test_the_rules() -> None:
    acl = EndpointAcl()
    assert acl.allows("203.0.113.9")
    acl = acl.authorize(["10.0.0.0/8", "10.0.0.0/8", "::1/128"], "allow", 7)
    assert acl.rules == (AclRule("10.0.0.0/8", "allow", 7), AclRule("::1/128", "allow", 7))
    assert acl.allows("10.1.2.3") and acl.allows("::1")
    assert not acl.allows("11.0.0.1") and not acl.allows("not an address")
    assert EndpointAcl.from_json(acl.to_json()) == acl
    assert acl.revoke(["10.0.0.0/8", "::1/128"]).allows("11.0.0.1")
    assert not EndpointAcl(enabled=False).allows("10.1.2.3")


def test_the_gate_reads_the_shared_state_at_most_once_a_second() -> None:
    states = [EndpointAcl(), EndpointAcl(enabled=False)]
    reads: list[int] = []
    now = [100.0]

    def read() -> EndpointAcl:
        reads.append(1)
        return states[0]

    gate = EndpointGate(read, lambda: now[0])
    assert gate.allows("1.2.3.4")
    states[0] = states[1]
    now[0] += 0.5
    assert gate.allows("1.2.3.4") and len(reads) == 1
    now[0] += 0.5
    assert not gate.allows("1.2.3.4") and len(reads) == 2


@pytest.fixture()
def sdk(control_gateway: RunningGateway) -> Iterator[Client]:
    client = darabonba(control_gateway.port)
    yield client
    # Leave the shared gateway as every other test expects it: enabled, no rules.
    acl = client.get_endpoint_attribute(m.GetEndpointAttributeRequest(endpoint_type="public"))
    cidrs = [c.cidr for c in acl.body.data.cidr_list or []]
    if cidrs:
        client.revoke_endpoint_acl(
            m.RevokeEndpointAclRequest(
                endpoint_type="public", acl_strategy="allow", cidr_list=cidrs
            )
        )
    client.enable_endpoint(m.EnableEndpointRequest(endpoint_type="public"))
    # ... and wait until every process of it has read that again (within a second).
    assert eventually(lambda: data_api_answers(control_gateway))


def eventually(check: Callable[[], bool]) -> bool:
    """``check()`` within 5 s: a change reaches each process's gate within a second."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def data_api_answers(gateway: RunningGateway) -> bool:
    try:
        Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).list_queue(ret_number=1)
    except MNSServerException as exc:
        assert exc.type == "AccessDenied"
        return False
    return True


def test_disable_and_allow_lists_decide_who_reaches_the_data_api(
    sdk: Client, control_gateway: RunningGateway
) -> None:
    attribute = sdk.get_endpoint_attribute(m.GetEndpointAttributeRequest(endpoint_type="public"))
    assert (attribute.body.data.endpoint_enabled, attribute.body.data.cidr_list) == (True, [])
    sdk.disable_endpoint(m.DisableEndpointRequest(endpoint_type="public"))
    assert eventually(lambda: not data_api_answers(control_gateway))
    sdk.enable_endpoint(m.EnableEndpointRequest(endpoint_type="public"))
    assert eventually(lambda: data_api_answers(control_gateway))

    acl = {"endpoint_type": "public", "acl_strategy": "allow"}
    sdk.authorize_endpoint_acl(m.AuthorizeEndpointAclRequest(**acl, cidr_list=["10.9.9.9/24"]))
    assert eventually(lambda: not data_api_answers(control_gateway))
    sdk.authorize_endpoint_acl(m.AuthorizeEndpointAclRequest(**acl, cidr_list=["127.0.0.0/8"]))
    assert eventually(lambda: data_api_answers(control_gateway))
    data = sdk.get_endpoint_attribute(
        m.GetEndpointAttributeRequest(endpoint_type="public")
    ).body.data
    assert [(c.cidr, c.acl_strategy) for c in data.cidr_list] == [
        ("10.9.9.0/24", "allow"),
        ("127.0.0.0/8", "allow"),
    ]
    sdk.revoke_endpoint_acl(m.RevokeEndpointAclRequest(**acl, cidr_list=["127.0.0.0/8"]))
    assert eventually(lambda: not data_api_answers(control_gateway))
    # The control plane is not behind the endpoint's rules.
    sdk.list_queue(m.ListQueueRequest(page_size=1))


def test_bad_endpoint_calls_are_refused(sdk: Client) -> None:
    for call in (
        lambda: sdk.enable_endpoint(m.EnableEndpointRequest(endpoint_type="vpc")),
        lambda: sdk.authorize_endpoint_acl(
            m.AuthorizeEndpointAclRequest(
                endpoint_type="public", acl_strategy="allow", cidr_list=["300.1.1.1/8"]
            )
        ),
        lambda: sdk.authorize_endpoint_acl(
            m.AuthorizeEndpointAclRequest(
                endpoint_type="public", acl_strategy="deny", cidr_list=["10.0.0.0/8"]
            )
        ),
    ):
        with pytest.raises(AlibabaCloudException) as caught:
            call()
        assert (caught.value.status_code, caught.value.code) == (400, "InvalidParameter")
    data = sdk.get_endpoint_attribute(
        m.GetEndpointAttributeRequest(endpoint_type="public")
    ).body.data
    assert (data.endpoint_enabled, data.cidr_list) == (True, [])
