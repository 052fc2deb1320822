"""What issue 47's newcomer met on the command line, through the real ``mns-gateway`` script:
``subscriptions health nosuch`` said all was well; missing arguments exited 1 where the README
promises 2; ``--help`` did not name ``health`` and ``circuit``; there was no ``subscriptions
list`` nor ``topics``; ``queues show`` and ``queues delete`` worded one error two ways; a second
replay said "with force" for the flag ``--force``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from gateway.delivery.records import Attempt, Settlement
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from gateway.topics.records import Subscription, TopicMessage
from tests.gateway.cli.test_cli_first_day import run
from tests.support.clock import Clock


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    """A data dir with topic orders (subscriptions billing and audit), topic quiet, and a dead
    letter replayed once."""
    data_dir = tmp_path_factory.mktemp("listings") / "data"
    store = compose_store(SQLiteDatabase(data_dir / "gateway.sqlite3"), clock=Clock())
    store.topics.create_topic("orders", 65536, True)
    store.topics.create_topic("quiet", 65536, False)
    store.topics.subscribe(Subscription("orders", "billing", "http://127.0.0.1:9/billing"))
    store.topics.subscribe(
        Subscription("orders", "audit", "http://127.0.0.1:9/audit", filter_tag="important")
    )
    store.topics.publish(TopicMessage("M1", "orders", "b", "X", store.now_ms()))
    jobs = store.deliveries.claim("t", 60, 10, frozenset())
    attempt = Attempt(1, store.now_ms(), "http_error", 503)
    store.deliveries.settle("t", [Settlement(j, attempt, dead_reason="retries") for j in jobs])
    yield str(data_dir), store
    store.close()


def _run(data: tuple[str, Store], *args: str) -> subprocess.CompletedProcess[str]:
    return run(*args, "--data-dir", data[0])


def _one_line(done: subprocess.CompletedProcess[str], status: int, text: str) -> None:
    assert done.returncode == status, (done.returncode, done.stderr)
    assert text in done.stderr.splitlines()[-1], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("subscriptions", "health", "nosuch"), "subscriptions: topic nosuch does not exist"),
        (("subscriptions", "health", "nosuch", "s"), "subscriptions: topic nosuch does not exist"),
        (
            ("subscriptions", "health", "orders", "nosuch"),
            "subscriptions: subscription orders/nosuch does not exist",
        ),
        (("subscriptions", "show", "orders", "x"), "subscription orders/x does not exist"),
        (
            ("subscriptions", "set", "orders", "x", "--dlq-enabled", "false"),
            "subscription orders/x does not exist",
        ),
        (("subscriptions", "list", "nosuch"), "subscriptions: topic nosuch does not exist"),
        (("topics", "show", "nosuch"), "mns-gateway topics: topic nosuch does not exist"),
        (("queues", "show", "nosuch"), "mns-gateway queues: queue nosuch does not exist"),
        (("queues", "delete", "nosuch"), "mns-gateway queues: queue nosuch does not exist"),
        (("queues", "set", "nosuch", "--dlq-enabled", "false"), "queue nosuch does not exist"),
    ],
)
def test_what_is_not_there_is_one_line_and_status_1(
    data: tuple[str, Store], args: tuple[str, ...], line: str
) -> None:
    done = _run(data, *args)
    _one_line(done, 1, line)
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("subscriptions", "show"), "show needs a topic and a subscription"),
        (("subscriptions", "set", "orders"), "set needs a topic and a subscription"),
        (("subscriptions", "list"), "list needs a topic"),
        (
            ("subscriptions", "circuit", "orders", "billing"),
            "circuit needs a topic, a subscription and --override",
        ),
        (("topics", "show"), "show needs a topic name"),
        (("queues", "show"), "show needs a queue name"),
    ],
)
def test_a_missing_argument_is_a_usage_error(
    data: tuple[str, Store], args: tuple[str, ...], line: str
) -> None:
    done = _run(data, *args)
    _one_line(done, 2, line)
    assert done.stderr.startswith("usage: mns-gateway ")


def test_help_names_every_command_and_action() -> None:
    done = run("--help")
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    for group in ("topics", "subscriptions", "queues", "dead-letters", "credentials"):
        assert f" {group} " in help_text, group
    subscriptions = help_text.split(" subscriptions ", 1)[1].split(" report ", 1)[0]
    for action in ("list", "show", "set", "health", "circuit"):
        assert action in subscriptions, action
    topics = help_text.split(" topics ", 1)[1].split(" subscriptions ", 1)[0]
    assert "list" in topics and "show" in topics
    assert "issue" in help_text.split(" credentials ", 1)[1]


def test_subscriptions_list(data: tuple[str, Store]) -> None:
    done = _run(data, "subscriptions", "list", "orders")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "audit  http://127.0.0.1:9/audit  BACKOFF_RETRY  XML  tag important",
        "billing  http://127.0.0.1:9/billing  BACKOFF_RETRY  XML",
    ]
    listed = json.loads(_run(data, "subscriptions", "list", "orders", "--json").stdout)
    assert [s["SubscriptionName"] for s in listed["Subscriptions"]] == ["audit", "billing"]
    assert listed["Subscriptions"][0]["FilterTag"] == "important"
    assert _run(data, "subscriptions", "list", "quiet").stdout == "no subscriptions\n"


def test_topics_list_and_show(data: tuple[str, Store]) -> None:
    lines = _run(data, "topics", "list").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["orders", "quiet"]
    assert "created " in lines[0] and lines[0].endswith("Z  logging on")
    assert _run(data, "topics", "list", "qu").stdout.split()[0] == "quiet"
    shown = _run(data, "topics", "show", "orders")
    assert shown.returncode == 0, shown.stderr
    assert "TopicName: orders" in shown.stdout and "Subscriptions: 2" in shown.stdout
    assert "billing  http://127.0.0.1:9/billing" in shown.stdout
    document = json.loads(_run(data, "topics", "show", "orders", "--json").stdout)
    assert document["LoggingEnabled"] is True and len(document["Subscriptions"]) == 2
    listing = json.loads(_run(data, "topics", "list", "--json").stdout)
    assert [t["TopicName"] for t in listing["Topics"]] == ["orders", "quiet"]


def test_a_second_replay_names_the_flag(data: tuple[str, Store]) -> None:
    letter = data[1].deliveries.list_dead_letters().items[0].id
    first = _run(data, "dead-letters", "replay", letter)
    assert first.returncode == 0, first.stderr
    again = _run(data, "dead-letters", "replay", letter)
    _one_line(again, 1, "replay it again with --force to start another delivery")
