"""How many of the gateway's modules one PublishMessage crosses in the API process.

Builds the app as ``mns-gateway serve`` does (SQLite in a temp dir, no delivery worker), sends
one signed publish to a topic with two subscriptions through Flask's test client as a warm-up
(first-use imports and caches), then profiles a second one with ``sys.setprofile``: every
``gateway/`` module a Python function was called in counts once. Run it on two checkouts to
compare (issue 48 quotes before and after):

    .venv/bin/python bench/publish_modules.py [--tracing] [--list]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.composition import build_app, build_runtime  # noqa: E402
from gateway.config.settings import Settings  # noqa: E402
from tests.mns_http import RawClient  # noqa: E402
from tests.support.app import flask_transport  # noqa: E402

KEY, SECRET = "bench-key", "bench-secret"
BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/">'
    b"<MessageBody>hello</MessageBody><MessageTag>t</MessageTag></Message>"
)


def crossed(client: RawClient) -> set[str]:
    """The gateway modules a publish called into."""
    modules: set[str] = set()
    prefix = str(ROOT / "gateway") + os.sep

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(prefix):
            modules.add(frame.f_code.co_filename[len(str(ROOT)) + 1 :])

    sys.setprofile(profile)
    try:
        status = client.send("POST", "/topics/orders/messages", BODY).status
    finally:
        sys.setprofile(None)
    assert status == 201, status
    return modules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the modules too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mns-modules-") as data_dir:
        settings = Settings(data_dir=Path(data_dir), access_keys={KEY: SECRET})
        runtime = build_runtime(settings, with_worker=False)
        app = build_app(settings, runtime)
        client = RawClient("localhost", 80, KEY, SECRET, transport=flask_transport(app))
        assert client.send("PUT", "/topics/orders", b"<Topic/>").status == 201
        for name in ("a", "b"):
            endpoint = (
                f"<Subscription><Endpoint>http://127.0.0.1:9/{name}</Endpoint></Subscription>"
            )
            path = f"/topics/orders/subscriptions/{name}"
            assert client.send("PUT", path, endpoint.encode()).status == 201
        crossed(client)  # warm-up
        modules = sorted(crossed(client))
        print(f"modules a publish crosses in the API process: {len(modules)}")
        if args.list:
            print("\n".join(modules))
        runtime.close()


if __name__ == "__main__":
    main()
