"""QueueEndpoint delivery: into this gateway's own queues, or forwarded to a remote MNS service.

``acs:mns:{region}:{account}:queues/{name}`` names a queue. When region and account are this
gateway's own, the message is enqueued locally in the same transaction that completes the
delivery, so it is neither lost nor enqueued twice by this gateway. Otherwise it is forwarded
with a signed SendMessage to the MNS-compatible service configured for that ``region:account``
(another gateway, or Alibaba Cloud MNS itself). Both follow the subscription's retry schedule.

Either way the queue message keeps the topic message's MessageGroupId, UserProperties and
SystemProperties; its tag travels in the XML or JSON notification
(docs/delivery.md#properties-carried-to-queues).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.auth.signatures import IncomingRequest, sign, string_to_sign
from gateway.delivery.formats import content_md5, http_date
from gateway.delivery.notifications import queue_message_body
from gateway.delivery.records import DeliveryJob, PushOutcome
from gateway.errors import PermanentDeliveryError
from gateway.errors.mns import MNSError
from gateway.protocol import MNS_VERSION
from gateway.protocol.endpoints import QueueEndpoint, parse_endpoint
from gateway.protocol.properties import carried_properties, property_nodes
from gateway.protocol.xml import XmlNode, render_document
from gateway.pushing.transport import PushResult, PushTransport
from gateway.store.deliveries import DeliveryStore


@dataclass(frozen=True, slots=True)
class RemoteService:
    url: str
    access_key_id: str
    access_key_secret: str


def _queue_endpoint(job: DeliveryJob) -> QueueEndpoint:
    endpoint = parse_endpoint(job.subscription.endpoint)
    if not isinstance(endpoint, QueueEndpoint):
        raise PermanentDeliveryError(f"not a queue endpoint: {job.subscription.endpoint}")
    return endpoint


class QueueSender:
    """Chooses local or remote delivery by the endpoint's region and account."""

    def __init__(
        self,
        store: DeliveryStore,
        transport: PushTransport,
        *,
        region: str,
        account_id: str,
        remotes: Mapping[str, RemoteService],
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.transport = transport
        self.region = region
        self.account_id = account_id
        self.remotes = remotes
        self.timeout = timeout
        self.clock = clock

    def send(self, job: DeliveryJob) -> PushResult:
        endpoint = _queue_endpoint(job)
        try:
            body = queue_message_body(job, self.account_id)
        except ValueError as exc:
            raise PermanentDeliveryError(f"cannot render the message: {exc}") from exc
        properties = carried_properties(job.message.attributes)
        if (endpoint.region, endpoint.account_id) == (self.region, self.account_id):
            return self._enqueue_locally(job, endpoint.queue_name, body, properties)
        remote = self.remotes.get(f"{endpoint.region}:{endpoint.account_id}")
        if remote is None:
            raise PermanentDeliveryError(
                f"no MNS service is configured for {endpoint.region}:{endpoint.account_id}"
            )
        return self._forward(remote, endpoint.queue_name, body, properties)

    def _enqueue_locally(
        self, job: DeliveryJob, queue_name: str, body: str, properties: Mapping[str, Any]
    ) -> PushResult:
        started = time.perf_counter()
        try:
            self.store.complete_into_queue(job.delivery_id, queue_name, body, properties)
        except MNSError as exc:
            return PushResult(
                exc.status,
                PushOutcome.HTTP_ERROR,
                f"{exc.code}: {exc.message}",
                _elapsed_ms(started),
            )
        return PushResult(201, PushOutcome.SUCCESS, None, _elapsed_ms(started))

    def _forward(
        self, remote: RemoteService, queue_name: str, body: str, properties: Mapping[str, Any]
    ) -> PushResult:
        nodes: list[XmlNode] = [("MessageBody", body), *property_nodes(properties)]
        payload = render_document("Message", nodes)
        uri = f"/queues/{queue_name}/messages"
        headers = {
            "Content-Type": "text/xml;charset=utf-8",
            "Content-MD5": content_md5(payload),
            "Date": http_date(self.clock()),
            "x-mns-version": MNS_VERSION,
        }
        request = IncomingRequest.from_pairs("POST", uri, headers.items(), payload)
        signature = sign(remote.access_key_secret, string_to_sign(request))
        headers["Authorization"] = f"MNS {remote.access_key_id}:{signature}"
        return self.transport.send(
            remote.url.rstrip("/") + uri, list(headers.items()), payload, self.timeout
        )


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
