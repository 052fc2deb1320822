"""Dead-letter policies and the rules that move a message to a dead-letter queue; no IO.

Two things may name a dead-letter queue (docs/queues.md#dead-letter-queues):

- a **queue**: a message received more than MaxReceiveCount times moves to the policy's target
  queue, at the receive that would exceed the count;
- a **subscription**: a push whose retries ran out is enqueued into the target queue.

The 2015-06-06 XML API has no element for either; the gateway reads and writes ``<DlqPolicy>``
holding the same JSON object the control-plane API (2022-01-19) sends as its ``DlqPolicy``
parameter, and also accepts the three fields as child elements
(docs/queues.md#the-dlqpolicy-element).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from xml.etree.ElementTree import Element

from gateway.errors.mns import MNSError, invalid_argument
from gateway.protocol.integers import integer_in_range
from gateway.protocol.names import validate_name
from gateway.protocol.xml import child_text, local_name

#: MaxReceiveCount: the documents give no range; ours (docs/queues.md#dead-letter-queues).
MIN_RECEIVE_COUNT: Final = 1
MAX_RECEIVE_COUNT: Final = 1000
_COUNT_RANGE: Final = (MIN_RECEIVE_COUNT, MAX_RECEIVE_COUNT)
ELEMENT: Final = "DlqPolicy"
_FIELDS: Final = ("DeadLetterTargetQueue", "MaxReceiveCount", "Enabled")

#: System properties a dead-lettered message carries: the SDKs name them
#: (``SystemPropertyName.DLQ_*``); their values are ours (docs/queues.md#dead-lettered-messages).
DLQ_MESSAGE_TYPE: Final = "DLQMessageType"
DLQ_SOURCE_ARN: Final = "DLQSourceArn"
DLQ_ORIGIN_MESSAGE_ID: Final = "DLQOriginMessageId"
FROM_QUEUE: Final = "QUEUE"
FROM_SUBSCRIPTION: Final = "TOPIC"


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """Where dead letters go; ``max_receive_count`` is ``None`` for a subscription's policy."""

    target_queue: str
    max_receive_count: int | None = None
    enabled: bool = True

    def to_json(self) -> str:
        fields: dict[str, Any] = {"DeadLetterTargetQueue": self.target_queue}
        if self.max_receive_count is not None:
            fields["MaxReceiveCount"] = self.max_receive_count
        fields["Enabled"] = self.enabled
        return json.dumps(fields, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class PolicyUpdate:
    """The fields one request sent; ``None`` where it sent nothing."""

    target_queue: str | None = None
    max_receive_count: int | None = None
    enabled: bool | None = None

    def apply(
        self, current: DeadLetterPolicy | None, *, receive_count: bool
    ) -> DeadLetterPolicy | None:
        """The policy after this update (``None``: none at all). Fields not sent keep their
        current values; ``Enabled`` defaults to true. A policy that would be enabled without a
        target (or, with ``receive_count``, without MaxReceiveCount) is 400 ``InvalidArgument``.
        """
        target = self.target_queue or (current.target_queue if current else "")
        count = self.max_receive_count
        if count is None and current is not None:
            count = current.max_receive_count
        enabled = self.enabled
        if enabled is None:
            enabled = current.enabled if current else True
        if enabled and not target:
            raise MNSError("InvalidArgument", "DlqPolicy needs a DeadLetterTargetQueue.")
        if enabled and receive_count and count is None:
            raise MNSError("InvalidArgument", "DlqPolicy needs a MaxReceiveCount.")
        if not target:
            return None
        return DeadLetterPolicy(target, count if receive_count else None, enabled)


def parse_policy(root: Element | None) -> PolicyUpdate | None:
    """``<DlqPolicy>`` in a Queue or Subscription body: JSON text or child elements; ``None``
    when absent or empty."""
    node = None if root is None else next((n for n in root if local_name(n) == ELEMENT), None)
    if node is None:
        return None
    if len(node):
        fields = {name: child_text(node, name) for name in _FIELDS}
    elif (node.text or "").strip():
        fields = _json_fields(node.text or "")
    else:
        return None
    return parse_policy_fields(
        fields.get("DeadLetterTargetQueue"), fields.get("MaxReceiveCount"), fields.get("Enabled")
    )


def parse_policy_fields(target: Any, max_receive_count: Any, enabled: Any) -> PolicyUpdate:
    """The three fields, from text (XML elements, the command line) or JSON values, checked:
    a valid queue name, MaxReceiveCount 1-1000, Enabled true or false."""
    return PolicyUpdate(_target(target), _count(max_receive_count), _enabled(enabled))


def parse_policy_json(fields: Mapping[str, Any]) -> PolicyUpdate:
    """The control plane's ``DlqPolicy`` parameter, a JSON object already decoded."""
    return parse_policy_fields(
        fields.get("DeadLetterTargetQueue"), fields.get("MaxReceiveCount"), fields.get("Enabled")
    )


def _json_fields(text: str) -> dict[str, Any]:
    try:
        fields = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        fields = None
    if not isinstance(fields, dict):
        raise MNSError("InvalidArgument", "DlqPolicy must be a JSON object or child elements.")
    return fields


def _target(value: Any) -> str | None:
    if value is None or value == "":
        return None
    try:
        return validate_name("queue", str(value).strip())
    except MNSError as exc:
        raise MNSError(
            "InvalidArgument", f"DeadLetterTargetQueue is not a valid queue name: {exc.message}"
        ) from exc


def _count(value: Any) -> int | None:
    if value is None or value == "":
        return None
    # A JSON number arrives as int (its text the same digits); a JSON true is not a count.
    number = None if isinstance(value, bool) else integer_in_range(str(value), *_COUNT_RANGE)
    if number is None:
        raise invalid_argument("MaxReceiveCount", *_COUNT_RANGE)
    return number


def _enabled(value: Any) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    lowered = str(value).strip().lower()
    if lowered not in ("true", "false"):
        raise MNSError("InvalidArgument", "The value of Enabled should be true or false.")
    return lowered == "true"


def check_not_own(queue_name: str, policy: DeadLetterPolicy | None) -> None:
    """A queue cannot be its own dead-letter queue (nor a queue subscription's target)."""
    if policy is not None and policy.target_queue == queue_name:
        raise MNSError(
            "InvalidArgument",
            "A queue cannot be its own dead-letter queue (DeadLetterTargetQueue).",
        )


# the rules ------------------------------------------------------------------------------------
def exceeds(policy: DeadLetterPolicy | None, dequeue_count: int) -> bool:
    """Whether the receive about to happen would make the message received more than
    MaxReceiveCount times: then it moves instead (docs/queues.md#dead-letter-queues)."""
    return (
        policy is not None
        and policy.enabled
        and policy.max_receive_count is not None
        and dequeue_count >= policy.max_receive_count
    )


def queue_arn(region: str, account_id: str, queue_name: str) -> str:
    return f"acs:mns:{region}:{account_id}:/queues/{queue_name}"


def subscription_arn(region: str, account_id: str, topic_name: str, subscription: str) -> str:
    return f"acs:mns:{region}:{account_id}:/topics/{topic_name}/subscriptions/{subscription}"


def dead_lettered_properties(
    properties: Mapping[str, Any], *, kind: str, source_arn: str, origin_message_id: str
) -> dict[str, Any]:
    """A dead-lettered message's properties: the original MessageGroupId and UserProperties,
    its SystemProperties with the three DLQ markers set (replacing older ones)."""
    markers = {
        DLQ_MESSAGE_TYPE: kind,
        DLQ_SOURCE_ARN: source_arn,
        DLQ_ORIGIN_MESSAGE_ID: origin_message_id,
    }
    system = [
        entry
        for entry in properties.get("SystemProperties") or []
        if entry.get("Name") not in markers
    ]
    system += [{"Name": name, "Value": value, "Type": "STRING"} for name, value in markers.items()]
    return {**properties, "SystemProperties": system}


@dataclass(frozen=True, slots=True)
class Moved:
    """A message a receive moved to a dead-letter queue instead of taking it."""

    message_id: str
    dequeue_count: int
    dead_letter_queue: str
    dead_letter_message_id: str
