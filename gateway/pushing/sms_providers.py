"""SMS providers: the Alibaba Cloud SMS API and a generic HTTP webhook (the inbox is the third,
:class:`gateway.pushing.inbox_sender.InboxSender`). Each is a
:class:`~gateway.pushing.senders.Sender`
for the ``sms`` route, so SMS deliveries are claimed, retried on the subscription's schedule,
dead-lettered, counted and logged exactly as HTTP pushes are.

What is sent is decided by :func:`~gateway.delivery.sms.prepare_sms`; the request each provider
makes of it, and how its answers are judged, are pure functions here beside the thin senders.
docs/delivery.md#sms-providers
"""

from __future__ import annotations

import hmac
import json
import time
import uuid
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from gateway.auth.acs3 import acs_date, sign_rpc
from gateway.delivery.records import DeliveryJob, PushOutcome
from gateway.delivery.sms import OutgoingSms, prepare_sms
from gateway.delivery.wire import Origin, origin_of
from gateway.errors import DeliveryError, PermanentDeliveryError
from gateway.errors.delivery import SmsConfigError
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.pushing.transport import PushResult, PushTransport
from gateway.topics.direct import SmsType

DYSMS_VERSION: Final = "2017-05-25"
_COMPACT: Final = {"ensure_ascii": False, "separators": (",", ":")}


def _json(value: object) -> str:
    return json.dumps(value, **_COMPACT)  # type: ignore[arg-type]


def _origin(url: str, setting: str) -> Origin:
    """The origin of the URL a provider's setting names, or :class:`SmsConfigError`."""
    try:
        return origin_of(url)
    except DeliveryError:
        raise SmsConfigError(f"MNS_GATEWAY_{setting} is not an http(s) URL: {url!r}") from None


# the Alibaba Cloud SMS API --------------------------------------------------------------------
FORM: Final = "application/x-www-form-urlencoded"


def dysms_call(sms: OutgoingSms, out_id: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """The Dysmsapi action, query parameters and form parameters for ``sms``: ``singleContent``
    is one SendSms to every number with one TemplateParam (all in the query); ``multiContent``
    is one SendBatchSms with a sign name and a TemplateParam per number (the three JSON lists
    as form data, as the API takes them). ``out_id`` (the MessageId) comes back in delivery
    receipts."""
    phones = [m.phone_number for m in sms.messages]
    if sms.type is SmsType.SINGLE:
        params = {
            "PhoneNumbers": ",".join(phones),
            "SignName": sms.sign_name,
            "TemplateCode": sms.template_code,
            "OutId": out_id,
        }
        if sms.messages[0].template_param:
            params["TemplateParam"] = _json(dict(sms.messages[0].template_param))
        return "SendSms", params, {}
    form = {"PhoneNumberJson": _json(phones), "SignNameJson": _json([sms.sign_name] * len(phones))}
    if any(m.template_param for m in sms.messages):
        form["TemplateParamJson"] = _json([dict(m.template_param) for m in sms.messages])
    return "SendBatchSms", {"TemplateCode": sms.template_code, "OutId": out_id}, form


def is_permanent_refusal(code: str) -> bool:
    """``isv.*`` codes refuse this message (a bad number, sign name, template or parameters):
    sending it again cannot help. Their ``*LIMIT_CONTROL`` ones are rate limits, and every other
    code (throttling, ``isp.*`` service faults, credentials or signature) may pass later."""
    return code.startswith("isv.") and "LIMIT_CONTROL" not in code


def judge_dysms_answer(result: PushResult, body: bytes) -> PushResult:
    """A success is ``"Code": "OK"`` in a 2xx; :class:`PermanentDeliveryError` for a
    :func:`permanent refusal <is_permanent_refusal>`; any other answer is a failed attempt."""
    if result.status is None:
        return result
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read
        answer = None
    code = str(answer.get("Code", "")) if isinstance(answer, dict) else ""
    message = str(answer.get("Message", "")) if isinstance(answer, dict) else ""
    if result.ok and code == "OK":
        return result
    if is_permanent_refusal(code):
        raise PermanentDeliveryError(f"the SMS API refused the message: {code}: {message}")
    if result.outcome is PushOutcome.TIMEOUT:
        return result
    error = f"SMS API HTTP {result.status}: {code or 'no Code'}: {message or body[:200]!r}"
    return PushResult(result.status, PushOutcome.HTTP_ERROR, error, result.latency_ms)


class AliyunSmsSender:
    """SendSms and SendBatchSms against ``endpoint`` (``https://dysmsapi.aliyuncs.com``, or a
    local server speaking that API in tests), signed with ACS3-HMAC-SHA256."""

    def __init__(
        self,
        transport: PushTransport,
        *,
        endpoint: str,
        access_key_id: str,
        access_key_secret: str,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        nonce: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        if not (access_key_id and access_key_secret):
            raise SmsConfigError(
                "MNS_GATEWAY_SMS_PROVIDER=aliyun needs MNS_GATEWAY_SMS_ACCESS_KEY_ID and "
                "MNS_GATEWAY_SMS_ACCESS_KEY_SECRET"
            )
        self.host = _origin(endpoint, "SMS_ENDPOINT").host_header
        self.url = f"{urlsplit(endpoint).scheme}://{self.host}/"
        self.transport = transport
        self.access_key_id = access_key_id
        self.access_key_secret = access_key_secret
        self.timeout = timeout
        self.clock = clock
        self.nonce = nonce

    def send(self, job: DeliveryJob) -> PushResult:
        action, params, form = dysms_call(prepare_sms(job), job.message.id)
        body = urlencode(form).encode("ascii")
        query, headers = sign_rpc(
            host=self.host,
            action=action,
            version=DYSMS_VERSION,
            params=params,
            key_id=self.access_key_id,
            secret=self.access_key_secret,
            date=acs_date(self.clock()),
            nonce=self.nonce(),
            body=body,
            content_type=FORM if form else None,
        )
        sent = [("Accept", "application/json"), *headers.items()]
        result, answer = self.transport.post(f"{self.url}?{query}", sent, body, self.timeout)
        return judge_dysms_answer(result, answer)


# a webhook ------------------------------------------------------------------------------------
def webhook_document(job: DeliveryJob, sms: OutgoingSms) -> dict[str, Any]:
    """The JSON a webhook receives: where the message came from and every text message."""
    return {
        "MessageId": job.message.id,
        "TopicName": job.message.topic_name,
        "SubscriptionName": job.subscription.name,
        "Endpoint": job.subscription.endpoint,
        "PublishTime": job.message.publish_time_ms,
        "Type": sms.type.value,
        "SignName": sms.sign_name,
        "TemplateCode": sms.template_code,
        "Messages": [
            {"PhoneNumber": m.phone_number, "TemplateParam": dict(m.template_param)}
            for m in sms.messages
        ],
    }


def webhook_signature(secret: str, timestamp: str, body: bytes) -> str:
    """``v1=`` and the hex HMAC-SHA256 of ``{timestamp}.{body}``: a receiver holding the secret
    recomputes it, and refuses an old timestamp to stop replays."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, "sha256")
    return f"v1={mac.hexdigest()}"


class WebhookSmsSender:
    """POSTs each delivery's text messages as JSON to a URL of the operator's own SMS service;
    any 2xx is a success, anything else a failed attempt, as for HTTP endpoints."""

    def __init__(
        self,
        transport: PushTransport,
        *,
        url: str,
        secret: str = "",
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        _origin(url, "SMS_WEBHOOK_URL")
        self.tracing = tracing
        self.transport = transport
        self.url = url
        self.secret = secret
        self.timeout = timeout
        self.clock = clock

    def send(self, job: DeliveryJob) -> PushResult:
        body = _json(webhook_document(job, prepare_sms(job))).encode("utf-8")
        headers = [("Content-Type", "application/json;charset=utf-8"), ("User-Agent", "mns-push")]
        if self.secret:
            timestamp = str(int(self.clock()))
            headers += [
                ("X-MNS-Gateway-Timestamp", timestamp),
                ("X-MNS-Gateway-Signature", webhook_signature(self.secret, timestamp, body)),
            ]
        headers += self.tracing.current_carrier().items()  # the attempt's trace context
        return self.transport.send(self.url, headers, body, self.timeout)
