"""The console's pure parts: the hour of figures and its chart, tokens,
forms as the API's elements, and what redrive reads from a dead-lettered message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jinja2 import DictLoader, Environment, FileSystemLoader

from gateway.api.console import forms, templates_in_memory
from gateway.api.console.figures import MINUTES, chart, last_hour
from gateway.api.console.security import csrf_matches, key_may_sign_in
from gateway.errors.mns import MNSError
from gateway.queues.dlq_policy import dead_lettered_properties, queue_arn
from gateway.store import PUSH_FAILED, PUSH_OK
from gateway.store.redrive import original_properties, source_queue
from tests.gateway.api.console.conftest import Console


def test_the_hour_has_sixty_minutes_and_its_rate() -> None:
    counts = {(100, PUSH_OK): 3, (100, PUSH_FAILED): 1, (159, PUSH_OK): 4, (40, PUSH_OK): 99}
    hour = last_hour(counts, 159)
    assert len(hour.minutes) == MINUTES and hour.minutes[0].minute == 100
    assert (hour.succeeded, hour.failed, hour.success_rate) == (7, 1, 7 / 8)
    assert last_hour({}, 5).success_rate is None


def test_the_chart_stacks_failures_on_successes() -> None:
    svg = str(chart(last_hour({(10, PUSH_OK): 6, (10, PUSH_FAILED): 4}, 10)))
    ok = re.search(r'class="ok" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', svg)
    failed = re.search(
        r'class="failed" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', svg
    )
    assert ok and failed
    # The failed bar ends where the successful one starts: neither hides the other.
    assert float(failed.group(1)) + float(failed.group(2)) == pytest.approx(
        float(ok.group(1)), abs=0.1
    )
    assert "style=" not in svg and "<title>4 failed</title>" in svg


def test_tokens_and_key_pairs() -> None:
    assert csrf_matches("t", "t") and not csrf_matches("t", "u")
    assert not csrf_matches(None, None) and not csrf_matches("", "")
    keys = {"id": "secret", "admin": "s2"}
    assert key_may_sign_in("id", "secret", keys, ())
    assert not key_may_sign_in("id", "secret", keys, ("admin",))
    assert not key_may_sign_in("id", "Secret", keys, ())


def test_a_form_is_the_element_the_api_parses() -> None:
    message = forms.queue_message({"body": "  a <b> ", "priority": " 3 ", "delay_seconds": ""})
    assert (message.body, message.priority, message.delay_seconds) == ("  a <b> ", 3, None)
    with pytest.raises(MNSError) as refused:
        forms.queue_message({"body": "\x00"})
    assert refused.value.code == "MalformedXML"


def test_bodies_decode_from_base64_or_not_at_all() -> None:
    assert forms.decoded_body("aGk=") == "hi"
    assert forms.decoded_body("/w==") == "\ufffd"
    assert forms.decoded_body("not base64!") is None
    assert forms.decoded_body("é") is None


def test_redrive_reads_the_source_and_restores_the_properties() -> None:
    original = {
        "UserProperties": [{"Name": "k", "Value": "v", "Type": "STRING"}],
        "MessageGroupId": "g",
    }
    marked = dead_lettered_properties(
        original, kind="QUEUE", source_arn=queue_arn("r", "1", "jobs"), origin_message_id="M"
    )
    assert source_queue(marked, queue_arn("r", "1", "")) == "jobs"
    assert source_queue(marked, queue_arn("r", "2", "")) is None  # another account's queue
    assert original_properties(marked) == original
    from_topic = dead_lettered_properties(
        {}, kind="TOPIC", source_arn="acs:mns:r:1:/topics/t/subscriptions/s", origin_message_id="M"
    )
    assert source_queue(from_topic, queue_arn("r", "1", "")) is None


def test_templates_are_read_at_start_and_kept(tmp_path: Path) -> None:
    """Issue 47: reinstalling into a running gateway's virtualenv broke its console, whose
    templates were read from files on first use; they are read at start now."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "base.html").write_text("<p>{% block body %}{% endblock %}</p>")
    (folder / "page.html").write_text(
        '{% extends "base.html" %}{% block body %}{{ x }}{% endblock %}'
    )
    environment = Environment(loader=FileSystemLoader(folder), autoescape=True)
    environment.loader = templates_in_memory(environment)
    for path in folder.iterdir():  # the package's files replaced or gone
        path.unlink()
    assert environment.get_template("page.html").render(x="<b>") == "<p>&lt;b&gt;</p>"


def test_the_console_app_serves_every_template_from_memory(console: Console) -> None:
    loader = console.app.jinja_env.loader
    assert isinstance(loader, DictLoader)
    shipped = Path(templates_in_memory.__code__.co_filename).parent / "templates"
    assert {path.name for path in shipped.glob("*.html")} <= set(loader.mapping)
