"""The control plane's errors: Alibaba Cloud's common RPC error codes, and the MNS codes the
data API already answers with, as ``{Code, Message, RequestId}`` JSON.

Authentication and request-shape failures use the codes every RPC-style Alibaba Cloud API shares
(what the SDKs and the Terraform provider branch on); a refused operation (no such queue, a bad
attribute) keeps the MNS code and status of :mod:`gateway.errors.mns`, since the same domain
rules decided it (docs/control-plane.md#authentication).
"""

from __future__ import annotations

from typing import Final

from gateway.errors import GatewayError, RefusedError
from gateway.errors.mns import MNSError

#: code -> (HTTP status, default message).
CONTROL_ERRORS: Final[dict[str, tuple[int, str]]] = {
    "MissingParameter": (400, "A required parameter is not supplied."),
    "InvalidParameter": (400, "A parameter is not valid."),
    "InvalidAction.NotFound": (
        404,
        "Specified api is not found, please check your url and method.",
    ),
    "InvalidVersion": (400, "Specified parameter Version is not valid."),
    "IncompleteSignature": (400, "The request signature does not conform to Aliyun standards."),
    "SignatureDoesNotMatch": (400, "Specified signature is not matched with our calculation."),
    "InvalidAccessKeyId.NotFound": (404, "Specified access key is not found."),
    "InvalidTimeStamp.Format": (400, "Specified time stamp or date value is not well formatted."),
    "InvalidTimeStamp.Expired": (400, "Specified time stamp or date value is expired."),
    "SignatureNonceUsed": (400, "Specified signature nonce was used already."),
    "Forbidden.RAM": (
        403,
        "User not authorized to operate on the specified resource, or this API doesn't "
        "support RAM.",
    ),
    # Event rules: the documents name no codes for these; ours, in the MNS style.
    "EventRuleNotExist": (404, "The event rule you provided does not exist."),
    "EventRuleAlreadyExist": (409, "An event rule of that name already exists."),
    "InternalError": (500, "The request processing has failed due to some unknown error."),
}


class ControlError(RefusedError):
    """An error answered as ``{Code, Message, RequestId}`` with the code's status."""

    def __init__(self, code: str, message: str | None = None) -> None:
        status, default = CONTROL_ERRORS[code]
        self.code = code
        self.status = status
        self.message = message or default
        super().__init__(f"{code}: {self.message}")

    @classmethod
    def from_mns(cls, error: MNSError) -> ControlError:
        """The data API's error, unchanged in code, status and message."""
        made = cls.__new__(cls)
        made.code, made.status, made.message = error.code, error.status, error.message
        GatewayError.__init__(made, f"{error.code}: {error.message}")
        return made


def missing(name: str) -> ControlError:
    return ControlError(
        "MissingParameter",
        f'The input parameter "{name}" that is mandatory for processing this request is not '
        "supplied.",
    )


def invalid(name: str, why: str = "") -> ControlError:
    detail = f": {why}" if why else "."
    message = f'The specified parameter "{name}" is not valid{detail}'
    return ControlError("InvalidParameter", message)


class TagLimitError(ControlError):
    """A resource would carry more tags than its limit; nothing was written (found by the store,
    inside the write's transaction)."""

    def __init__(self, resource_type: str, max_tags: int) -> None:
        refused = invalid("Tag", f"a {resource_type} has at most {max_tags} tags.")
        super().__init__(refused.code, refused.message)
