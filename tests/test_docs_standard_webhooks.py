"""docs/receiver.md's Node.js receiver, run as written with the official Standard Webhooks
library from npm (pinned in tests/node), against real pushes from ``mns-gateway serve``: a push
is verified and answered 204, a forged one 403, and a receiver still holding the old secret
verifies the pushes made during a rotation."""

from __future__ import annotations

import http.client
import json
import os
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.cli.commands import main
from tests.conftest import FAST_RETRIES, RunningGateway, free_port, start_gateway
from tests.gateway.api.test_node_sdks import NODE_DIR
from tests.gateway.api.test_node_sdks import node_packages as node_packages  # the fixture
from tests.readme import ROOT, blocks, section

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def documented_receiver() -> str:
    text = (ROOT / "docs" / "receiver.md").read_text(encoding="utf-8")
    (example,) = [b for b in blocks(section("Standard Webhooks", text)) if b.lang == "javascript"]
    assert example.kind == "file" and example.argument == "receiver.js"
    return example.code


class NodeReceiver:
    """The documented receiver in a node process of its own; its output lines, as they come."""

    def __init__(self, directory: Path, secret: str, port: int) -> None:
        self.port = port
        script = directory / "receiver.js"
        script.write_text(documented_receiver(), encoding="utf-8")
        env = {
            **os.environ,
            "WEBHOOK_SECRET": secret,
            "PORT": str(self.port),
            "NODE_PATH": str(NODE_DIR / "node_modules"),
        }
        self.process = subprocess.Popen(
            ["node", str(script)],
            cwd=directory,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._wait_listening()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/notifications"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                assert self.process.poll() is None, "node exited"
                time.sleep(0.05)
        raise AssertionError("the documented receiver never listened")

    def next_line(self, timeout: float = 20) -> str:
        return self.lines.get(timeout=timeout)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture()
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningGateway]:
    monkeypatch.delenv("MNS_GATEWAY_DATABASE_URL", raising=False)
    running = start_gateway(tmp_path / "data", FAST_RETRIES)
    yield running
    running.stop()


def switch(capsys: pytest.CaptureFixture[str], gateway: RunningGateway, action: str) -> str:
    code = main(["subscriptions", "standard-webhooks", "orders", "node", action,
                 "--data-dir", str(gateway.data_dir), "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    return str(json.loads(out)["Secret"])


def test_the_documented_node_receiver_verifies_real_pushes(
    node_packages: Path,
    gateway: RunningGateway,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = gateway.account().get_topic("orders")
    topic.create(TopicMeta())
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/notifications"
    topic.get_subscription("node").subscribe(
        SubscriptionMeta(endpoint, notify_content_format="JSON")
    )
    secret = switch(capsys, gateway, "on")
    receiver = NodeReceiver(tmp_path, secret, port)
    try:
        message_id = topic.publish_message(TopicMessage("hello from the gateway")).message_id
        line = receiver.next_line()
        assert line.startswith("msg_") and line.endswith(f" {message_id}: hello from the gateway")

        # A forged push: the documented receiver refuses it (so it verifies for real).
        connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
        forged = {"webhook-id": "msg_x", "webhook-timestamp": str(int(time.time())),
                  "webhook-signature": "v1,AAAA"}  # fmt: skip
        connection.request("POST", "/notifications", body=b'{"Message":"forged"}', headers=forged)
        assert connection.getresponse().status == 403
        connection.close()
        assert receiver.next_line().startswith("refused: ")

        # Rotated: the receiver still holding the old secret verifies the new pushes.
        assert switch(capsys, gateway, "rotate") != secret
        topic.publish_message(TopicMessage("during the rotation"))
        assert receiver.next_line().endswith(": during the rotation")
    finally:
        receiver.stop()
