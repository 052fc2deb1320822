"""GetAccountAttributes, SetAccountAttributes and the event rules through the Darabonba SDK:
kept, returned and listed (the gateway produces no object-storage events to apply them to)."""

from __future__ import annotations

import pytest
from alibabacloud_mns_open20220119 import models as m
from alibabacloud_mns_open20220119.client import Client
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException

from tests.conftest import RunningGateway
from tests.gateway.api.control.clients import darabonba


@pytest.fixture()
def sdk(control_gateway: RunningGateway) -> Client:
    return darabonba(control_gateway.port)


def test_account_attributes_are_kept(sdk: Client) -> None:
    sdk.set_account_attributes(
        m.SetAccountAttributesRequest(log_enabled=True, project_name="p", log_store_name="s")
    )
    sdk.set_account_attributes(m.SetAccountAttributesRequest(message_trace_enabled=True))
    data = sdk.get_account_attributes(m.GetAccountAttributesRequest()).body.data
    assert (data.log_enabled, data.project_name, data.log_store_name) == (True, "p", "s")
    assert data.message_trace_enabled is True


def rule(name: str, queue: str) -> m.CreateEventRuleRequest:
    return m.CreateEventRuleRequest(
        product_name="oss",
        rule_name=name,
        event_types=["ObjectCreated:PutObject"],
        match_rules=[[m.EventMatchRule(name="bucket", prefix="logs/", match_state="true")]],
        endpoint=m.CreateEventRuleRequestEndpoint(endpoint_type="queue", endpoint_value=queue),
    )


def test_event_rules_are_kept_and_listed(sdk: Client, unique: str) -> None:
    for index in range(3):
        answer = sdk.create_event_rule(rule(f"{unique}-{index}", "q"))
        assert answer.body.data == f"{unique}-{index}"
    for index in range(3, 12):
        sdk.create_event_rule(rule(f"{unique}-{index:02}", "q"))
    sdk.create_event_rule(rule(f"{unique}-0", "q"))  # the same again: accepted
    with pytest.raises(AlibabaCloudException) as caught:
        sdk.create_event_rule(rule(f"{unique}-0", "other"))
    assert (caught.value.status_code, caught.value.code) == (409, "EventRuleAlreadyExist")
    got = sdk.get_event_rule(m.GetEventRuleRequest(product_name="oss", rule_name=f"{unique}-1"))
    data = got.body.data
    assert (data.rule_name, data.event_types) == (f"{unique}-1", ["ObjectCreated:PutObject"])
    assert (data.endpoint.endpoint_type, data.endpoint.endpoint_value) == ("queue", "q")
    assert data.match_rules[0][0].prefix == "logs/"
    listed = sdk.list_event_rules(
        m.ListEventRulesRequest(product_name="oss", rule_name=unique, page_num=2, page_size=10)
    ).body.data
    assert (listed.total, listed.pages, [r.rule_name for r in listed.page_data]) == (
        12,
        2,
        [f"{unique}-11", f"{unique}-2"],  # name order: -0, -03 ... -09, -1, -10, -11, -2
    )
    sdk.delete_event_rule(m.DeleteEventRuleRequest(product_name="oss", rule_name=f"{unique}-1"))
    with pytest.raises(AlibabaCloudException) as caught:
        sdk.get_event_rule(m.GetEventRuleRequest(product_name="oss", rule_name=f"{unique}-1"))
    assert (caught.value.status_code, caught.value.code) == (404, "EventRuleNotExist")


def test_event_rules_page_by_number_not_by_the_deprecated_next_token(
    sdk: Client, unique: str
) -> None:
    for index in range(11):
        sdk.create_event_rule(rule(f"{unique}-{index:02}", "q"))
    request = m.ListEventRulesRequest(
        product_name="oss", rule_name=unique, page_num=2, page_size=10, next_token="x"
    )
    request.max_results = 1
    listed = sdk.list_event_rules(request).body.data
    assert [r.rule_name for r in listed.page_data] == [f"{unique}-10"]
    assert (listed.next_token, listed.max_results, listed.total) == ("", 10, 11)


def test_a_malformed_event_rule_is_refused(sdk: Client, unique: str) -> None:
    bad = rule(unique, "q")
    bad.event_types = []
    with pytest.raises(AlibabaCloudException) as caught:
        sdk.create_event_rule(bad)
    assert (caught.value.status_code, caught.value.code) == (400, "InvalidParameter")
    listed = sdk.list_event_rules(m.ListEventRulesRequest(product_name="oss", rule_name=unique))
    assert listed.body.data.total == 0
