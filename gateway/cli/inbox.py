"""``mns-gateway inbox sms|mail``: read (or ``--clear``) the inbox of the gateway whose data dir
or database this is, with the filters of ``GET /dev/inbox/...``. People get one block per entry,
times in ISO 8601 UTC; ``--json`` prints what the HTTP endpoint answers."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.cli.common import (
    Commands,
    emit,
    existing_settings,
    iso_utc,
    on_store,
    with_data_dir,
    with_json,
)
from gateway.config.settings import Settings
from gateway.errors import ExitCode
from gateway.inbox.records import InboxKind, query_from

if TYPE_CHECKING:
    from gateway.store import Store

#: What each kind shows after its common lines, in order.
_DETAILS: dict[InboxKind, tuple[str, ...]] = {
    InboxKind.SMS: ("PhoneNumber", "SignName", "TemplateCode", "TemplateParam"),
    InboxKind.MAIL: ("From", "To", "Subject", "IsHtml", "ReplyTo", "Body"),
}


def describe(kind: InboxKind, document: Mapping[str, Any]) -> str:
    messages = document["Messages"]
    if not messages:
        return f"the {kind.value} inbox is empty"
    blocks = []
    for entry in messages:
        lines = [
            f"{iso_utc(entry['Time'])}  {entry['MessageId']}",
            f"  topic {entry['TopicName']}, subscription {entry['SubscriptionName']}",
        ]
        for name in _DETAILS[kind]:
            value = entry.get(name)
            if value is None:  # a mail without ReplyTo has none: no "ReplyTo: None" line
                continue
            text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value
            lines.append(f"  {name}: {text}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _entries(args: argparse.Namespace, store: Store, settings: Settings) -> dict[str, Any]:
    kind = InboxKind(args.kind)
    if args.clear:
        return {"Deleted": store.inbox.clear(kind)}
    query = query_from(
        {
            "recipient": args.recipient or "",
            "topic": args.topic or "",
            "since": args.since or "",
            "until": args.until or "",
            "limit": str(args.limit),
        }
    )
    return {"Messages": [dict(entry.document) for entry in store.inbox.entries(kind, query)]}


def run_inbox(args: argparse.Namespace) -> int:
    document = on_store(existing_settings, args, partial(_entries, args))
    if args.clear:
        emit(args, document, lambda d: f"deleted {d['Deleted']} entries")
    else:
        emit(args, document, partial(describe, InboxKind(args.kind)))
    return ExitCode.OK


def add_command(commands: Commands) -> None:
    inbox = commands.add_parser(
        "inbox", help="SMS and mail kept instead of sent (MNS_GATEWAY_INBOX=1)"
    )
    inbox.add_argument(
        "kind", choices=[kind.value for kind in InboxKind], help="which inbox: sms or mail"
    )
    inbox.add_argument("--recipient", help="only to this phone number or address")
    inbox.add_argument("--topic", help="only from this topic")
    inbox.add_argument("--since", help="only from this time on (ISO 8601 or epoch ms)")
    inbox.add_argument("--until", help="only up to this time (ISO 8601 or epoch ms)")
    inbox.add_argument("--limit", type=int, default=1000, help="at most this many (1-1000)")
    inbox.add_argument("--clear", action="store_true", help="empty this inbox instead")
    with_json(inbox)
    with_data_dir(inbox)
    inbox.set_defaults(handler=run_inbox)
