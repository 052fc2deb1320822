"""Nothing acknowledged is lost: a 201 publish survives SIGKILL of every gateway process."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.conftest import start_gateway

TOPIC = b"<Topic/>"
SUB = b"<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint></Subscription>"


def test_acknowledged_publishes_survive_sigkill(tmp_path: Path) -> None:
    # Delivery off: what must survive is each publish with all its pending deliveries.
    no_delivery = {"MNS_GATEWAY_DELIVERY_THREADS": "0"}
    gateway = start_gateway(tmp_path, no_delivery, args=("--workers", "2"))
    try:
        raw = gateway.raw()
        assert raw.send("PUT", "/topics/crash", TOPIC).status == 201
        for name in ("a", "b"):
            assert raw.send("PUT", f"/topics/crash/subscriptions/{name}", SUB).status == 201

        def publish(i: int) -> int:
            body = f"<Message><MessageBody>m{i}</MessageBody></Message>".encode()
            return gateway.raw().send("POST", "/topics/crash/messages", body).status

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(publish, range(200)))
        acknowledged = statuses.count(201)
        assert acknowledged == 200
    finally:
        gateway.kill()

    with sqlite3.connect(tmp_path / "gateway.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        messages = db.execute("SELECT COUNT(*) FROM topic_messages").fetchone()[0]
        deliveries = db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0]
    assert messages >= acknowledged
    assert deliveries >= 2 * acknowledged

    restarted = start_gateway(tmp_path, no_delivery)
    try:
        response = restarted.raw().send("GET", "/topics/crash")
        assert b"<MessageCount>200</MessageCount>" in response.body
    finally:
        restarted.stop()
