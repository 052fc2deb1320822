"""TagResources, UntagResources and ListTagResources (which the Darabonba SDK has no method
for: sent as the Terraform provider sends them, with the classic signature), and tags as list
filters; tags are kept in the store and go with their resource, whichever API deletes it."""

from __future__ import annotations

import pytest
from aliyunsdkcore.acs_exception.exceptions import ServerException
from mns.account import Account

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.control.clients import Classic


@pytest.fixture()
def classic(control_gateway: RunningGateway) -> Classic:
    return Classic(control_gateway.port)


def tag(classic: Classic, kind: str, names: list[str], tags: dict[str, str]) -> None:
    params = {"ResourceType": kind}
    params.update({f"ResourceId.{i}": name for i, name in enumerate(names, 1)})
    for i, (key, value) in enumerate(tags.items(), 1):
        params[f"Tag.{i}.Key"], params[f"Tag.{i}.Value"] = key, value
    classic.common("TagResources", params)


def listed(classic: Classic, params: dict[str, str]) -> list[tuple[str, str, str]]:
    data = classic.common("ListTagResources", params)["Data"]
    return [(r["ResourceId"], r["TagKey"], r["TagValue"]) for r in data["TagResources"]]


def test_tag_list_and_untag(classic: Classic, unique: str) -> None:
    a, b = f"{unique}-a", f"{unique}-b"
    for name in (a, b):
        classic.common("CreateQueue", {"QueueName": name})
    tag(classic, "queue", [a, b], {"env": "dev", "team": "x"})
    tag(classic, "queue", [b], {"env": "prod"})  # a key again: its value replaced
    assert listed(classic, {"ResourceType": "queue", "ResourceId.1": a}) == [
        (a, "env", "dev"),
        (a, "team", "x"),
    ]
    by_tag = {"ResourceType": "queue", "Tag.1.Key": "env", "Tag.1.Value": "prod"}
    assert listed(classic, by_tag) == [(b, "env", "prod"), (b, "team", "x")]
    classic.common(
        "UntagResources", {"ResourceType": "queue", "ResourceId.1": a, "TagKey.1": "team"}
    )
    classic.common("UntagResources", {"ResourceType": "queue", "ResourceId.1": b, "All": "true"})
    queues = classic.common("ListQueue", {"QueueName": unique})["Data"]["PageData"]
    assert [(q["QueueName"], q["Tags"]) for q in queues] == [
        (a, [{"TagKey": "env", "TagValue": "dev"}]),
        (b, []),
    ]


def test_topics_filter_by_tag(classic: Classic, unique: str) -> None:
    for index in range(3):
        classic.common("CreateTopic", {"TopicName": f"{unique}-{index}"})
    tag(classic, "topic", [f"{unique}-0", f"{unique}-2"], {"tier": "gold"})
    data = classic.common(
        "ListTopic", {"TopicName": unique, "Tag.1.Key": "tier", "PageSize": "1", "PageNum": "2"}
    )["Data"]
    assert (data["Total"], data["Pages"], data["PageNum"]) == (2, 2, 2)
    assert [t["TopicName"] for t in data["PageData"]] == [f"{unique}-2"]


def test_tagging_a_missing_queue_or_too_many_tags_is_refused(classic: Classic, unique: str) -> None:
    with pytest.raises(ServerException) as caught:
        tag(classic, "queue", [unique], {"k": "v"})
    assert (caught.value.http_status, caught.value.error_code) == (404, "QueueNotExist")
    classic.common("CreateQueue", {"QueueName": unique})
    tag(classic, "queue", [unique], {f"k{i}": "v" for i in range(15)})
    with pytest.raises(ServerException) as caught:
        tag(classic, "queue", [unique], {f"n{i}": "v" for i in range(6)})
    assert (caught.value.http_status, caught.value.error_code) == (400, "InvalidParameter")
    assert len(listed(classic, {"ResourceType": "queue", "ResourceId.1": unique})) == 15


def test_a_queue_deleted_through_the_xml_api_loses_its_tags(
    classic: Classic, control_gateway: RunningGateway, unique: str
) -> None:
    classic.common("CreateQueue", {"QueueName": unique, "Tag.1.Key": "k", "Tag.1.Value": "v"})
    Account(control_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue(unique).delete()
    assert listed(classic, {"ResourceType": "queue", "ResourceId.1": unique}) == []
