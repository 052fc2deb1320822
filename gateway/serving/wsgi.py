"""``gunicorn gateway.serving.wsgi:app`` — the gateway configured entirely from
``MNS_GATEWAY_*``."""

from gateway.composition import build_app
from gateway.config.settings import settings_from_env

app = build_app(settings_from_env())
