"""A request exactly as it arrived: what both signature checks (V2 and V4) read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IncomingRequest:
    """A request exactly as it arrived, before any decoding.

    Header names are lowercased once, on construction: MNS compares them case-insensitively and
    signs the ``x-mns-*`` ones lowercased anyway.
    """

    method: str
    raw_uri: str
    headers: Mapping[str, str]
    body: bytes

    @classmethod
    def from_pairs(
        cls, method: str, raw_uri: str, pairs: Iterable[tuple[str, str]], body: bytes
    ) -> IncomingRequest:
        return cls(method, raw_uri, {name.lower(): value for name, value in pairs}, body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name)
