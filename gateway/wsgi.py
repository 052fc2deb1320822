"""``gunicorn gateway.wsgi:app`` — the gateway configured entirely from ``MNS_GATEWAY_*``."""

from gateway.config import settings_from_env
from gateway.server import build_app

app = build_app(settings_from_env())
