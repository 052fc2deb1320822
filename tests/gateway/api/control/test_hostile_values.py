"""What the control plane may store (issue 33, finding 3): every parameter is text XML and
PostgreSQL can carry (a NUL in a filter or a tag was a 500 on PostgreSQL), and an event rule's
MatchRules keep their documented shape (a rule nested ~950 deep was stored, and every event-rule
call after it answered 500). Each refusal is the control plane's 400 ``InvalidParameter``, and
what was there before still reads."""

from __future__ import annotations

import json

import pytest

from tests.conftest import RunningGateway
from tests.gateway.api.control.test_refusals import assert_error, classic

HOSTILE = ["\x00", "a\x00", "\x01", "\x1f", "\ufffe", "\uffff"]


def rule(name: str, queue: str, match_rules: object) -> dict[str, str]:
    return {
        "ProductName": "oss",
        "RuleName": name,
        "EventTypes": json.dumps(["ObjectCreated:PutObject"]),
        "MatchRules": match_rules if isinstance(match_rules, str) else json.dumps(match_rules),
        "Endpoint": json.dumps({"EndpointType": "queue", "EndpointValue": queue}),
    }


def deep(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


def deep_rules(levels: int) -> str:
    """MatchRules whose Name is a list ``levels`` deep, as JSON text: written out, because
    ``json.dumps`` of it may itself run out of recursion (under pytest-xdist the stack is
    deeper already)."""
    return '[[{"Name": ' + "[" * levels + '"x"' + "]" * levels + "}]]"


def event_rules_answer(gateway: RunningGateway, prefix: str) -> list[str]:
    status, body = classic(gateway, "ListEventRules", {"ProductName": "oss", "RuleName": prefix})
    assert status == 200, body
    return [r["RuleName"] for r in body["Data"]["PageData"]]


@pytest.mark.parametrize(
    "match_rules",
    [
        deep_rules(950),
        [[{"Prefix": {"nested": deep(10)}}]],
        [[{"Suffix": "s\x00"}]],
        [[{"MatchState": 1}]],
        [[{"Name": "n"}]] * 101,
    ],
    ids=["950 deep", "object", "NUL", "number", "101 groups"],
)
def test_match_rules_keep_their_shape(
    control_gateway: RunningGateway, unique: str, match_rules: object
) -> None:
    good = [[{"Name": "bucket", "Prefix": "logs/", "MatchState": "true"}]]
    assert classic(control_gateway, "CreateEventRule", rule(f"{unique}-ok", unique, good))[0] == 200
    answer = classic(control_gateway, "CreateEventRule", rule(f"{unique}-bad", unique, match_rules))
    assert_error(answer, 400, "InvalidParameter")
    assert event_rules_answer(control_gateway, unique) == [f"{unique}-ok"]
    status, got = classic(
        control_gateway, "GetEventRule", {"ProductName": "oss", "RuleName": f"{unique}-ok"}
    )
    assert (status, got["Data"]["MatchRules"]) == (200, good)


@pytest.mark.parametrize("value", HOSTILE, ids=ascii)
@pytest.mark.parametrize(
    ("action", "params"),
    [
        ("ListQueue", {"QueueName": "{value}"}),
        ("ListQueue", {"Tag.1.Key": "k", "Tag.1.Value": "{value}"}),
        ("ListTopic", {"TopicName": "{value}"}),
        ("ListTopic", {"Tag.1.Key": "{value}"}),
        ("ListSubscriptionByTopic", {"TopicName": "{name}", "SubscriptionName": "{value}"}),
        ("TagResources", {"ResourceType": "queue", "ResourceId.1": "{name}",
                          "Tag.1.Key": "{value}", "Tag.1.Value": "v"}),
        ("TagResources", {"ResourceType": "queue", "ResourceId.1": "{name}",
                          "Tag.1.Key": "k", "Tag.1.Value": "{value}"}),
        ("ListTagResources", {"ResourceType": "queue", "ResourceId.1": "{name}",
                              "Tag.1.Key": "{value}"}),
        ("Subscribe", {"TopicName": "{name}", "SubscriptionName": "s", "PushType": "http",
                       "Endpoint": "http://127.0.0.1:9/{value}"}),
        ("Subscribe", {"TopicName": "{name}", "SubscriptionName": "s", "PushType": "http",
                       "Endpoint": "http://127.0.0.1:9/", "MessageTag": "{value}"}),
        ("CreateEventRule", {"ProductName": "oss", "RuleName": "r",
                             "EventTypes": '["{json}"]', "MatchRules": '[[{"Name":"n"}]]',
                             "Endpoint": '{"EndpointType":"queue","EndpointValue":"{name}"}'}),
    ],
)  # fmt: skip
def test_text_no_front_end_can_carry_is_an_invalid_parameter(
    control_gateway: RunningGateway, unique: str, action: str, params: dict[str, str], value: str
) -> None:
    assert classic(control_gateway, "CreateQueue", {"QueueName": unique})[0] == 200
    assert classic(control_gateway, "CreateTopic", {"TopicName": unique})[0] == 200
    escaped = json.dumps(value)[1:-1]  # inside JSON text, as JSON spells it
    filled = {
        k: v.replace("{name}", unique).replace("{json}", escaped).replace("{value}", value)
        for k, v in params.items()
    }
    assert_error(classic(control_gateway, action, filled), 400, "InvalidParameter")
    status, tags = classic(
        control_gateway, "ListTagResources", {"ResourceType": "queue", "ResourceId.1": unique}
    )
    assert (status, tags["Data"]["TagResources"]) == (200, []), tags
    status, listed = classic(control_gateway, "ListSubscriptionByTopic", {"TopicName": unique})
    assert (status, listed["Data"]["PageData"]) == (200, []), listed
