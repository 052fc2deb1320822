"""What the API tests share: the SDK's server errors caught, XML sent where the official SDK has
no call for an element (``<DlqPolicy>``, ``<QueueType>``), and queues whose bodies are text."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Queue, QueueMeta

from tests.mns_http import RawClient

NS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'


def server_error(call: Callable[[], object]) -> MNSServerException:
    """The error the gateway answered ``call()`` with."""
    with pytest.raises(MNSServerException) as caught:
        call()
    return caught.value


def text_queue(account: Account, name: str, meta: QueueMeta | None = None) -> Queue:
    """A new queue whose bodies the SDK sends and receives as text, not base64."""
    queue = account.get_queue(name)
    queue.create(meta or QueueMeta())
    queue.set_encoding(False)
    return queue


def put_queue(raw: RawClient, name: str, inner: str, *, override: bool = False) -> int:
    uri = f"/queues/{name}" + ("?metaoverride=true" if override else "")
    return raw.send("PUT", uri, f"<Queue {NS}>{inner}</Queue>".encode()).status


def queue_element(raw: RawClient, name: str, element: str) -> str | None:
    body = raw.send("GET", f"/queues/{name}").body.decode()
    start = body.find(f"<{element}>")
    if start < 0:
        return None
    return body[start + len(element) + 2 : body.index(f"</{element}>")]
