"""The refused requests the MNS API answers with an ``<Error>`` body (:class:`MNSError`), each
code mapped to its HTTP status in one table.

MNS clients branch on the ``Code`` element and on the status, so both must match the service
exactly; keeping them in one table makes a wrong pairing visible in review instead of scattered
over views and stores.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from gateway.errors import RefusedError


class ErrorCode(StrEnum):
    """Every ``Code`` the gateway answers with; each is a key of :data:`ERROR_TABLE`. A member is
    its string (``ErrorCode.QUEUE_NOT_EXIST == "QueueNotExist"``), so it renders as the wire
    does."""

    ACCESS_DENIED = "AccessDenied"
    INVALID_ACCESS_KEY_ID = "InvalidAccessKeyId"
    INTERNAL_ERROR = "InternalError"
    INVALID_AUTHORIZATION_HEADER = "InvalidAuthorizationHeader"
    INVALID_DATE_HEADER = "InvalidDateHeader"
    INVALID_ARGUMENT = "InvalidArgument"
    INVALID_DIGEST = "InvalidDigest"
    INVALID_REQUEST_URL = "InvalidRequestURL"
    INVALID_QUERY_STRING = "InvalidQueryString"
    MALFORMED_XML = "MalformedXML"
    MISSING_AUTHORIZATION_HEADER = "MissingAuthorizationHeader"
    MISSING_DATE_HEADER = "MissingDateHeader"
    MISSING_RECEIPT_HANDLE = "MissingReceiptHandle"
    MISSING_VISIBILITY_TIMEOUT = "MissingVisibilityTimeout"
    MESSAGE_NOT_EXIST = "MessageNotExist"
    QUEUE_ALREADY_EXIST = "QueueAlreadyExist"
    INVALID_QUEUE_NAME = "InvalidQueueName"
    QUEUE_NAME_LENGTH_ERROR = "QueueNameLengthError"
    QUEUE_NOT_EXIST = "QueueNotExist"
    QUEUE_NUM_EXCEEDED_LIMIT = "QueueNumExceededLimit"
    RECEIPT_HANDLE_ERROR = "ReceiptHandleError"
    SIGNATURE_DOES_NOT_MATCH = "SignatureDoesNotMatch"
    TIME_EXPIRED = "TimeExpired"
    QPS_LIMIT_EXCEEDED = "QpsLimitExceeded"
    TOO_MANY_REQUESTS = "TooManyRequests"
    TOPIC_ALREADY_EXIST = "TopicAlreadyExist"
    TOPIC_NAME_INVALID = "TopicNameInvalid"
    TOPIC_NAME_LENGTH_ERROR = "TopicNameLengthError"
    TOPIC_NOT_EXIST = "TopicNotExist"
    SUBSCRIPTION_NAME_INVALID = "SubscriptionNameInvalid"
    SUBSCRIPTION_NAME_LENGTH_ERROR = "SubscriptionNameLengthError"
    SUBSCRIPTION_NOT_EXIST = "SubscriptionNotExist"
    SUBSCRIPTION_ALREADY_EXIST = "SubscriptionAlreadyExist"
    ENDPOINT_INVALID = "EndpointInvalid"
    FIFO_MISSING_MESSAGE_GROUP_ID = "FifoMissingMessageGroupId"
    INVALID_SECURITY_TOKEN = "InvalidSecurityToken"
    SECURITY_TOKEN_EXPIRED = "SecurityTokenExpired"
    INSTANCE_ID_IS_NOT_UNIQUE = "INSTANCE_ID_IS_NOT_UNIQUE"
    DEAD_LETTER_NOT_EXIST = "DeadLetterNotExist"
    DEAD_LETTER_ALREADY_REPLAYED = "DeadLetterAlreadyReplayed"
    MALFORMED_REQUEST = "MalformedRequest"
    REQUEST_TIMEOUT = "RequestTimeout"
    REQUEST_HEADER_TOO_LARGE = "RequestHeaderTooLarge"
    TOO_MANY_CONNECTIONS = "TooManyConnections"
    SERVICE_UNAVAILABLE = "ServiceUnavailable"


#: code -> (HTTP status, default message), from the MNS API reference's error-code table
#: ("MNS错误码表") and its per-operation "Special error" tables.
#: The choices: docs/protocol.md#error-codes-and-statuses.
ERROR_TABLE: Final[dict[ErrorCode, tuple[int, str]]] = {
    ErrorCode.ACCESS_DENIED: (
        403,
        "The OwnerId that your Access Key Id associated to is forbidden for this operation.",
    ),
    ErrorCode.INVALID_ACCESS_KEY_ID: (403, "The access Id you provided does not exist."),
    ErrorCode.INTERNAL_ERROR: (500, "Internal error."),
    ErrorCode.INVALID_AUTHORIZATION_HEADER: (400, "The Authorization header format is invalid."),
    ErrorCode.INVALID_DATE_HEADER: (400, "The Date header format is invalid."),
    ErrorCode.INVALID_ARGUMENT: (
        400,
        "The XML you provided did not validate against our published schema.",
    ),
    ErrorCode.INVALID_DIGEST: (400, "The Content-MD5 you specified is invalid."),
    ErrorCode.INVALID_REQUEST_URL: (400, "Http request URL format invalid."),
    ErrorCode.INVALID_QUERY_STRING: (400, "Http request URL contains invalid querystring item."),
    ErrorCode.MALFORMED_XML: (400, "The XML you provided was not well-formed."),
    ErrorCode.MISSING_AUTHORIZATION_HEADER: (400, "Authorization header is required."),
    ErrorCode.MISSING_DATE_HEADER: (400, "Date header is required."),
    ErrorCode.MISSING_RECEIPT_HANDLE: (400, "ReceiptHandle is required."),
    ErrorCode.MISSING_VISIBILITY_TIMEOUT: (400, "VisibilityTimeout is required."),
    ErrorCode.MESSAGE_NOT_EXIST: (404, "Message not exist."),
    ErrorCode.QUEUE_ALREADY_EXIST: (409, "The queue you want to create is already exist."),
    ErrorCode.INVALID_QUEUE_NAME: (
        400,
        "The queue name you provided is invalid. QueueName should start with alpha and contain "
        "only alpha, digit or - .",
    ),
    ErrorCode.QUEUE_NAME_LENGTH_ERROR: (400, "Queue name length should between 1 and 256."),
    ErrorCode.QUEUE_NOT_EXIST: (404, "The queue name you provided is not exist."),
    ErrorCode.QUEUE_NUM_EXCEEDED_LIMIT: (
        400,
        "The number of the queues you created has exceeded the limit.",
    ),
    ErrorCode.RECEIPT_HANDLE_ERROR: (400, "The receipt handle you provide is not valid."),
    ErrorCode.SIGNATURE_DOES_NOT_MATCH: (
        403,
        "The request signature we calculated does not match the signature you provided. "
        "Check your key and signing method.",
    ),
    ErrorCode.TIME_EXPIRED: (408, "The http request you sent is expired."),
    ErrorCode.QPS_LIMIT_EXCEEDED: (400, "The qps limit of the queue is exceeded."),
    # A queue's TenantRateLimitPolicy (control plane): the service's throttling answer, 429
    # TooManyRequests (its flow-limiting page); docs/control-plane.md#tenantratelimitpolicy.
    ErrorCode.TOO_MANY_REQUESTS: (429, "The receive rate limit of the queue is exceeded."),
    ErrorCode.TOPIC_ALREADY_EXIST: (409, "The topic you want to create already exists."),
    ErrorCode.TOPIC_NAME_INVALID: (
        400,
        "The topic name you provided is invalid. TopicName should start with alpha or digit and "
        "contain only alpha, digit or -.",
    ),
    ErrorCode.TOPIC_NAME_LENGTH_ERROR: (
        400,
        "Topic name length is out of range, should be between 1 and 256.",
    ),
    ErrorCode.TOPIC_NOT_EXIST: (404, "The Topic you provided does not exist."),
    ErrorCode.SUBSCRIPTION_NAME_INVALID: (
        400,
        "The subscription name you provided is invalid. SubscriptionName should start with alpha "
        "or digit and contain only alpha, digit or -.",
    ),
    ErrorCode.SUBSCRIPTION_NAME_LENGTH_ERROR: (
        400,
        "Subscription name length is out of range, should be between 1 and 256.",
    ),
    ErrorCode.SUBSCRIPTION_NOT_EXIST: (404, "The subscription you provided does not exist."),
    ErrorCode.SUBSCRIPTION_ALREADY_EXIST: (
        409,
        "The subscription you want to create already exists.",
    ),
    ErrorCode.ENDPOINT_INVALID: (400, "The format of endpoint you provided is invalid."),
    # Ordered queues: a message sent without its group (the "Ordered message" page names the
    # code; the status is ours, as for every other refused request body).
    ErrorCode.FIFO_MISSING_MESSAGE_GROUP_ID: (400, "MessageGroupId is required for a FIFO queue."),
    # Temporary credentials: the MNS table has no codes of its own for them; these are the
    # Alibaba Cloud ones for the same faults (docs/protocol.md#temporary-credentials).
    ErrorCode.INVALID_SECURITY_TOKEN: (403, "The security token you provided is invalid."),
    ErrorCode.SECURITY_TOKEN_EXPIRED: (403, "The security token you provided has expired."),
    # OpenService on an account that has the service (docs/protocol.md#account-operations).
    ErrorCode.INSTANCE_ID_IS_NOT_UNIQUE: (
        409,
        "INSTANCE_ID_IS_NOT_UNIQUE: this account has already opened the service.",
    ),
    # Not an MNS operation: the gateway's own admin API (dead letters).
    ErrorCode.DEAD_LETTER_NOT_EXIST: (404, "The dead letter you provided does not exist."),
    ErrorCode.DEAD_LETTER_ALREADY_REPLAYED: (
        409,
        "The dead letter was replayed already; replay it again with force to start another "
        "delivery of the message.",
    ),
    # Not in the MNS tables: refusals before a request reaches an operation, in front of the
    # application (docs/http.md#refusals). The service answers these from its load balancer,
    # with no MNS body at all; ours say what was wrong in the same XML as every other error.
    ErrorCode.MALFORMED_REQUEST: (400, "The HTTP request is malformed."),
    ErrorCode.REQUEST_TIMEOUT: (408, "The request was not received in time."),
    ErrorCode.REQUEST_HEADER_TOO_LARGE: (431, "The request line and headers are too large."),
    ErrorCode.TOO_MANY_CONNECTIONS: (503, "The gateway has too many connections; retry later."),
    # Not in the MNS tables: the database is unreachable or its disk full, for a while; nothing
    # was done and the request may be retried (docs/protocol.md#when-the-database-is-unavailable).
    ErrorCode.SERVICE_UNAVAILABLE: (503, "The service is temporarily unavailable; retry later."),
}


class MNSError(RefusedError):
    """An error that reaches the client as an MNS ``<Error>`` body.

    The status is looked up from :data:`ERROR_TABLE`, never passed by callers, so a code can
    only ever travel with the status the real service uses for it.
    """

    #: The ``x-mns-version`` of a request refused before the application saw it, when the
    #: server in front read it: the refusal is answered in that version's format.
    client_version: str | None = None

    def __init__(self, code: ErrorCode | str, message: str | None = None) -> None:
        try:
            self.code = ErrorCode(code)
        except ValueError:
            raise ValueError(f"unknown MNS error code {code!r}") from None
        status, default = ERROR_TABLE[self.code]
        self.status = status
        self.message = message or default
        super().__init__(f"{code}: {self.message}")


def body_too_large(limit: int) -> MNSError:
    return MNSError("InvalidArgument", f"The request body is larger than {limit} bytes.")


def invalid_argument(element: str, low: int, high: int, unit: str = "") -> MNSError:
    """MNS's wording for an out-of-range attribute, which clients show to users verbatim."""
    suffix = f" {unit}" if unit else ""
    return MNSError(
        "InvalidArgument", f"The value of {element} should between {low} and {high}{suffix}."
    )
