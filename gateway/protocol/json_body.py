"""JSON request bodies of the 2026-04-09 message API: one object, fields of the right JSON type.

What the XML API's :mod:`gateway.protocol.xml` is to XML: a body that is not JSON, not an object,
or has a field of the wrong type is the service's 400 ``InvalidArgument`` naming the field, before
anything is stored (docs/protocol.md#the-json-message-api).
"""

from __future__ import annotations

import json
from typing import Any, Final

from gateway.errors.mns import MNSError

#: The ``x-mns-version`` of the JSON message API (``alibabacloud-smqproxy20260409``).
JSON_VERSION: Final = "2026-04-09"
JSON_CONTENT_TYPE: Final = "application/json;charset=utf-8"

JsonObject = dict[str, Any]


def parse_object(body: bytes) -> JsonObject:
    """The body as a JSON object; malformed JSON, or JSON that is not an object, is refused."""
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MNSError("InvalidArgument", "The JSON you provided was not well-formed.") from exc
    if not isinstance(document, dict):
        raise MNSError("InvalidArgument", "The request body should be a JSON object.")
    return document


def _wrong_type(name: str, kind: str) -> MNSError:
    return MNSError("InvalidArgument", f"The value of {name} should be {kind}.")


def string_field(document: JsonObject, name: str) -> str | None:
    value = document.get(name)
    if value is None or isinstance(value, str):
        return value
    raise _wrong_type(name, "a string")


def integer_field(document: JsonObject, name: str) -> int | None:
    """An integer (JSON's ``true`` is not one, though Python's ``bool`` is an ``int``)."""
    value = document.get(name)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise _wrong_type(name, "an integer")


def object_field(document: JsonObject, name: str) -> JsonObject:
    """An object; absent is an empty one."""
    value = document.get(name)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise _wrong_type(name, "an object")


def list_field(document: JsonObject, name: str) -> list[Any]:
    """A list; absent is an empty one."""
    value = document.get(name)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise _wrong_type(name, "an array")


def render(document: JsonObject) -> bytes:
    """The document in UTF-8. Stored text is always valid (gateway.protocol.text), but an error
    may quote what a client sent, a lone surrogate included: that is written as JSON's
    ``\\ud800`` escape, which UTF-8 has no form for and every JSON reader accepts."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, separators=(",", ":")).encode("ascii")
