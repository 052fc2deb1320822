"""Listings (ListQueue, ListTopic, ListSubscriptionByTopic, dead letters): one page at a time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing and the marker of the next, ``None`` on the last page."""

    items: Sequence[T]
    next_marker: str | None


@dataclass(frozen=True, slots=True)
class PageQuery:
    """What a listing by marker asks for (the XML API's ``x-mns-prefix``, ``x-mns-marker`` and
    ``x-mns-ret-number``, the console's filter): names starting with ``prefix``, from
    ``marker`` on, at most ``limit``."""

    prefix: str = ""
    marker: str = ""
    limit: int = 1000
