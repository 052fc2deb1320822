"""Every error the gateway can answer with, mapped to its MNS code and HTTP status in one table.

MNS clients branch on the ``Code`` element and on the status, so both must match the service
exactly; keeping them in one table makes a wrong pairing visible in review instead of scattered
over views and stores.
"""

from __future__ import annotations

from typing import Final

#: code -> (HTTP status, default message), from the MNS API reference's error-code table
#: ("MNS错误码表") and its per-operation "Special error" tables.
#: The choices: docs/protocol.md#error-codes-and-statuses.
ERROR_TABLE: Final[dict[str, tuple[int, str]]] = {
    "AccessDenied": (
        403,
        "The OwnerId that your Access Key Id associated to is forbidden for this operation.",
    ),
    "InvalidAccessKeyId": (403, "The AccessKey Id you provided is not exist."),
    "InternalError": (500, "Internal error."),
    "InvalidAuthorizationHeader": (400, "The Authorization header format is invalid."),
    "InvalidDateHeader": (400, "The Date header format is invalid."),
    "InvalidArgument": (400, "The XML you provided did not validate against our published schema."),
    "InvalidDigest": (400, "The Content-MD5 you specified is invalid."),
    "InvalidRequestURL": (400, "Http request URL format invalid."),
    "InvalidQueryString": (400, "Http request URL contains invalid querystring item."),
    "MalformedXML": (400, "The XML you provided was not well-formed."),
    "MissingAuthorizationHeader": (400, "Authorization header is required."),
    "MissingDateHeader": (400, "Date header is required."),
    "MissingReceiptHandle": (400, "ReceiptHandle is required."),
    "MissingVisibilityTimeout": (400, "VisibilityTimeout is required."),
    "MessageNotExist": (404, "Message not exist."),
    "QueueAlreadyExist": (409, "The queue you want to create is already exist."),
    "InvalidQueueName": (
        400,
        "The queue name you provided is invalid. QueueName should start with alpha and contain "
        "only alpha, digit or - .",
    ),
    "QueueNameLengthError": (400, "Queue name length should between 1 and 256."),
    "QueueNotExist": (404, "The queue name you provided is not exist."),
    "QueueNumExceededLimit": (
        400,
        "The number of the queues you created has exceeded the limit.",
    ),
    "ReceiptHandleError": (400, "The receipt handle you provide is not valid."),
    "SignatureDoesNotMatch": (
        403,
        "The request signature we calculated does not match the signature you provided. "
        "Check your key and signing method.",
    ),
    "TimeExpired": (408, "The http request you sent is expired."),
    "QpsLimitExceeded": (400, "The qps limit of the queue is exceeded."),
    "TopicAlreadyExist": (409, "The topic you want to create already exists."),
    "TopicNameInvalid": (
        400,
        "The topic name you provided is invalid. TopicName should start with alpha or digit and "
        "contain only alpha, digit or -.",
    ),
    "TopicNameLengthError": (
        400,
        "Topic name length is out of range, should be between 1 and 256.",
    ),
    "TopicNotExist": (404, "The Topic you provided does not exist."),
    "SubscriptionNameInvalid": (
        400,
        "The subscription name you provided is invalid. SubscriptionName should start with alpha "
        "or digit and contain only alpha, digit or -.",
    ),
    "SubscriptionNameLengthError": (
        400,
        "Subscription name length is out of range, should be between 1 and 256.",
    ),
    "SubscriptionNotExist": (404, "The subscription you provided does not exist."),
    "SubscriptionAlreadyExist": (409, "The subscription you want to create already exists."),
    "EndpointInvalid": (400, "The format of endpoint you provided is invalid."),
    # Ordered queues: a message sent without its group (the "Ordered message" page names the
    # code; the status is ours, as for every other refused request body).
    "FifoMissingMessageGroupId": (400, "MessageGroupId is required for a FIFO queue."),
    # Temporary credentials: the MNS table has no codes of its own for them; these are the
    # Alibaba Cloud ones for the same faults (docs/protocol.md#temporary-credentials).
    "InvalidSecurityToken": (403, "The security token you provided is invalid."),
    "SecurityTokenExpired": (403, "The security token you provided has expired."),
    # OpenService on an account that has the service (docs/protocol.md#account-operations).
    "INSTANCE_ID_IS_NOT_UNIQUE": (
        409,
        "INSTANCE_ID_IS_NOT_UNIQUE: this account has already opened the service.",
    ),
    # Not an MNS operation: the gateway's own admin API (dead letters).
    "DeadLetterNotExist": (404, "The dead letter you provided does not exist."),
    # Not in the MNS tables: refusals before a request reaches an operation, in front of the
    # application (docs/http.md#refusals). The service answers these from its load balancer,
    # with no MNS body at all; ours say what was wrong in the same XML as every other error.
    "MalformedRequest": (400, "The HTTP request is malformed."),
    "RequestTimeout": (408, "The request was not received in time."),
    "RequestHeaderTooLarge": (431, "The request line and headers are too large."),
    "TooManyConnections": (503, "The gateway has too many connections; retry later."),
}


class GatewayError(Exception):
    """Root of every error the gateway raises on purpose."""


class MNSError(GatewayError):
    """An error that reaches the client as an MNS ``<Error>`` body.

    The status is looked up from :data:`ERROR_TABLE`, never passed by callers, so a code can
    only ever travel with the status the real service uses for it.
    """

    def __init__(self, code: str, message: str | None = None) -> None:
        if code not in ERROR_TABLE:
            raise ValueError(f"unknown MNS error code {code!r}")
        status, default = ERROR_TABLE[code]
        self.code = code
        self.status = status
        self.message = message or default
        super().__init__(f"{code}: {self.message}")


def invalid_argument(element: str, low: int, high: int, unit: str = "") -> MNSError:
    """MNS's wording for an out-of-range attribute, which clients show to users verbatim."""
    suffix = f" {unit}" if unit else ""
    return MNSError(
        "InvalidArgument", f"The value of {element} should between {low} and {high}{suffix}."
    )
