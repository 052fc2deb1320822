"""The account's log delivery settings (the control plane's GetAccountAttributes and
SetAccountAttributes: LogEnabled, ProjectName, LogStoreName, MessageTraceEnabled), kept and
returned for every replica. The gateway ships no logs to a log service: its operation logs are
the ``LoggingEnabled`` ones (docs/control-plane.md#account-attributes-and-event-rules)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

from gateway.errors.control import invalid
from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.store.control import ACCOUNT_SETTING

#: The longest ProjectName and LogStoreName kept.
MAX_NAME: Final = 128
#: Each attribute's key in the stored document (the service's names, as it has always been).
_KEYS: Final = {
    "log_enabled": "LogEnabled",
    "project_name": "ProjectName",
    "log_store_name": "LogStoreName",
    "message_trace_enabled": "MessageTraceEnabled",
}


@dataclass(frozen=True)
class AccountAttributes:
    log_enabled: bool = False
    project_name: str = ""
    log_store_name: str = ""
    message_trace_enabled: bool = False


@dataclass(frozen=True)
class AccountChanges:
    """What a SetAccountAttributes changes; ``None``: left as it is."""

    log_enabled: bool | None = None
    project_name: str | None = None
    log_store_name: str | None = None
    message_trace_enabled: bool | None = None


def get_account_attributes(ops: Operations, caller: Caller) -> AccountAttributes:
    def work(call: Call) -> AccountAttributes:
        stored = ops.store.control.document(ACCOUNT_SETTING)
        kept = {field: stored[key] for field, key in _KEYS.items() if key in stored}
        return AccountAttributes(**kept)

    return ops.hooks.run(Call("GetAccountAttributes", Field.QUEUE_NAME, "", caller), work)


def set_account_attributes(ops: Operations, caller: Caller, changes: AccountChanges) -> None:
    """The attributes given changed, the others kept, in one transaction."""
    for field in ("project_name", "log_store_name"):
        text = getattr(changes, field)
        if text is not None and len(text) > MAX_NAME:
            raise invalid(_KEYS[field], f"at most {MAX_NAME} characters.")
    changed: dict[str, Any] = {
        _KEYS[field]: value for field, value in asdict(changes).items() if value is not None
    }

    def work(call: Call) -> None:
        ops.store.control.change_document(ACCOUNT_SETTING, lambda current: {**current, **changed})

    ops.hooks.run(Call("SetAccountAttributes", Field.QUEUE_NAME, "", caller), work)
