"""Values the store takes and front ends build, with no IO: a resource's tags, their limit, and
a TenantRateLimitPolicy. Exported by the store package (``gateway.store``), so front ends
name them without importing a domain module of the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

Tags = Sequence[tuple[str, str]]
#: At most this many tags on one resource, and in one TagResources call (the service's 20).
MAX_TAGS: Final = 20


@dataclass(frozen=True, slots=True)
class RateLimitPolicy:
    """TenantRateLimitPolicy: ``max_per_second`` ``None`` when none was given."""

    enabled: bool
    max_per_second: int | None = None
