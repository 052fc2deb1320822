"""Reading an operation's parameters: pure, no IO.

Values arrive as text; numbers, booleans and names are checked with the same rules as the
2015-06-06 XML API (:mod:`gateway.queues.records`, :mod:`gateway.protocol.names`), so both APIs
accept and refuse the same values. JSON parameters (``DlqPolicy``, ``TenantRateLimitPolicy``)
are objects; lists are numbered from 1 (``Tag.1.Key``, ``ResourceId.1``), as both SDKs and the
Terraform provider flatten them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gateway.errors.control import invalid, missing
from gateway.protocol.integers import integer_in_range, parse_integer
from gateway.protocol.names import validate_name
from gateway.protocol.text import is_storable
from gateway.store import MAX_TAGS

MAX_TAG_KEY: Final = 128
MAX_TAG_VALUE: Final = 128
#: At most this many ResourceId.N or TagKey.N in one call.
MAX_ITEMS: Final = 50
#: ListQueue, ListTopic, ListSubscriptionByTopic, ListEventRules: the service takes any integer
#: and uses the nearest value in range (its SDK's documentation of PageNum and PageSize); 20 per
#: page unless given.
MIN_PAGE_SIZE: Final = 10
MAX_PAGE_SIZE: Final = 50
DEFAULT_PAGE_SIZE: Final = 20
MAX_PAGE_NUMBER: Final = 100_000_000


@dataclass(frozen=True, slots=True)
class Params:
    values: Mapping[str, str]

    def __post_init__(self) -> None:
        # Every value is text some operation may store, filter by or echo: none may carry what
        # XML and PostgreSQL cannot (gateway.protocol.text), whichever operation reads it.
        for name, value in self.values.items():
            if not is_storable(value):
                raise invalid(name, "it contains a character that is not allowed.")

    def optional(self, name: str) -> str | None:
        value = self.values.get(name)
        return None if value is None or value == "" else value

    def required(self, name: str) -> str:
        value = self.optional(name)
        if value is None:
            raise missing(name)
        return value

    def name(self, kind: str, parameter: str) -> str:
        """A queue, topic or subscription name, checked as the XML API checks it."""
        return validate_name(kind, self.required(parameter))

    def integer(self, name: str, low: int, high: int) -> int | None:
        text = self.optional(name)
        if text is None:
            return None
        number = integer_in_range(text, low, high)
        if number is None:
            raise invalid(name, f"it should be an integer between {low} and {high}.")
        return number

    def boolean(self, name: str) -> bool | None:
        text = self.optional(name)
        if text is None:
            return None
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise invalid(name, "it should be true or false.")
        return lowered == "true"

    def json_object(self, name: str) -> dict[str, Any] | None:
        value = self.json_value(name)
        if value is not None and not isinstance(value, dict):
            raise invalid(name, "it should be a JSON object.")
        return value

    def json_value(self, name: str) -> Any:
        """The parameter's JSON, ``None`` when absent; malformed JSON is InvalidParameter."""
        text = self.optional(name)
        if text is None:
            return None
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise invalid(name, "it is not valid JSON.") from None

    def numbered(self, name: str) -> list[str]:
        """``name.1``, ``name.2``, ...: the values in order, stopping at the first gap."""
        items = []
        for index in range(1, MAX_ITEMS + 2):
            value = self.optional(f"{name}.{index}")
            if value is None:
                break
            items.append(value)
        if len(items) > MAX_ITEMS:
            raise invalid(name, f"at most {MAX_ITEMS} items.")
        return items

    def tags(self, *, values_required: bool = True) -> list[tuple[str, str]]:
        """``Tag.N.Key`` and ``Tag.N.Value``; distinct keys of 1-128 characters, values of at
        most 128 (without ``values_required``, a missing value matches any: list filters)."""
        tags: dict[str, str] = {}
        for index in range(1, MAX_TAGS + 2):
            key = self.optional(f"Tag.{index}.Key")
            if key is None:
                break
            value = self.values.get(f"Tag.{index}.Value")
            if value is None and values_required:
                raise missing(f"Tag.{index}.Value")
            if len(key) > MAX_TAG_KEY or len(value or "") > MAX_TAG_VALUE or key in tags:
                why = "a tag key is 1-128 characters, unique; a value 0-128."
                raise invalid(f"Tag.{index}", why)
            tags[key] = value or ""
        if len(tags) > MAX_TAGS:
            raise invalid("Tag", f"at most {MAX_TAGS} tags.")
        return list(tags.items())

    def clamped(self, name: str, low: int, high: int) -> int | None:
        """An integer, negative ones too, moved into ``[low, high]``; InvalidParameter for
        anything that is not an integer."""
        text = self.optional(name)
        if text is None:
            return None
        stripped = text.strip()
        negative = stripped.startswith("-")
        number = parse_integer(stripped[1:] if negative else stripped)
        if number is None:
            raise invalid(name, "it should be an integer.")
        return min(max(-number if negative else number, low), high)

    def page(self) -> tuple[int, int]:
        """PageNum (from 1) and PageSize, each moved into the service's range."""
        number = self.clamped("PageNum", 1, MAX_PAGE_NUMBER)
        size = self.clamped("PageSize", MIN_PAGE_SIZE, MAX_PAGE_SIZE)
        return number or 1, size or DEFAULT_PAGE_SIZE


def page_data(items: list[dict[str, Any]], total: int, number: int, size: int) -> dict[str, Any]:
    """A list's ``Data``: ``PageData`` and its place among all pages."""
    return {
        "PageData": items,
        "PageNum": number,
        "PageSize": size,
        "Pages": (total + size - 1) // size,
        "Size": len(items),
        "Total": total,
    }
