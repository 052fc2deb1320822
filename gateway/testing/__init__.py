"""A real gateway for a test suite, the way moto's ``mock_aws`` or LocalStack serve AWS users:
``mns-gateway serve`` on a free port in a temporary directory, the inbox on
(docs/testing.md)::

    from gateway.testing import EmbeddedGateway

    with EmbeddedGateway() as gateway:
        account = gateway.account()          # an official-SDK mns.account.Account
        ...                                  # publish, subscribe gateway.pushes.url, ...
        gateway.pushes.wait_for(1)           # pushes it made, verified like a receiver does
        gateway.inbox.wait_for_sms(1)        # SMS and mail it would have sent

Under pytest the plugin (:mod:`gateway.testing.plugin`) gives the same object as the
``mns_gateway`` fixture. Nothing here needs more than mns-push itself (installed from a
checkout); ``account()`` needs the official SDK, ``aliyun-mns-sdk``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.testing.answers import Answer
    from gateway.testing.embedded import EmbeddedGateway
    from gateway.testing.inbox import Inbox, MailEntry, SmsEntry
    from gateway.testing.process import GatewayStartError, free_port
    from gateway.testing.pushes import PushRecorder, ReceivedPush

#: Where each public name lives. They are imported on first use, because pytest imports this
#: package (for the plugin) in every project where mns-push is installed.
_EXPORTS = {
    "Answer": "gateway.testing.answers",
    "EmbeddedGateway": "gateway.testing.embedded",
    "GatewayStartError": "gateway.testing.process",
    "Inbox": "gateway.testing.inbox",
    "MailEntry": "gateway.testing.inbox",
    "PushRecorder": "gateway.testing.pushes",
    "ReceivedPush": "gateway.testing.pushes",
    "SmsEntry": "gateway.testing.inbox",
    "free_port": "gateway.testing.process",
}
__all__ = [
    "Answer",
    "EmbeddedGateway",
    "GatewayStartError",
    "Inbox",
    "MailEntry",
    "PushRecorder",
    "ReceivedPush",
    "SmsEntry",
    "free_port",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
