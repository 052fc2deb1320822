"""GetAccountAttributes and SetAccountAttributes of the control plane: the account's log
delivery settings (LogEnabled, ProjectName, LogStoreName, MessageTraceEnabled), kept and returned
for every replica. The gateway ships no logs to a log service: its operation logs are the
``LoggingEnabled`` ones (docs/control-plane.md#account-attributes-and-event-rules)."""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params
from gateway.errors.control import invalid
from gateway.store.control import ACCOUNT_SETTING

DEFAULTS: Final[dict[str, Any]] = {
    "LogEnabled": False,
    "ProjectName": "",
    "LogStoreName": "",
    "MessageTraceEnabled": False,
}
MAX_NAME: Final = 128


def get_account_attributes(params: Params, ctx: ControlContext) -> Any:
    return {**DEFAULTS, **ctx.store.control.document(ACCOUNT_SETTING)}


def set_account_attributes(params: Params, ctx: ControlContext) -> Any:
    changes: dict[str, Any] = {}
    for name in ("LogEnabled", "MessageTraceEnabled"):
        value = params.boolean(name)
        if value is not None:
            changes[name] = value
    for name in ("ProjectName", "LogStoreName"):
        text = params.optional(name)
        if text is not None:
            if len(text) > MAX_NAME:
                raise invalid(name, f"at most {MAX_NAME} characters.")
            changes[name] = text
    ctx.store.control.change_document(ACCOUNT_SETTING, lambda current: {**current, **changes})
    return None


OPERATIONS: Final[dict[str, Operation]] = {
    "GetAccountAttributes": get_account_attributes,
    "SetAccountAttributes": set_account_attributes,
}
