"""An RPC call as it arrived, decoded: pure, no IO.

RPC-style calls carry their parameters in the query string, and some (every parameter, from the
Terraform provider; the ``formData`` ones, from the Darabonba SDK) in an
``application/x-www-form-urlencoded`` body. Both signatures sign decoded names and values
(:mod:`gateway.api.control.signing`), so both are decoded here once, ``+`` as a space as form
encoding says: the SDKs encode a space as ``%20`` and a ``+`` as ``%2B``, so nothing they send is
read differently either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl

from gateway.errors.control import ControlError

FORM_TYPE: Final = "application/x-www-form-urlencoded"
#: Parameters of the classic signature itself, not of the operation.
CLASSIC_PARAMETERS: Final = frozenset(
    {
        "AccessKeyId",
        "Action",
        "Format",
        "RegionId",
        "Signature",
        "SignatureMethod",
        "SignatureNonce",
        "SignatureType",
        "SignatureVersion",
        "Timestamp",
        "Version",
    }
)


def decode_pairs(text: str, where: str) -> dict[str, str]:
    """``name=value&...`` decoded; a repeated name keeps its first value. Bytes that are not
    UTF-8 are a client error, not a crash."""
    try:
        pairs = parse_qsl(text, keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise ControlError("InvalidParameter", f"The {where} is not valid UTF-8.") from None
    decoded: dict[str, str] = {}
    for name, value in pairs:
        decoded.setdefault(name, value)
    return decoded


@dataclass(frozen=True, slots=True)
class RpcCall:
    """``query`` and ``form`` decoded; ``headers`` keyed by lowercased name."""

    method: str
    query: dict[str, str]
    form: dict[str, str]
    headers: Mapping[str, str]
    body: bytes = b""
    params: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        # The operation's parameters: query and form together (a name in both: the query's).
        object.__setattr__(self, "params", {**self.form, **self.query})

    @property
    def is_acs3(self) -> bool:
        """Signed with ACS3 (an ``Authorization`` header), else with the classic signature."""
        return "authorization" in self.headers

    @property
    def action(self) -> str:
        return self._named("x-acs-action", "Action")

    @property
    def version(self) -> str:
        return self._named("x-acs-version", "Version")

    def _named(self, header: str, param: str) -> str:
        """The operation (or version) as the call's signature covers it: ACS3 signs the
        ``x-acs-*`` header, the classic signature every parameter and no header. The other
        form, when sent too, must agree: read, it would let an unsigned header choose the
        operation; ignored, it would leave a reader of the call guessing which one ran."""
        in_header, in_params = self.headers.get(header), self.params.get(param)
        signed, other = (in_header, in_params) if self.is_acs3 else (in_params, in_header)
        if other is not None and other != signed:
            raise ControlError(
                "InvalidParameter",
                f"The {header} header ({in_header!r}) and the {param} parameter "
                f"({in_params!r}) differ; send one, or the same in both.",
            )
        return signed or ""

    def operation_params(self) -> dict[str, str]:
        """The parameters the operation reads (the classic signature's own left out)."""
        return {k: v for k, v in self.params.items() if k not in CLASSIC_PARAMETERS}


def parse_call(method: str, raw_query: str, headers: Mapping[str, str], body: bytes) -> RpcCall:
    query = decode_pairs(raw_query, "query string")
    form: dict[str, str] = {}
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if body and content_type == FORM_TYPE:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise ControlError("InvalidParameter", "The form body is not valid UTF-8.") from None
        form = decode_pairs(text, "form body")
    return RpcCall(method.upper(), query, form, headers, body)
