"""What an SmsEndpoint subscription sends for one message: the text messages and their
receivers, decided from the endpoint and the ``DirectSMS`` attribute, pure and free of IO.

The providers (:mod:`gateway.pushing.sms_providers`: the Alibaba Cloud SMS API, a webhook, the
inbox) take an :class:`OutgoingSms` and only differ in where it goes. Who receives what
(docs/delivery.md#sms-endpoints):

- ``sms:directsms:{phone}``: that number, with the ``singleContent`` parameters.
- ``sms:directsms:anonymous`` and ``singleContent``: every number in ``Receiver`` (required
  there), each with the same parameters.
- ``sms:directsms:anonymous`` and ``multiContent``: every number ``SmsParams`` names, each with
  its own parameters. (Fan-out never hands a ``multiContent`` message to a phone endpoint.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.delivery.records import DeliveryJob
from gateway.errors import PermanentDeliveryError
from gateway.errors.mns import MNSError
from gateway.protocol.endpoints import SmsEndpoint, parse_endpoint
from gateway.topics.direct import (
    DIRECT_SMS,
    DirectSms,
    SmsType,
    TemplateParam,
    direct_attribute,
    parse_direct_sms,
)


@dataclass(frozen=True, slots=True)
class SmsMessage:
    """One text message: a template with its parameters, to one phone number."""

    phone_number: str
    sign_name: str
    template_code: str
    template_param: TemplateParam


@dataclass(frozen=True, slots=True)
class OutgoingSms:
    """Everything one delivery sends: ``singleContent`` messages share their parameters (one
    SendSms call), ``multiContent`` ones each have their own (one SendBatchSms call)."""

    type: SmsType
    messages: tuple[SmsMessage, ...]

    @property
    def sign_name(self) -> str:
        return self.messages[0].sign_name

    @property
    def template_code(self) -> str:
        return self.messages[0].template_code


def _phone_of(job: DeliveryJob) -> str:
    try:
        endpoint = parse_endpoint(job.subscription.endpoint)
    except MNSError:
        endpoint = None
    if not isinstance(endpoint, SmsEndpoint):
        raise PermanentDeliveryError(f"not an SMS endpoint: {job.subscription.endpoint}")
    return endpoint.phone


def _direct_sms_of(job: DeliveryJob) -> DirectSms:
    raw = direct_attribute(job.message.attributes, DIRECT_SMS)
    if raw is None:
        raise PermanentDeliveryError(
            "the message has no DirectSMS attribute, which an SMS endpoint needs"
        )
    try:
        return parse_direct_sms(raw)
    except MNSError as exc:  # stored before PublishMessage checked it
        raise PermanentDeliveryError(exc.message) from exc


def _receivers(phone: str, direct: DirectSms) -> Mapping[str, TemplateParam]:
    if direct.type is SmsType.MULTI:
        if phone != "anonymous":
            raise PermanentDeliveryError(
                "a multiContent DirectSMS is only for sms:directsms:anonymous subscriptions"
            )
        return direct.params_by_phone
    if phone != "anonymous":
        return {phone: direct.params}
    if not direct.receivers:
        raise PermanentDeliveryError(
            "DirectSMS Receiver is required for a singleContent message to sms:directsms:anonymous"
        )
    return dict.fromkeys(direct.receivers, direct.params)


def prepare_sms(job: DeliveryJob) -> OutgoingSms:
    """The text messages of one delivery; :class:`PermanentDeliveryError` when there can be
    none (no or a malformed DirectSMS, no receiver for an anonymous endpoint)."""
    direct = _direct_sms_of(job)
    receivers = _receivers(_phone_of(job), direct)
    messages = tuple(
        SmsMessage(phone, direct.sign_name, direct.template_code, params)
        for phone, params in receivers.items()
    )
    return OutgoingSms(direct.type, messages)
