"""Signature V4 on the XML API (x-mns-version 2015-06-06), beside V2: the same scenario over every
route, once signed by the official SDK's V2 signing (tests/mns_http.py) and once by the tests'
V4 signer (tests/v4_signer.py, checked against the SDK's in test_signatures_v4.py), answers alike.
The official Python SDK ``mns`` signs V2 only, so V4 goes through raw requests."""

from __future__ import annotations

import re
import time
from pathlib import Path

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import compose_store
from tests.conftest import RunningGateway
from tests.gateway.api.conftest import GATEWAY_REGION
from tests.gateway.api.sdk import NS
from tests.gateway.api.test_temporary_credentials_sdk import issue
from tests.mns_http import RawClient, RawResponse
from tests.v4_signer import V4RawClient


def _text(response: RawResponse, element: str) -> str:
    found = re.search(rf"<{element}>([^<]*)</{element}>".encode(), response.body)
    assert found, response.body
    return found.group(1).decode()


#: Operations the scenario expects to be refused alike (no dead letter; the service is open).
REFUSED = ("OpenService", "ShowDeadLetter", "ReplayDeadLetter", "ReplayDelivered")
Step = tuple[str, str, str, int]  # operation, method, path, status


def scenario(client: RawClient, name: str) -> list[Step]:
    """Every XML API route once, in an order that succeeds."""
    results: list[Step] = []

    def call(label: str, method: str, uri: str, body: str = "") -> RawResponse:
        response = client.send(method, uri, body.encode())
        results.append((label, method, uri.partition("?")[0], response.status))
        return response

    queue, topic, sub = f"/queues/{name}", f"/topics/{name}", f"/topics/{name}/subscriptions/s"
    call(
        "CreateQueue",
        "PUT",
        queue,
        f"<Queue {NS}><VisibilityTimeout>30</VisibilityTimeout></Queue>",
    )
    call(
        "SetQueueAttributes",
        "PUT",
        f"{queue}?metaoverride=true",
        f"<Queue {NS}><DelaySeconds>0</DelaySeconds></Queue>",
    )
    call("GetQueueAttributes", "GET", queue)
    call("ListQueue", "GET", "/queues")
    message = f"<Message {NS}><MessageBody>m</MessageBody></Message>"
    call("SendMessage", "POST", f"{queue}/messages", message)
    call(
        "BatchSendMessage",
        "POST",
        f"{queue}/messages",
        f"<Messages {NS}>{message}{message}</Messages>",
    )
    call("PeekMessage", "GET", f"{queue}/messages?peekonly=true")
    one = call("ReceiveMessage", "GET", f"{queue}/messages?waitseconds=1")
    handle = _text(one, "ReceiptHandle")
    changed = call(
        "ChangeMessageVisibility",
        "PUT",
        f"{queue}/messages?ReceiptHandle={handle}&VisibilityTimeout=5",
    )
    call(
        "DeleteMessage",
        "DELETE",
        f"{queue}/messages?ReceiptHandle={_text(changed, 'ReceiptHandle')}",
    )
    two = call("BatchReceiveMessage", "GET", f"{queue}/messages?numOfMessages=16&waitseconds=1")
    handles = "".join(
        f"<ReceiptHandle>{h.decode()}</ReceiptHandle>"
        for h in re.findall(rb"<ReceiptHandle>([^<]*)<", two.body)
    )
    call(
        "BatchDeleteMessage",
        "DELETE",
        f"{queue}/messages",
        f"<ReceiptHandles {NS}>{handles}</ReceiptHandles>",
    )
    call("CreateTopic", "PUT", topic, f"<Topic {NS}></Topic>")
    call(
        "SetTopicAttributes",
        "PUT",
        f"{topic}?metaoverride=true",
        f"<Topic {NS}><LoggingEnabled>False</LoggingEnabled></Topic>",
    )
    call("GetTopicAttributes", "GET", topic)
    call("ListTopic", "GET", "/topics")
    endpoint = f"acs:mns:local:1234567890:queues/{name}"
    call(
        "Subscribe",
        "PUT",
        sub,
        f"<Subscription {NS}><Endpoint>{endpoint}</Endpoint></Subscription>",
    )
    call(
        "SetSubscriptionAttributes",
        "PUT",
        f"{sub}?metaoverride=true",
        f"<Subscription {NS}><NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy>"
        "</Subscription>",
    )
    call("GetSubscriptionAttributes", "GET", sub)
    call("ListSubscriptionByTopic", "GET", f"{topic}/subscriptions")
    call("PublishMessage", "POST", f"{topic}/messages", message)
    call("SubscriptionsHealth", "GET", "/admin/subscriptions/health")
    call("SubscriptionHealth", "GET", f"/admin{sub}/health")
    call("OverrideCircuit", "POST", f"/admin{sub}/circuit?override=auto")
    call("StandardWebhooks", "GET", f"/admin{sub}/standard-webhooks")
    call("SwitchStandardWebhooks", "POST", f"/admin{sub}/standard-webhooks?action=off")
    # 400: a window older than the delivered history keeps.
    call("ReplayDelivered", "POST", f"/admin{sub}/replay?since=2000-01-01T00:00:00Z&dryRun=true")
    call("Unsubscribe", "DELETE", sub)
    call("DeleteTopic", "DELETE", topic)
    call("DeleteQueue", "DELETE", queue)
    call("GetAccountAttributes", "GET", "/?accountmeta=true")
    call("SetAccountAttributes", "PUT", "/?accountmeta=true", f"<Account {NS}></Account>")
    call("OpenService", "POST", "/commonbuy/openservice")
    call("ListDeadLetters", "GET", "/admin/dead-letters")
    call("ShowDeadLetter", "GET", "/admin/dead-letters/none")  # 404: none to show
    call("ReplayDeadLetter", "POST", "/admin/dead-letters/none/replay")
    return results  # fmt: skip


def v4(gateway: RunningGateway) -> V4RawClient:
    raw = gateway.raw()
    return V4RawClient(raw.host, raw.port, raw.key_id, raw.secret)


def test_v4_answers_as_v2_on_every_route(
    gateway_process: RunningGateway, unique: str, tmp_path: Path
) -> None:
    with_v2 = scenario(gateway_process.raw(), unique)
    with_v4 = scenario(v4(gateway_process), unique)
    assert [s[0::3] for s in with_v4] == [s[0::3] for s in with_v2]
    assert all(200 <= status < 300 for label, *_, status in with_v2 if label not in REFUSED)
    # Every authenticated route of the app is in the scenario.
    app = create_app(
        # The console signs people in itself, not with MNS signatures: not a route of the scenario.
        Settings(data_dir=tmp_path, console=False),
        compose_store(SQLiteDatabase(tmp_path / "db")),
        {},
    )
    adapter = app.url_map.bind("localhost")
    covered = {adapter.match(path, method)[0] for _, method, path, _ in with_v4}
    public = ("/healthz", "/readyz", "/metrics", "/static", "/certs", "/dev")
    routes = {r.endpoint for r in app.url_map.iter_rules() if not r.rule.startswith(public)}
    assert covered == routes  # fmt: skip


def test_temporary_credentials_sign_v4(gateway_process: RunningGateway, unique: str) -> None:
    issued = issue(gateway_process)
    token = {"security-token": issued["SecurityToken"]}
    client = V4RawClient(
        "127.0.0.1", gateway_process.port, issued["AccessKeyId"], issued["AccessKeySecret"], token
    )
    assert client.send("PUT", f"/queues/{unique}", f"<Queue {NS}/>".encode()).status == 201
    client.extra_headers = {"security-token": "forged"}
    refused = client.send("GET", f"/queues/{unique}")
    assert (refused.status, refused.error_code()) == (403, "InvalidSecurityToken")


def test_a_request_replayed_outside_the_window_changes_nothing(
    gateway_process: RunningGateway, unique: str
) -> None:
    client = v4(gateway_process)
    # 905, not 901: the Date header has whole seconds, and a loaded machine takes a while to
    # answer, so a date 901 s ahead could be under 900 s ahead when it is checked.
    late = client.send(
        "PUT", f"/queues/{unique}", f"<Queue {NS}/>".encode(), date=time.time() - 905
    )
    assert (late.status, late.error_code()) == (408, "TimeExpired")
    early = client.send(
        "PUT", f"/queues/{unique}", f"<Queue {NS}/>".encode(), date=time.time() + 905
    )
    assert (early.status, early.error_code()) == (408, "TimeExpired")
    assert client.send("GET", f"/queues/{unique}").error_code() == "QueueNotExist"


def test_a_scope_of_another_day_changes_nothing(
    gateway_process: RunningGateway, unique: str
) -> None:
    client = v4(gateway_process)
    body = f"<Queue {NS}/>".encode()
    refused = client.send("PUT", f"/queues/{unique}", body, scope_day="20200101")
    assert (refused.status, refused.error_code()) == (403, "SignatureDoesNotMatch")
    assert refused.headers["Content-Type"].startswith("text/xml")
    assert client.send("GET", f"/queues/{unique}").error_code() == "QueueNotExist"


def test_a_gateway_given_a_region_refuses_a_scope_of_another(
    regional_gateway: RunningGateway, unique: str
) -> None:
    """Only a gateway given a region (``MNS_GATEWAY_REGION``) refuses a scope naming another."""
    client = v4(regional_gateway)
    client.region = GATEWAY_REGION
    body = f"<Queue {NS}/>".encode()
    refused = client.send("PUT", f"/queues/{unique}", body, scope_region="cn-hangzhou")
    assert (refused.status, refused.error_code()) == (403, "SignatureDoesNotMatch")
    assert refused.headers["Content-Type"].startswith("text/xml")
    assert client.send("GET", f"/queues/{unique}").error_code() == "QueueNotExist"


def test_a_gateway_nobody_gave_a_region_accepts_the_scopes(
    gateway_process: RunningGateway, unique: str
) -> None:
    """The region is part of the key derivation, not a secret: a client signing for its
    production region works against a gateway left at its defaults (issue 36 item 1)."""
    client = v4(gateway_process)
    client.region = "cn-hangzhou"
    created = client.send("PUT", f"/queues/{unique}", f"<Queue {NS}/>".encode())
    assert created.status == 201
    assert client.send("GET", f"/queues/{unique}").status == 200
