"""The account's own attributes (GetAccountAttributes, SetAccountAttributes): pure values and
their XML (docs/protocol.md#account-operations).

The 2015-06-06 API knows two: LoggingBucket, the object-storage bucket operation logs go to,
and TraceEnabled (0 or 1), which the official Java SDK sends and reads. The gateway keeps both
(:class:`gateway.store.account.AccountStore`) and returns them; it writes its own operation logs
where ``MNS_GATEWAY_LOG_DIR`` says, whatever the bucket.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from typing import Final
from xml.etree.ElementTree import Element

from gateway.errors.mns import MNSError
from gateway.protocol.xml import XmlNode, child_text, local_name, unexpected_element

#: Object-storage bucket names: 3 to 63 lowercase letters, digits and hyphens, beginning and
#: ending with a letter or digit. An empty LoggingBucket clears it.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
SETTABLE: Final = ("LoggingBucket", "TraceEnabled")


@dataclass(frozen=True, slots=True)
class AccountAttributes:
    logging_bucket: str = ""
    trace_enabled: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> AccountAttributes:
        if not text:
            return cls()
        stored = json.loads(text)
        return cls(str(stored.get("logging_bucket", "")), bool(stored.get("trace_enabled")))


def _bucket(text: str) -> str:
    bucket = text.strip()
    if bucket and not _BUCKET.fullmatch(bucket):
        raise MNSError(
            "InvalidArgument",
            "LoggingBucket should be 3 to 63 lowercase letters, digits or hyphens, beginning "
            "and ending with a letter or digit.",
        )
    return bucket


def _trace(text: str) -> bool:
    if text.strip() not in ("0", "1"):
        raise MNSError("InvalidArgument", "The value of TraceEnabled should be 0 or 1.")
    return text.strip() == "1"


def apply_changes(current: AccountAttributes, root: Element) -> AccountAttributes:
    """SetAccountAttributes: the attributes sent replace the current ones; the others stay.

    An element the operation does not know is refused rather than ignored.
    """
    for node in root:
        if local_name(node) not in SETTABLE:
            raise unexpected_element(local_name(node))
    bucket = child_text(root, "LoggingBucket")
    trace = child_text(root, "TraceEnabled")
    return replace(
        current,
        logging_bucket=current.logging_bucket if bucket is None else _bucket(bucket),
        trace_enabled=current.trace_enabled if trace is None else _trace(trace),
    )


def account_nodes(attributes: AccountAttributes) -> list[XmlNode]:
    """GetAccountAttributes' elements: LoggingBucket is always there (empty when unset), as the
    Python SDK requires it."""
    return [
        ("LoggingBucket", attributes.logging_bucket),
        ("TraceEnabled", "1" if attributes.trace_enabled else "0"),
    ]
