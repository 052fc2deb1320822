"""The ``DirectMail`` and ``DirectSMS`` message attributes: what a publisher may send, what
PublishMessage checks, and what it means for the mail or SMS a subscription receives.

Both arrive as JSON text inside ``MessageAttributes`` (docs/protocol.md#publishing). Publish
checks only that the attribute can be read (:func:`validate_direct_attributes`: a JSON object,
a known ``Type``, flags 0 or 1); a field the SDKs leave out takes the service's default. Whether
the mail or SMS can be sent (a sender address, a subject, phone numbers, template parameters)
is decided at delivery by :func:`parse_direct_mail` and :func:`parse_direct_sms`, and a message
that cannot be becomes a dead letter saying why: the service accepts such a publish, and the
SDKs' own tests expect it to (docs/delivery.md#validating-directmail-and-directsms).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from gateway.errors.mns import MNSError

DIRECT_MAIL: Final = "DirectMail"
DIRECT_SMS: Final = "DirectSMS"

#: A sender must be a bare address: it becomes the envelope sender and the From header, so
#: anything else (a display name, a line break smuggling in headers) is refused up front.
ADDRESS: Final = re.compile(r"[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[^@\s<>,;:\"]+")
#: A phone number as SmsEndpoints and the SMS API take it: digits, an optional leading ``+``.
PHONE: Final = re.compile(r"\+?[0-9]{5,20}")
#: The SMS API's limits: SendSms takes at most 1,000 numbers, SendBatchSms at most 100.
MAX_SINGLE_RECEIVERS: Final = 1000
MAX_BATCH_RECEIVERS: Final = 100
_FLAGS: Final = {"0": False, "1": True, "false": False, "true": True}


def invalid(attribute: str, problem: str) -> MNSError:
    return MNSError("InvalidArgument", f"{attribute} {problem}")


def _json_object(raw: str, attribute: str) -> dict[str, Any]:
    try:
        fields = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        raise invalid(attribute, "must be JSON.") from None
    if not isinstance(fields, dict):
        raise invalid(attribute, "must be a JSON object.")
    return fields


def _required_text(fields: Mapping[str, Any], attribute: str, name: str) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or not value.strip():
        raise invalid(attribute, f"{name} is required and must be a non-empty string.")
    return value.strip()


def _flag(fields: Mapping[str, Any], attribute: str, name: str) -> bool:
    """0 or 1 as the documents say; publishers also send booleans and their strings. Absent,
    0 (false), the service's default, which the PHP SDK relies on."""
    value = fields.get(name)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | str) and str(value).strip().lower() in _FLAGS:
        return _FLAGS[str(value).strip().lower()]
    raise invalid(attribute, f"{name} must be 0 or 1.")


# DirectMail -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DirectMail:
    """The ``DirectMail`` fields: sender, subject, HTML or not, Reply-To the sender or not.

    ``address_type`` chooses among DirectMail's own sender accounts; it is kept, not used.
    """

    account_name: str
    subject: str
    address_type: int = 0
    is_html: bool = False
    reply_to_sender: bool = False


def _mail_flags(fields: Mapping[str, Any]) -> tuple[int, bool, bool]:
    """AddressType, IsHtml and ReplyToAddress: 0 or 1 when sent, 0 when not."""
    return (
        int(_flag(fields, DIRECT_MAIL, "AddressType")),
        _flag(fields, DIRECT_MAIL, "IsHtml"),
        _flag(fields, DIRECT_MAIL, "ReplyToAddress"),
    )


def parse_direct_mail(raw: str) -> DirectMail:
    """The mail the attribute asks for, at delivery; ``MNSError`` ``InvalidArgument`` naming
    the first field that makes it unsendable (the dead letter's reason)."""
    fields = _json_object(raw, DIRECT_MAIL)
    address_type, is_html, reply_to_sender = _mail_flags(fields)
    account_name = _required_text(fields, DIRECT_MAIL, "AccountName")
    if not ADDRESS.fullmatch(account_name):
        raise invalid(DIRECT_MAIL, "AccountName must be a bare e-mail address.")
    subject = _required_text(fields, DIRECT_MAIL, "Subject")
    if "\r" in subject or "\n" in subject:
        raise invalid(DIRECT_MAIL, "Subject must be one line.")
    return DirectMail(account_name, subject, address_type, is_html, reply_to_sender)


# DirectSMS ------------------------------------------------------------------------------------
class SmsType(StrEnum):
    """``singleContent``: one template's parameters for every receiver (SendSms);
    ``multiContent``: parameters per phone number (SendBatchSms), only for
    ``sms:directsms:anonymous`` subscriptions."""

    SINGLE = "singleContent"
    MULTI = "multiContent"


TemplateParam = Mapping[str, str | int | float]


@dataclass(frozen=True, slots=True)
class DirectSms:
    """The ``DirectSMS`` fields. ``params`` is the template's parameters (singleContent) and
    ``params_by_phone`` the parameters of each phone number (multiContent)."""

    sign_name: str
    template_code: str
    type: SmsType
    receivers: tuple[str, ...] = ()
    params: TemplateParam = field(default_factory=dict)
    params_by_phone: Mapping[str, TemplateParam] = field(default_factory=dict)


def _receivers(fields: Mapping[str, Any]) -> tuple[str, ...]:
    value = fields.get("Receiver", "")
    if not isinstance(value, str):
        raise invalid(DIRECT_SMS, "Receiver must be phone numbers separated by commas.")
    phones = tuple(part.strip() for part in value.split(",") if part.strip())
    bad = next((phone for phone in phones if not PHONE.fullmatch(phone)), None)
    if bad is not None:
        raise invalid(DIRECT_SMS, f"Receiver {bad!r} is not a phone number.")
    if len(phones) > MAX_SINGLE_RECEIVERS:
        raise invalid(DIRECT_SMS, f"Receiver names more than {MAX_SINGLE_RECEIVERS} numbers.")
    return phones


def _template_param(value: Any, where: str) -> TemplateParam:
    if not isinstance(value, dict) or not all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value.values()
    ):
        raise invalid(DIRECT_SMS, f"{where} must map parameter names to strings or numbers.")
    return value


def _sms_params(fields: Mapping[str, Any]) -> dict[str, Any]:
    """SmsParams is a JSON object, or (as the official SDK sends it) a string holding one."""
    value = fields.get("SmsParams")
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else None
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            raise invalid(DIRECT_SMS, "SmsParams must be a JSON object.") from None
    if not isinstance(value, dict):
        raise invalid(DIRECT_SMS, "SmsParams is required and must be a JSON object.")
    return value


def _sms_type(fields: Mapping[str, Any]) -> SmsType:
    """``Type``; absent, ``singleContent`` (the PHP SDK never sends it)."""
    try:
        return SmsType(fields.get("Type") or SmsType.SINGLE)
    except ValueError:
        raise invalid(DIRECT_SMS, "Type must be singleContent or multiContent.") from None


def parse_direct_sms(raw: str) -> DirectSms:
    """The text messages the attribute asks for, at delivery; ``MNSError``
    ``InvalidArgument`` naming the first field that makes them unsendable."""
    fields = _json_object(raw, DIRECT_SMS)
    sms_type = _sms_type(fields)
    sign_name = _required_text(fields, DIRECT_SMS, "FreeSignName")
    template_code = _required_text(fields, DIRECT_SMS, "TemplateCode")
    receivers = _receivers(fields)
    params = _sms_params(fields)
    if sms_type is SmsType.SINGLE:
        return DirectSms(
            sign_name, template_code, sms_type, receivers, _template_param(params, "SmsParams")
        )
    if not params:
        raise invalid(DIRECT_SMS, "SmsParams of a multiContent message names no phone number.")
    if len(params) > MAX_BATCH_RECEIVERS:
        raise invalid(DIRECT_SMS, f"SmsParams names more than {MAX_BATCH_RECEIVERS} numbers.")
    bad = next((phone for phone in params if not PHONE.fullmatch(phone)), None)
    if bad is not None:
        raise invalid(DIRECT_SMS, f"SmsParams key {bad!r} is not a phone number.")
    by_phone = {phone: _template_param(p, f"SmsParams[{phone!r}]") for phone, p in params.items()}
    return DirectSms(sign_name, template_code, sms_type, receivers, params_by_phone=by_phone)


# the attributes of a message ------------------------------------------------------------------
def direct_attribute(attributes: Mapping[str, Any], name: str) -> str | None:
    """The raw JSON of ``DirectMail`` or ``DirectSMS`` in a stored message's attributes."""
    direct = attributes.get("MessageAttributes") or {}
    value = direct.get(name)
    return value if isinstance(value, str) else None


def validate_direct_attributes(direct: Mapping[str, str]) -> None:
    """PublishMessage's check of the two attributes it knows (others pass as sent): each must
    be readable, a JSON object whose ``Type`` and flags, when sent, have values the attribute
    knows. The rest is the delivery's to judge (:func:`parse_direct_mail`,
    :func:`parse_direct_sms`)."""
    if DIRECT_MAIL in direct:
        _mail_flags(_json_object(direct[DIRECT_MAIL], DIRECT_MAIL))
    if DIRECT_SMS in direct:
        _sms_type(_json_object(direct[DIRECT_SMS], DIRECT_SMS))


def sms_type_of(attributes: Mapping[str, Any]) -> SmsType | None:
    """The DirectSMS Type of a stored (already validated) message, if it has the attribute."""
    raw = direct_attribute(attributes, DIRECT_SMS)
    if raw is None:
        return None
    try:
        return _sms_type(json.loads(raw))
    except (ValueError, AttributeError, MNSError):
        return None
