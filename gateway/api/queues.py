"""Queue and message views (being written: issue 5)."""

from __future__ import annotations

from flask import Blueprint

blueprint = Blueprint("queues", __name__)
