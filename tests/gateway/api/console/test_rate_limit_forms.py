"""Rate limits (TenantRateLimitPolicy) of queues and subscriptions from the console: shown on the
queue's and the topic's page, set with the control plane's parser and store operation, refused
with its error text, CSRF-guarded, and (like the control plane's SetQueueAttributes) not in the
operation log; on each backend."""

from __future__ import annotations

import html

from gateway.queues.records import QueueAttributes
from gateway.store.control import RateLimitPolicy
from gateway.topics.records import Subscription
from tests.gateway.api.console.conftest import Console
from tests.gateway.api.console.test_console_actions import dead_letter

#: The control plane's refusals, word for word (gateway/api/control/policies.py).
OUT_OF_RANGE = (
    'InvalidParameter: The specified parameter "TenantRateLimitPolicy" is not valid: '
    "MaxReceivesPerSecond should be between 1 and 100000."
)
NEEDS_RATE = (
    'InvalidParameter: The specified parameter "TenantRateLimitPolicy" is not valid: '
    "an enabled policy needs MaxReceivesPerSecond."
)
QUEUE_PAGE = "/console/queues/jobs"
TOPIC_PAGE = "/console/topics/orders"


def _refused(console: Console, path: str, **form: str) -> str:
    """A refused form's page messages as the reader sees them (quotes are escaped in HTML)."""
    return html.unescape(console.refused(path, **form))


def _queue(console: Console) -> None:
    console.store.queues.create_queue("jobs", QueueAttributes(logging_enabled=True))


def _topic(console: Console) -> None:
    topics = console.store.topics
    topics.create_topic("orders", 65536, True)
    for name in ("audit", "billing"):
        topics.subscribe(Subscription("orders", name, f"http://127.0.0.1:9/{name}"))


def test_a_queues_rate_limit_is_shown_and_set(signed_in: Console) -> None:
    _queue(signed_in)
    assert "<dt>Rate limit</dt><dd>none" in signed_in.client.get(QUEUE_PAGE).text
    response = signed_in.post(
        "/console/queues/jobs/rate-limit",
        rate_enabled="true",
        max_receives_per_second=" 7 ",
        back=QUEUE_PAGE,
    )
    assert response.status_code == 302 and response.headers["Location"] == QUEUE_PAGE
    control = signed_in.store.control
    assert control.rate_limit("queue", "jobs") == RateLimitPolicy(True, 7)
    assert control.limited_queues() == {"jobs"}  # what receives are held to
    page = signed_in.client.get(QUEUE_PAGE).text
    assert "Rate limit of jobs: 7/s, enabled." in page
    assert "<dt>Rate limit</dt><dd>7/s, enabled" in page and 'value="7"' in page
    # Unticked: kept, but off, as a control-plane client sending Enabled=false.
    signed_in.post("/console/queues/jobs/rate-limit", max_receives_per_second="7")
    assert control.rate_limit("queue", "jobs") == RateLimitPolicy(False, 7)
    assert control.limited_queues() == set()
    # Writes no operation-log record, though the queue logs: the control plane writes none.
    assert signed_in.oplog_records() == []


def test_a_queues_rate_limit_is_refused_as_the_control_plane_refuses_it(
    signed_in: Console,
) -> None:
    _queue(signed_in)
    signed_in.post(
        "/console/queues/jobs/rate-limit", rate_enabled="true", max_receives_per_second="9"
    )
    for rate in ("0", "100001", "abc", "1.5", "-3"):
        refused = _refused(
            signed_in,
            "/console/queues/jobs/rate-limit",
            rate_enabled="true",
            max_receives_per_second=rate,
            back=QUEUE_PAGE,
        )
        assert OUT_OF_RANGE in refused, rate
    refused = _refused(
        signed_in, "/console/queues/jobs/rate-limit", rate_enabled="true", back=QUEUE_PAGE
    )
    assert NEEDS_RATE in refused
    # The bounds themselves are accepted.
    signed_in.post("/console/queues/jobs/rate-limit", max_receives_per_second="100000")
    assert signed_in.store.control.rate_limit("queue", "jobs") == RateLimitPolicy(False, 100000)
    refused = _refused(
        signed_in, "/console/queues/gone/rate-limit", rate_enabled="true", back=QUEUE_PAGE
    )
    assert NEEDS_RATE in refused  # checked first, as the control plane
    refused = _refused(
        signed_in, "/console/queues/gone/rate-limit", max_receives_per_second="5", back=QUEUE_PAGE
    )
    assert "QueueNotExist" in refused
    assert signed_in.store.control.rate_limit("queue", "gone") is None


def test_a_subscriptions_rate_limit_is_shown_and_set(signed_in: Console) -> None:
    _topic(signed_in)
    page = signed_in.client.get(TOPIC_PAGE).text
    assert '<option value="audit">' in page and page.count("<td>none</td>") == 2
    signed_in.post(
        "/console/topics/orders/rate-limit",
        subscription="billing",
        rate_enabled="true",
        max_receives_per_second="3",
        back=TOPIC_PAGE,
    )
    control = signed_in.store.control
    assert control.rate_limit("subscription", "orders/billing") == RateLimitPolicy(True, 3)
    assert control.rate_limit("subscription", "orders/audit") is None
    page = signed_in.client.get(TOPIC_PAGE).text
    assert "Rate limit of billing: 3/s, enabled." in page
    assert "<td>3/s, enabled</td>" in page and page.count("<td>none</td>") == 1
    refused = _refused(
        signed_in,
        "/console/topics/orders/rate-limit",
        subscription="billing",
        rate_enabled="true",
        max_receives_per_second="100001",
        back=TOPIC_PAGE,
    )
    assert OUT_OF_RANGE in refused
    refused = _refused(
        signed_in,
        "/console/topics/orders/rate-limit",
        subscription="nobody",
        max_receives_per_second="4",
        back=TOPIC_PAGE,
    )
    assert "SubscriptionNotExist" in refused
    refused = _refused(
        signed_in, "/console/topics/orders/rate-limit", subscription="bad<b>", back=TOPIC_PAGE
    )
    assert "SubscriptionNameInvalid" in refused
    assert control.rate_limit("subscription", "orders/billing") == RateLimitPolicy(True, 3)
    assert signed_in.oplog_records() == []


def test_forged_or_missing_csrf_changes_no_rate_limit(signed_in: Console) -> None:
    _queue(signed_in)
    _topic(signed_in)
    forms = {
        "/console/queues/jobs/rate-limit": {},
        "/console/topics/orders/rate-limit": {"subscription": "audit"},
    }
    for path, extra in forms.items():
        fields = {"rate_enabled": "true", "max_receives_per_second": "5", **extra}
        for token in ({}, {"csrf_token": "forged"}):
            response = signed_in.client.post(path, data={**fields, **token})
            assert response.status_code == 403, path
    control = signed_in.store.control
    assert control.rate_limit("queue", "jobs") is None
    assert control.rate_limit("subscription", "orders/audit") is None


def test_a_dead_letters_page_shows_its_subscriptions_rate_limit(signed_in: Console) -> None:
    letter = dead_letter(signed_in.store)  # of orders/audit
    page = f"/console/dead-letters/{letter}"
    assert "<dt>Rate limit (now)</dt><dd>none</dd>" in signed_in.client.get(page).text
    signed_in.post(
        "/console/topics/orders/rate-limit",
        subscription="audit",
        rate_enabled="true",
        max_receives_per_second="12",
    )
    assert "<dt>Rate limit (now)</dt><dd>12/s, enabled</dd>" in signed_in.client.get(page).text
