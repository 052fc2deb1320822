"""``mns-gateway queues``: list queues, create a typed one, show or set its dead-letter policy,
delete one (docs/queues.md#from-the-command-line)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.cli.common import Commands, does_not_exist, emit, existing_settings, on_operations
from gateway.cli.queue_settings import (
    add_policy_options,
    create_queue,
    describe,
    policy_update,
    queue_document,
    set_queue,
)
from gateway.errors import ExitCode
from gateway.queues.records import QueueType

if TYPE_CHECKING:
    from gateway.operations import Operations

LIST_LIMIT = 1000


def queues(args: argparse.Namespace) -> int:
    document = on_operations(existing_settings, args, lambda ops: run(args, ops))
    text = describe_listing if args.action == "list" else describe
    if args.action == "delete":
        text = lambda d: f"deleted queue {d['QueueName']}"  # noqa: E731 - one line
    emit(args, document, text)
    return ExitCode.OK


def run(args: argparse.Namespace, ops: Operations) -> dict[str, Any]:
    """One ``queues`` action; the document to print."""
    store = ops.store
    if args.action == "list":
        page = store.queues.list_queues(args.name or "", "", LIST_LIMIT)
        return {"Queues": [queue_document(queue) for queue in page.items]}
    if args.action != "create" and not store.queues.queue_exists(args.name):
        raise does_not_exist("queue", args.name)
    if args.action == "delete":
        store.queues.delete_queue(args.name)
        return {"QueueName": args.name}
    update = policy_update(args.dlq_target, args.max_receive_count, args.dlq_enabled)
    if args.action == "create":
        queue = create_queue(ops, args.name, QueueType.parse(args.type), update)
    elif args.action == "set" and update is not None:
        queue = set_queue(ops, args.name, update)
    else:
        queue = store.queues.get_queue(args.name)[0]
    return queue_document(queue)


def describe_listing(document: dict[str, Any]) -> str:
    rows = [
        f"{q['QueueName']}  {q['QueueType']}"
        + (f"  dead letters to {q['DlqPolicy']['DeadLetterTargetQueue']}" if q["DlqPolicy"] else "")
        for q in document["Queues"]
    ]
    return "\n".join(rows) or "no queues"


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "queues", help="list, create and delete queues; show or set a queue's dead-letter policy"
    )
    parser.add_argument(
        "action",
        choices=("list", "create", "set", "show", "delete"),
        help="list (NAME: a prefix), create, set or show a queue's settings, delete a queue",
    )
    parser.add_argument("name", nargs="?", help="the queue (for list: only names starting so)")
    parser.add_argument("--type", default="normal", help="create: normal (default) or fifo")
    parser.add_argument("--max-receive-count", help="receives before a message is dead-lettered")
    add_policy_options(parser)
    named = ("name", "a queue name")
    parser.set_defaults(
        handler=queues, needs={action: named for action in ("create", "set", "show", "delete")}
    )
