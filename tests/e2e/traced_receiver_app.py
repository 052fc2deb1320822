"""A Flask app mounting the receiver with tracing on, exporting OTLP over HTTP as any traced
application would (``OTEL_*`` from the environment); run by tests/e2e/test_tracing.py as a
process of its own. ``python -m tests.e2e.traced_receiver_app GATEWAY_URL`` prints its port.

Each message's first push fails (the handler raises), so every trace holds a failed attempt and
the retry that succeeded.
"""

from __future__ import annotations

import sys

from flask import Flask
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from werkzeug.serving import make_server

from receiver import MNSReceiver, Notification


def main(gateway_url: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "orders-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    receiver = MNSReceiver(allowed_cert_url_prefixes=[f"{gateway_url}/certs/"], tracing=True)
    seen: set[str] = set()

    @receiver.handler()
    def handle(notification: Notification) -> None:
        if notification.message_id not in seen:
            seen.add(notification.message_id)
            raise RuntimeError("the first push of each message fails, to be retried")

    app = Flask(__name__)
    receiver.init_app(app, url_prefix="/mns")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(server.server_port, flush=True)
    try:
        server.serve_forever(0.05)
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
