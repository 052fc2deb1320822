"""What an operation of the control plane is handed, and what it is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.api.control.params import Params
    from gateway.config.settings import Settings
    from gateway.operations import Caller, Operations


@dataclass(frozen=True, slots=True)
class ControlContext:
    """The operation layer (:mod:`gateway.operations`) and who calls it, for one call."""

    operations: Operations
    caller: Caller

    @property
    def settings(self) -> Settings:
        return self.operations.settings


#: An operation: its parameters and context in, its answer's ``Data`` out (JSON-able), or a
#: ``ControlError``/``MNSError`` raised.
Operation = Callable[["Params", ControlContext], Any]
