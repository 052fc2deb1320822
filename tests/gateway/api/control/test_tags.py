"""TagResources, UntagResources and ListTagResources (which the Darabonba SDK has no method
for: sent as the Terraform provider sends them, with the classic signature), and tags as list
filters; tags are kept in the store and go with their resource, whichever API deletes it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aliyunsdkcore.acs_exception.exceptions import ServerException
from mns.account import Account
from mns.mns_exception import MNSExceptionBase

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.control.clients import Classic


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
    names = [f"{unique}-{index:02}" for index in range(12)]
    for name in names:
        classic.common("CreateTopic", {"TopicName": name})
    tagged = names[:1] + names[2:]  # all but one
    tag(classic, "topic", tagged, {"tier": "gold"})
    data = classic.common(
        "ListTopic", {"TopicName": unique, "Tag.1.Key": "tier", "PageSize": "10", "PageNum": "2"}
    )["Data"]
    assert (data["Total"], data["Pages"], data["PageNum"]) == (11, 2, 2)
    assert [t["TopicName"] for t in data["PageData"]] == [names[11]]


def test_list_queue_entries_carry_their_tags_and_rate_limit(classic: Classic, unique: str) -> None:
    # The Darabonba SDK's ListQueue entry model has no TenantRateLimitPolicy field; the JSON does.
    policy = '{"Enabled": true, "MaxReceivesPerSecond": 7}'
    classic.common("CreateQueue", {"QueueName": f"{unique}-a", "TenantRateLimitPolicy": policy})
    classic.common("CreateQueue", {"QueueName": f"{unique}-b"})
    tag(classic, "queue", [f"{unique}-b"], {"tier": "gold"})
    entries = classic.common("ListQueue", {"QueueName": unique})["Data"]["PageData"]
    assert [e["QueueName"] for e in entries] == [f"{unique}-a", f"{unique}-b"]
    assert entries[0]["TenantRateLimitPolicy"] == {"Enabled": True, "MaxReceivesPerSecond": 7}
    assert "TenantRateLimitPolicy" not in entries[1]
    assert [(t["TagKey"], t["TagValue"]) for t in entries[1]["Tags"]] == [("tier", "gold")]


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


def walk(
    classic: Classic, params: dict[str, str], between: Callable[[int], object] = lambda _: None
) -> tuple[list[tuple[str, str, str]], int]:
    """Every entry ListTagResources gives, page after page by NextToken (``between(n)`` runs
    after page n), and how many pages there were."""
    entries: list[tuple[str, str, str]] = []
    token = ""
    for pages in range(1, 100):
        data = classic.common("ListTagResources", {**params, "NextToken": token})["Data"]
        entries += [(r["ResourceId"], r["TagKey"], r["TagValue"]) for r in data["TagResources"]]
        token = data["NextToken"]
        if not token:
            return entries, pages
        between(pages)
    raise AssertionError("the walk did not end")


def tagged_queues(classic: Classic, unique: str, count: int, tags: int) -> dict[str, str]:
    """``count`` queues of ``tags`` tags each; the ListTagResources parameters naming them."""
    params = {"ResourceType": "queue"}
    for index in range(1, count + 1):
        name = params[f"ResourceId.{index}"] = f"{unique}-{index}"
        classic.common("CreateQueue", {"QueueName": name})
        tag(classic, "queue", [name], {f"k{key:02}": f"v{key}" for key in range(tags)})
    return params


def test_list_tag_resources_pages_by_next_token(classic: Classic, unique: str) -> None:
    params = tagged_queues(classic, unique, 4, 15)
    expected = [
        (f"{unique}-{q}", f"k{key:02}", f"v{key}") for q in range(1, 5) for key in range(15)
    ]
    # 50 entries a page when MaxResults does not ask for fewer (or asks for more).
    assert walk(classic, params) == (expected, 2)
    assert walk(classic, {**params, "MaxResults": "500"}) == (expected, 2)
    assert walk(classic, {**params, "MaxResults": "7"}) == (expected, 9)
    assert walk(classic, {**params, "MaxResults": "60"}) == (expected, 2)
    # A page that ends exactly at the last entry says so: no token to an empty page.
    assert walk(classic, {**params, "MaxResults": "30"}) == (expected, 2)


def test_a_token_names_a_position_so_concurrent_changes_shift_nothing(
    classic: Classic, unique: str
) -> None:
    params = {**tagged_queues(classic, unique, 3, 4), "MaxResults": "5"}
    first, second, third = (f"{unique}-{q}" for q in (1, 2, 3))

    def change(page: int) -> None:
        # Page 1 ended at (second, k00). Before that position: two tags go, one comes (an
        # offset would now skip an entry); after it: one comes, one goes.
        if page == 1:
            untag = {"ResourceType": "queue", "ResourceId.1": first}
            classic.common("UntagResources", {**untag, "TagKey.1": "k00", "TagKey.2": "k01"})
            tag(classic, "queue", [first], {"a-new": "x"})
            tag(classic, "queue", [third], {"z-new": "y"})
            untag = {"ResourceType": "queue", "ResourceId.1": third, "TagKey.1": "k03"}
            classic.common("UntagResources", untag)

    entries, pages = walk(classic, params, change)
    first_page = [(first, f"k{k:02}", f"v{k}") for k in range(4)] + [(second, "k00", "v0")]
    rest = [(second, f"k{k:02}", f"v{k}") for k in range(1, 4)]
    rest += [(third, f"k{k:02}", f"v{k}") for k in range(3)] + [(third, "z-new", "y")]
    # Nothing repeated, nothing that stayed skipped; after the position, the tags as they are
    # when the walk reaches them.
    assert (entries, pages) == (first_page + rest, 3)


def test_a_bad_next_token_or_max_results_is_invalid_parameter(
    classic: Classic, unique: str
) -> None:
    params = tagged_queues(classic, unique, 1, 3)
    topic_token = "WzEsInRvcGljIiwieCIsImsiXQ"  # a topic listing's position, base64url JSON
    for bad in ("!!!", "bm90IGpzb24", "WzJd", topic_token, "A" * 5000):
        error = classic.error("ListTagResources", {**params, "NextToken": bad})
        assert (error.http_status, error.error_code) == (400, "InvalidParameter"), bad
    for bad in ("0", "-1", "many"):
        error = classic.error("ListTagResources", {**params, "MaxResults": bad})
        assert (error.http_status, error.error_code) == (400, "InvalidParameter"), bad
    # A topic listing's own token is a valid position in a topic listing.
    topics = {"ResourceType": "topic", "Tag.1.Key": f"{unique}-none", "NextToken": topic_token}
    assert classic.common("ListTagResources", topics)["Data"]["TagResources"] == []


@pytest.mark.parametrize("kind", ["Queue", "Topic"])
def test_a_create_with_refused_tags_creates_nothing(
    classic: Classic, control_gateway: RunningGateway, unique: str, kind: str
) -> None:
    xml = Account(control_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    too_many = {f"Tag.{i}.Key": f"k{i}" for i in range(1, 22)}
    too_many.update({f"Tag.{i}.Value": "v" for i in range(1, 22)})
    refused_tags = [
        too_many,
        {"Tag.1.Key": "k" * 129, "Tag.1.Value": "v"},
        {"Tag.1.Key": "k", "Tag.1.Value": "v" * 129},
        {"Tag.1.Key": "k"},  # a value is required on create
        {"Tag.1.Key": "k", "Tag.1.Value": "a", "Tag.2.Key": "k", "Tag.2.Value": "b"},
    ]
    for tags in refused_tags:
        error = classic.error(f"Create{kind}", {f"{kind}Name": unique, **tags})
        assert error.http_status == 400
        assert error.error_code in ("InvalidParameter", "MissingParameter")
        gone = classic.error(f"Get{kind}Attributes", {f"{kind}Name": unique})
        assert gone.error_code == f"{kind}NotExist"
        with pytest.raises(MNSExceptionBase) as caught:
            (xml.get_queue if kind == "Queue" else xml.get_topic)(unique).get_attributes()
        assert caught.value.type == f"{kind}NotExist"


def test_an_identical_create_again_tags_within_the_limit_or_changes_nothing(
    classic: Classic, unique: str
) -> None:
    """The Terraform provider retries a create: the same queue again is accepted and its tags
    set as asked, unless the queue would then carry more than 20."""
    first = {f"Tag.{i}.Key": f"k{i}" for i in range(1, 16)}
    first.update({f"Tag.{i}.Value": "v" for i in range(1, 16)})
    classic.common("CreateQueue", {"QueueName": unique, **first})
    classic.common("CreateQueue", {"QueueName": unique, **first})
    again = {"Tag.1.Key": "k1", "Tag.1.Value": "new", "Tag.2.Key": "extra", "Tag.2.Value": "x"}
    classic.common("CreateQueue", {"QueueName": unique, **again})
    names = {"ResourceType": "queue", "ResourceId.1": unique}
    before = listed(classic, names)
    assert len(before) == 16 and (unique, "k1", "new") in before
    more = {f"Tag.{i}.Key": f"n{i}" for i in range(1, 6)}
    more.update({f"Tag.{i}.Value": "v" for i in range(1, 6)})
    error = classic.error("CreateQueue", {"QueueName": unique, **more})
    assert (error.http_status, error.error_code) == (400, "InvalidParameter")
    assert listed(classic, names) == before
