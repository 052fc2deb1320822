"""The console's forms read by the XML API's field parsers, without an XML round trip (issue 48):
a form gives what the API's parser gives for the element an SDK would send, and what XML cannot
carry is refused as the API refuses the document holding it."""

from __future__ import annotations

import pytest

from gateway.api.console import forms
from gateway.errors.mns import MNSError
from gateway.protocol.notify import NotifyStrategy
from gateway.protocol.xml import parse_document
from gateway.queues.dlq_policy import PolicyUpdate
from gateway.queues.wire import changed_queue_attributes, parse_new_message
from gateway.topics.wire import parse_draft, parse_subscription

NS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'


def test_a_message_form_is_what_its_element_parses_to() -> None:
    form = {"body": " a\r\nb\rc ", "priority": " 3 ", "delay_seconds": ""}
    element = parse_document(
        f"<Message {NS}><MessageBody> a\r\nb\rc </MessageBody><Priority>3</Priority>"
        "</Message>".encode(),
        "Message",
    )
    assert forms.queue_message(form) == parse_new_message(element)
    assert forms.queue_message(form).body == " a\nb\nc "  # a parser's line ends


def test_a_publish_form_is_what_its_element_parses_to() -> None:
    element = parse_document(
        f"<Message {NS}><MessageBody>hi</MessageBody><MessageTag>t</MessageTag></Message>".encode(),
        "Message",
    )
    assert forms.topic_message("t", {"body": "hi", "tag": " t "}) == parse_draft("t", element)


def test_an_attributes_form_is_what_its_element_parses_to() -> None:
    form = {"visibility_timeout": "45", "logging_enabled": "true", "dlq_target": "dlq"}
    form |= {"dlq_max_receive_count": "3", "dlq_enabled": "on", "delay_seconds": " "}
    element = parse_document(
        (
            f"<Queue {NS}><VisibilityTimeout>45</VisibilityTimeout>"
            "<LoggingEnabled>true</LoggingEnabled><DlqPolicy>"
            "<DeadLetterTargetQueue>dlq</DeadLetterTargetQueue>"
            "<MaxReceiveCount>3</MaxReceiveCount><Enabled>true</Enabled></DlqPolicy></Queue>"
        ).encode(),
        "Queue",
    )
    changes = forms.queue_attributes(form)
    assert changes == changed_queue_attributes(element)
    assert changes.dead_letter_policy == PolicyUpdate("dlq", 3, True)
    assert forms.queue_attributes({"dlq_max_receive_count": "3"}).dead_letter_policy is None


def test_a_subscribe_form_is_what_its_element_parses_to() -> None:
    form = {"endpoint": " http://127.0.0.1:9/ ", "notify_strategy": "EXPONENTIAL_DECAY_RETRY"}
    element = parse_document(
        (
            f"<Subscription {NS}><Endpoint>http://127.0.0.1:9/</Endpoint>"
            "<NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy></Subscription>"
        ).encode(),
        "Subscription",
    )
    subscription = forms.subscription("t", "s", form)
    assert subscription == parse_subscription("t", "s", element)
    assert subscription.notify_strategy is NotifyStrategy.EXPONENTIAL_DECAY_RETRY


@pytest.mark.parametrize(
    ("make", "form"),
    [
        (forms.queue_message, {"body": "ok", "priority": "3\x01"}),
        (lambda form: forms.topic_message("t", form), {"body": "ok", "tag": "\x07"}),
        (forms.queue_attributes, {"visibility_timeout": "4\x005"}),
        (forms.queue_attributes, {"dlq_target": "d\x0blq"}),
        (lambda form: forms.subscription("t", "s", form), {"endpoint": "http://x/\ufffe"}),
    ],
)
def test_what_xml_cannot_carry_is_malformed_xml_before_any_other_rule(make, form) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MNSError) as refused:
        make(form)
    assert refused.value.code == "MalformedXML"
