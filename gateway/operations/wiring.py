"""The operation layer's collaborators, typed: what every operation function is handed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.operations.hooks import Hook, Hooks
from gateway.store.receive_limits import ReceiveLimits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gateway.config.settings import Settings
    from gateway.store.base import Store


@dataclass(frozen=True)
class Operations:
    """The store, the settings and the hooks the operations run with; built once per process by
    the composition root (:mod:`gateway.composition`) with :meth:`over`."""

    settings: Settings
    store: Store
    hooks: Hooks
    #: Queues' TenantRateLimitPolicy on receives (set through the control plane).
    receive_limits: ReceiveLimits

    @classmethod
    def over(cls, settings: Settings, store: Store, hooks: Sequence[Hook] = ()) -> Operations:
        return cls(settings, store, Hooks(hooks), ReceiveLimits(store.control))
