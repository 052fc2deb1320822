"""Event rules (the control plane's CreateEventRule, DeleteEventRule, GetEventRule,
ListEventRules).

The service turns object-storage (OSS) events into messages by these rules. The gateway keeps
and lists them so that tools managing them (the Terraform provider's
``alicloud_message_service_event_rule``) work against it, but it receives no object-storage
events and so never delivers anything by them
(docs/control-plane.md#account-attributes-and-event-rules). A rule is kept as the control plane
checked it (:func:`gateway.api.control.event_rules.parse_rule`), as GetEventRule returns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.errors.control import ControlError
from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.store.control import EVENT_RULES_SETTING

Rule = dict[str, Any]


def _key(product: str, name: str) -> str:
    return f"{product}:{name}"


def _call(action: str, name: str, caller: Caller) -> Call:
    return Call(action, Field.TOPIC_NAME, name, caller)


def create_event_rule(ops: Operations, caller: Caller, product: str, rule: Rule) -> str:
    """The rule's name. The same rule again (a retried call) is accepted; another under that
    name is ``EventRuleAlreadyExist``."""
    key = _key(product, rule["RuleName"])

    def add(rules: dict[str, Any]) -> dict[str, Any]:
        if key in rules and rules[key] != rule:
            raise ControlError("EventRuleAlreadyExist")
        return {**rules, key: rule}

    def work(call: Call) -> str:
        ops.store.control.change_document(EVENT_RULES_SETTING, add)
        return str(rule["RuleName"])

    return ops.hooks.run(_call("CreateEventRule", rule["RuleName"], caller), work)


def delete_event_rule(ops: Operations, caller: Caller, product: str, name: str) -> None:
    """Deleting a rule that is not there is no error."""
    key = _key(product, name)

    def work(call: Call) -> None:
        ops.store.control.change_document(
            EVENT_RULES_SETTING, lambda rules: {k: v for k, v in rules.items() if k != key}
        )

    ops.hooks.run(_call("DeleteEventRule", name, caller), work)


def get_event_rule(ops: Operations, caller: Caller, product: str, name: str) -> Rule:
    def work(call: Call) -> Rule:
        rule = ops.store.control.document(EVENT_RULES_SETTING).get(_key(product, name))
        if rule is None:
            raise ControlError("EventRuleNotExist")
        return rule

    return ops.hooks.run(_call("GetEventRule", name, caller), work)


@dataclass(frozen=True)
class RulePage:
    rules: list[Rule]
    total: int


def list_event_rules(
    ops: Operations, caller: Caller, product: str, prefix: str, offset: int, size: int
) -> RulePage:
    """The product's rules whose name starts with ``prefix``, by name, ``size`` from
    ``offset``, and how many match in all."""

    def work(call: Call) -> RulePage:
        rules = ops.store.control.document(EVENT_RULES_SETTING)
        matching = [
            rule
            for key, rule in sorted(rules.items())
            if key.startswith(f"{product}:") and rule["RuleName"].startswith(prefix)
        ]
        return RulePage(matching[offset : offset + size], len(matching))

    return ops.hooks.run(_call("ListEventRules", prefix, caller), work)
