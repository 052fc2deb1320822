"""PublishMessage's JSON (x-mns-version 2026-04-09): what :func:`gateway.topics.wire.parse_draft`
is to XML, with the same checks (:func:`~gateway.topics.wire.direct_attributes`,
:func:`~gateway.topics.wire.new_draft`).

``MessageAttributes`` is an object whose ``DirectMail``, ``DirectSMS`` and ``Push`` entries are
JSON texts, exactly the texts the XML API carries in its elements, so the message stored is the
same whichever API published it.
"""

from __future__ import annotations

from typing import Any

from gateway.errors.mns import MNSError
from gateway.protocol.json_body import JsonObject, object_field, string_field
from gateway.protocol.properties import require_body, validated_properties
from gateway.topics.records import PublishDraft, TopicMessage
from gateway.topics.wire import direct_attributes, new_draft


def _attributes(document: JsonObject) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    entries = object_field(document, "MessageAttributes")
    if entries:
        texts: dict[str, str] = {}
        for name in entries:
            text = string_field(entries, name)
            if text is None:
                raise MNSError("InvalidArgument", f"The value of {name} should be a string.")
            texts[name] = text.strip()
        attributes["MessageAttributes"] = direct_attributes(texts)
    attributes.update(validated_properties({}, string_field(document, "MessageGroupId")))
    return attributes


def parse_draft(topic_name: str, document: JsonObject) -> PublishDraft:
    body = require_body(string_field(document, "MessageBody"))
    tag = string_field(document, "MessageTag")
    return new_draft(topic_name, body, tag, _attributes(document))


def published(message: TopicMessage) -> JsonObject:
    return {"MessageId": message.id, "MessageBodyMD5": message.body_md5}
