"""CI: the receiver installed alone (docs/receiver.md#installing-the-receiver-alone).

In a fresh venv, ``pip install ./receiver`` must bring Flask, cryptography, requests, cachetools,
defusedxml (and what they need) and nothing of the gateway's stack; ``import receiver.verify``
must work with Flask and requests unimportable; and a Flask app mounting the receiver must
accept a signed push and refuse a tampered one. Run from the repository root.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The five dependencies and theirs (Flask's, cryptography's, requests').
EXPECTED = {
    "mns-push-receiver",
    "flask", "cryptography", "requests", "cachetools", "defusedxml",
    "werkzeug", "jinja2", "markupsafe", "itsdangerous", "click", "blinker",
    "cffi", "pycparser",
    "urllib3", "idna", "certifi", "charset-normalizer",
    "pip", "setuptools",
}  # fmt: skip
#: What the gateway needs and a receiver must not get.
GATEWAY_ONLY = {"gunicorn", "gevent", "psycopg", "psycopg-binary", "httptools", "prometheus-client"}

NO_FLASK = """
import sys
for name in ("flask", "werkzeug", "requests"):
    sys.modules[name] = None  # importing them now fails
import receiver.verify, receiver.notification, receiver.exceptions
import receiver
assert receiver.SignedPush is receiver.verify.SignedPush
print("receiver.verify without Flask: ok")
"""

SMOKE = """
from flask import Flask
from receiver import MNSReceiver, Notification
from receiver.testing import SigningIdentity, post_notification, sign_notification

identity = SigningIdentity.generate()
receiver = MNSReceiver(cert_fetcher=identity.cert_fetcher)
got = []

@receiver.handler(topic="orders")
def on_order(notification: Notification) -> None:
    got.append(notification.message)

app = Flask(__name__)
receiver.init_app(app, url_prefix="/mns")
client = app.test_client()
push = sign_notification(identity, '{"order": 1}', topic_name="orders", path="/mns/notifications")
assert post_notification(client, push).status_code == 204
tampered = push.replace_headers({"x-mns-topic-name": "admin"})
assert post_notification(client, tampered).status_code == 403
assert got == ['{"order": 1}'], got
print("a Flask app with the receiver alone verifies a push: ok")
"""


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="receiver-alone-") as tmp:
        env_dir = Path(tmp) / "venv"
        venv.create(env_dir, with_pip=True)
        python = str(env_dir / "bin" / "python")
        pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "install", str(ROOT / "receiver")], check=True, timeout=900)
        listed = subprocess.run(
            [*pip, "list", "--format=freeze"], check=True, capture_output=True, text=True
        ).stdout
        installed = {line.split("==")[0].lower().replace("_", "-") for line in listed.split()}
        assert not installed & GATEWAY_ONLY, sorted(installed & GATEWAY_ONLY)
        assert installed <= EXPECTED, sorted(installed - EXPECTED)
        for script in (NO_FLASK, SMOKE):  # from the temp dir: the installed copy, not ROOT's
            subprocess.run([python, "-c", script], check=True, cwd=tmp, timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
