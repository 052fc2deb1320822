"""The control plane's CreateQueue in a loop, each call signed afresh by the official classic SDK
(``aliyun-python-sdk-core``: a nonce per call, so wrk's replayed requests cannot drive it), from
a few threads for a given time: calls per second, p99, and how many calls were made, for
bench/compare.py's ``--op create``."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from aliyunsdkcore.client import AcsClient
from aliyunsdkcore.request import CommonRequest

REGION = "cn-hangzhou"


def _create(client: AcsClient, endpoint: str, name: str) -> None:
    request = CommonRequest(domain=endpoint, version="2022-01-19", action_name="CreateQueue")
    request.set_method("POST")
    request.set_product("Mns-open")
    request.set_protocol_type("http")
    request.add_body_params("QueueName", name)
    request.add_body_params("VisibilityTimeout", "30")
    answer: dict[str, Any] = json.loads(client.do_action_with_exception(request))
    assert answer.get("Success", True), answer


def creates(
    port: int, key_id: str, secret: str, seconds: float, *, prefix: str = "cq", threads: int = 4
) -> dict:
    """CreateQueue of new queues (``<prefix>-<thread>-<n>``) for ``seconds`` from ``threads``."""
    endpoint = f"127.0.0.1:{port}"
    latencies: list[float] = []
    failures: list[Exception] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def run(index: int) -> None:
        client = AcsClient(key_id, secret, REGION, auto_retry=False, max_retry_time=0)
        mine: list[float] = []
        n = 0
        try:
            while time.monotonic() < deadline and n < 100_000:
                started = time.monotonic()
                _create(client, endpoint, f"{prefix}-{index}-{n}")
                mine.append(time.monotonic() - started)
                n += 1
        except Exception as error:  # counted below: a failed create must not read as a fast one
            failures.append(error)
        with lock:
            latencies.extend(mine)

    began = time.monotonic()
    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - began
    if failures:
        raise RuntimeError(f"{len(failures)} of {threads} threads failed: {failures[0]}")
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else 0.0
    return {
        "requests": len(latencies),
        "per_second": len(latencies) / elapsed,
        "p99_ms": p99 * 1000,
    }
