"""Event rules: CreateEventRule, DeleteEventRule, GetEventRule, ListEventRules.

The service turns object-storage (OSS) events into messages by these rules. The gateway keeps
and lists them so that tools managing them (the Terraform provider's
``alicloud_message_service_event_rule``) work against it, but it receives no object-storage
events and so never delivers anything by them
(docs/control-plane.md#account-attributes-and-event-rules).
"""

from __future__ import annotations

import re
from typing import Any, Final

from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params, page_data
from gateway.errors.control import invalid
from gateway.operations import event_rules as operations
from gateway.protocol.text import is_storable

PRODUCTS: Final = ("oss",)
_RULE_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_MATCH_FIELDS: Final = ("Name", "Prefix", "Suffix", "MatchState")
#: Bounds of what one rule keeps: lists of at most this many, texts of at most MAX_TEXT.
MAX_MATCH_GROUPS: Final = 100
MAX_TEXT: Final = 1024


def _product(params: Params) -> str:
    product = params.required("ProductName").lower()
    if product not in PRODUCTS:
        raise invalid("ProductName", "only oss is supported.")
    return product


def _rule_name(params: Params) -> str:
    name = params.required("RuleName")
    if not _RULE_NAME.fullmatch(name):
        raise invalid("RuleName", "1-128 letters, digits, - or _, a letter or digit first.")
    return name


def _endpoint(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        _text(value.get(k)) for k in ("EndpointType", "EndpointValue")
    ):
        raise invalid(name, "it should be {EndpointType, EndpointValue}.")
    return {"EndpointType": value["EndpointType"], "EndpointValue": value["EndpointValue"]}


def _match_rules(value: Any) -> list[list[dict[str, str]]]:
    """Groups of rules, each rule's fields text (the SDK's ``EventMatchRule``: Name, Prefix,
    Suffix and MatchState are strings). Only text is kept, so a stored rule is as deep as this
    shape and no deeper: any JSON nested in a field (a thousand levels stored would make every
    later read of the rules fail) is refused here."""
    ok = (
        isinstance(value, list)
        and 0 < len(value) <= MAX_MATCH_GROUPS
        and all(
            isinstance(group, list)
            and len(group) <= MAX_MATCH_GROUPS
            and all(isinstance(rule, dict) for rule in group)
            for group in value
        )
    )
    if not ok:
        raise invalid("MatchRules", "it should be a list of lists of match rules.")
    return [[_match_rule(rule) for rule in group] for group in value]


def _match_rule(rule: dict[str, Any]) -> dict[str, str]:
    kept = {k: rule[k] for k in _MATCH_FIELDS if k in rule}
    if not all(isinstance(v, str) and len(v) <= MAX_TEXT and is_storable(v) for v in kept.values()):
        raise invalid("MatchRules", f"{', '.join(_MATCH_FIELDS)} are text of at most {MAX_TEXT}.")
    return kept


def _text(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_TEXT and is_storable(value)


def parse_rule(params: Params) -> dict[str, Any]:
    """A CreateEventRule call's rule, checked; as GetEventRule returns it."""
    event_types = params.json_value("EventTypes")
    if not isinstance(event_types, list) or not event_types:
        raise invalid("EventTypes", "it should be a non-empty JSON list of event names.")
    if len(event_types) > MAX_MATCH_GROUPS or not all(_text(t) for t in event_types):
        raise invalid("EventTypes", "each event type should be a name.")
    endpoints = params.json_value("Endpoints")
    single = params.json_value("Endpoint")
    if isinstance(endpoints, list) and len(endpoints) > MAX_MATCH_GROUPS:
        raise invalid("Endpoints", f"at most {MAX_MATCH_GROUPS}.")
    targets = [_endpoint(e, "Endpoints") for e in endpoints] if isinstance(endpoints, list) else []
    if single is not None:
        targets.insert(0, _endpoint(single, "Endpoint"))
    if not targets:
        raise invalid("Endpoint", "a rule needs an endpoint.")
    return {
        "RuleName": _rule_name(params),
        "DeliveryMode": params.optional("DeliveryMode") or "BROADCAST",
        "EventTypes": event_types,
        "MatchRules": _match_rules(params.json_value("MatchRules")),
        "Endpoint": targets[0],
        "Subscriptions": targets,
    }


def create_event_rule(params: Params, ctx: ControlContext) -> Any:
    product = _product(params)
    _rule_name(params)
    return operations.create_event_rule(ctx.operations, ctx.caller, product, parse_rule(params))


def delete_event_rule(params: Params, ctx: ControlContext) -> Any:
    product, name = _product(params), _rule_name(params)
    operations.delete_event_rule(ctx.operations, ctx.caller, product, name)
    return None


def get_event_rule(params: Params, ctx: ControlContext) -> Any:
    product, name = _product(params), _rule_name(params)
    return operations.get_event_rule(ctx.operations, ctx.caller, product, name)


def list_event_rules(params: Params, ctx: ControlContext) -> Any:
    product = _product(params)
    prefix = params.optional("RuleName") or ""
    number, size = params.page()
    found = operations.list_event_rules(
        ctx.operations, ctx.caller, product, prefix, (number - 1) * size, size
    )
    # ListEventRules pages by PageNum and PageSize: the service's SDK marks its NextToken and
    # MaxResults deprecated, in the request (ignored here) and in the answer (kept for clients
    # that read them: no token, the page size).
    return {
        **page_data(found.rules, found.total, number, size),
        "NextToken": "",
        "MaxResults": size,
    }


OPERATIONS: Final[dict[str, Operation]] = {
    "CreateEventRule": create_event_rule,
    "DeleteEventRule": delete_event_rule,
    "GetEventRule": get_event_rule,
    "ListEventRules": list_event_rules,
}
