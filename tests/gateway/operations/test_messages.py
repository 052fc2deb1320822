"""The message operations and the hooks around them, over the stub store: no HTTP, no Flask.

Each test states one rule of an operation, or one promise of the hooks (their order, what they
see), which every front end then gets by calling the operation.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors import StoreUnavailableError, TryAgainError
from gateway.errors.mns import MNSError
from gateway.observability.operations import Action, Field
from gateway.operations import Call, Caller, Hook, Operations, messages, publishing
from gateway.operations.oplog import OperationLogHook
from gateway.operations.outages import OutageHook
from gateway.protocol.properties import trace_context
from gateway.queues.records import NewMessage, QueueAttributes
from gateway.store.base import Store
from gateway.topics.records import PublishDraft
from tests.support.stub import memory_store  # noqa: F401 (fixture)


class Recording(Hook):
    """Every moment, in order, as ``(hook name, moment, action)``."""

    def __init__(self, name: str, seen: list[tuple[str, str, str]]) -> None:
        self.name, self.seen = name, seen

    def before(self, call: Call) -> None:
        self.seen.append((self.name, "before", str(call.action)))

    def drafted(self, call: Call, drafts: list) -> list:
        self.seen.append((self.name, "drafted", str(call.action)))
        return drafts

    def after(self, call: Call, result: object, error: BaseException | None) -> None:
        outcome = type(error).__name__ if error else type(result).__name__
        self.seen.append((self.name, f"after {outcome}", str(call.action)))


class Log:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def write(self, record: dict) -> None:
        self.records.append(dict(record))

    def close(self) -> None:
        return None


def draft(body: str = "hello") -> NewMessage:
    return NewMessage(body=body)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    memory_store.queues.create_queue("q", QueueAttributes(logging_enabled=True))
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def with_hooks(ops: Operations, *hooks: Hook) -> Operations:
    return Operations.over(ops.settings, ops.store, hooks)


def test_hooks_run_in_their_order_around_a_send(ops: Operations) -> None:
    seen: list[tuple[str, str, str]] = []
    ops = with_hooks(ops, Recording("first", seen), Recording("second", seen))
    messages.send(ops, Caller(), "q", draft())
    assert seen == [
        ("first", "before", "SendMessage"),
        ("second", "before", "SendMessage"),
        ("first", "drafted", "SendMessage"),
        ("second", "drafted", "SendMessage"),
        ("first", "after Sent", "SendMessage"),
        ("second", "after Sent", "SendMessage"),
    ]


def test_a_failed_operation_reaches_every_hook_with_its_error(ops: Operations) -> None:
    seen: list[tuple[str, str, str]] = []
    ops = with_hooks(ops, Recording("only", seen))
    with pytest.raises(MNSError, match="QueueNotExist"):
        messages.send(ops, Caller(), "nosuch", draft())
    assert seen[-1] == ("only", "after MNSError", "SendMessage")


class Stamping(Hook):
    def drafted(self, call: Call, drafts: list) -> list:
        from dataclasses import replace

        from gateway.protocol.properties import with_trace_context

        carrier = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
        if isinstance(drafts[0], PublishDraft):
            return [
                replace(d, attributes=with_trace_context(d.attributes, carrier)) for d in drafts
            ]
        return [replace(d, properties=with_trace_context(d.properties, carrier)) for d in drafts]


def test_what_a_hook_adds_to_a_draft_is_stored(ops: Operations) -> None:
    ops = with_hooks(ops, Stamping())
    messages.send(ops, Caller(), "q", draft())
    (received,) = messages.receive(ops, Caller(), "q", None, 0).messages
    assert trace_context(received.properties)["traceparent"].startswith("00-aaaa")


def test_a_publish_is_built_once_and_numbered_by_the_store(ops: Operations) -> None:
    ops.store.topics.create_topic("t", 65536, logging_enabled=False)
    ops = with_hooks(ops, Stamping())
    message = publishing.publish(ops, Caller(), PublishDraft("t", "body", "tag"))
    assert message.id and message.publish_time_ms == ops.store.now_ms()
    assert trace_context(message.attributes)["traceparent"].startswith("00-aaaa")
    assert message.body_md5 == "841A2D689AD86BD1611447453C22C6FC"


def test_a_batch_send_stores_what_parsed_and_keeps_each_entry_in_place(ops: Operations) -> None:
    bad = MNSError("InvalidArgument", "no body")
    result = messages.send_batch(ops, Caller(), "q", [draft("a"), bad, draft("c")])
    assert [type(r).__name__ for r in result.results] == ["SentMessage", "MNSError", "SentMessage"]
    assert result.failed == [bad]


def test_batch_deletes_take_one_to_sixteen_handles(ops: Operations) -> None:
    for handles in ([], ["h"] * 17):
        with pytest.raises(MNSError, match="InvalidArgument"):
            messages.delete_batch(ops, Caller(), "q", handles)


def test_a_delete_needs_a_receipt_handle(ops: Operations) -> None:
    with pytest.raises(MNSError, match="MissingReceiptHandle"):
        messages.delete(ops, Caller(), "q", "")


def test_the_operation_log_gets_each_operations_records_once(ops: Operations) -> None:
    log = Log()
    ops = with_hooks(ops, OperationLogHook(log, "123"))
    caller = Caller(request_id="R1", remote_address="10.0.0.1")
    sent = messages.send(ops, caller, "q", draft())
    taken = messages.receive(ops, caller, "q", 1, 0).messages
    messages.delete_batch(ops, caller, "q", [taken[0].receipt_handle or ""])
    actions = [(r["Action"], r["MessageId"]) for r in log.records]
    assert actions == [
        (Action.SEND_MESSAGE, sent.message_id),
        (Action.BATCH_RECEIVE_MESSAGE, sent.message_id),
        (Action.BATCH_DELETE_MESSAGE, sent.message_id),
    ]
    assert {r[Field.REQUEST_ID.value] for r in log.records} == {"R1"}
    assert {r[Field.QUEUE_NAME.value] for r in log.records} == {"q"}


def test_a_queue_without_logging_writes_no_records(ops: Operations) -> None:
    ops.store.queues.create_queue("quiet", QueueAttributes())
    log = Log()
    messages.send(with_hooks(ops, OperationLogHook(log, "123")), Caller(), "quiet", draft())
    assert log.records == []


class Unavailable:
    """A queue store whose database is down."""

    def peek(self, name: str, count: int) -> object:
        raise StoreUnavailableError("database unavailable")


def test_an_outage_is_counted_once_per_failed_operation(ops: Operations) -> None:
    failed: list[int] = []
    hooks = [OutageHook(lambda: failed.append(1))]
    down = replace(ops.store, queues=Unavailable())  # type: ignore[arg-type]
    with pytest.raises(TryAgainError):
        messages.peek(Operations.over(ops.settings, down, hooks), Caller(), "q", None)
    with pytest.raises(MNSError):  # not an outage: not counted
        messages.send(Operations.over(ops.settings, ops.store, hooks), Caller(), "nosuch", draft())
    assert failed == [1]
