"""ListTagResources' ``NextToken``: an opaque name for the position a page ended at. Pure.

The token names the last (resource, tag key) returned, not a count of entries: the next page
starts after that position, so tags added or removed between two calls never make a walk
repeat or skip an entry that stayed (docs/control-plane.md#tags).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Final

from gateway.errors.control import invalid

#: A token is a few hundred characters at most (names of 256, keys of 128); anything longer
#: is refused before it is decoded.
MAX_TOKEN_LENGTH: Final = 2048
_VERSION: Final = 1


def encode(resource_type: str, name: str, key: str) -> str:
    text = json.dumps([_VERSION, resource_type, name, key], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(token: str, resource_type: str) -> tuple[str, str]:
    """The (resource, key) position ``token`` names; InvalidParameter for anything this
    gateway did not hand out for a listing of ``resource_type``."""
    if len(token) > MAX_TOKEN_LENGTH:
        raise _refused()
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        value = json.loads(raw.decode())
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError):
        raise _refused() from None
    if not (
        isinstance(value, list)
        and len(value) == 4
        and value[0] == _VERSION
        and value[1] == resource_type
        and all(isinstance(part, str) for part in value[2:])
    ):
        raise _refused()
    return value[2], value[3]


def _refused() -> Exception:
    return invalid("NextToken", "it is not a token a listing of this ResourceType returned.")
