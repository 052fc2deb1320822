"""GetAccountAttributes and SetAccountAttributes of the control plane: the account's log
delivery settings (LogEnabled, ProjectName, LogStoreName, MessageTraceEnabled), kept and returned
for every replica. The gateway ships no logs to a log service: its operation logs are the
``LoggingEnabled`` ones (docs/control-plane.md#account-attributes-and-event-rules)."""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params
from gateway.operations import account as operations
from gateway.operations.account import AccountChanges


def get_account_attributes(params: Params, ctx: ControlContext) -> Any:
    found = operations.get_account_attributes(ctx.operations, ctx.caller)
    return {
        "LogEnabled": found.log_enabled,
        "ProjectName": found.project_name,
        "LogStoreName": found.log_store_name,
        "MessageTraceEnabled": found.message_trace_enabled,
    }


def set_account_attributes(params: Params, ctx: ControlContext) -> Any:
    changes = AccountChanges(
        log_enabled=params.boolean("LogEnabled"),
        project_name=params.optional("ProjectName"),
        log_store_name=params.optional("LogStoreName"),
        message_trace_enabled=params.boolean("MessageTraceEnabled"),
    )
    operations.set_account_attributes(ctx.operations, ctx.caller, changes)
    return None


OPERATIONS: Final[dict[str, Operation]] = {
    "GetAccountAttributes": get_account_attributes,
    "SetAccountAttributes": set_account_attributes,
}
