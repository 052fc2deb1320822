"""The README's plain gunicorn line serves where the URLs it hands out point.

Failed before this change: the line had no ``--bind``, so gunicorn listened on its own default,
:8000, while the gateway's ``Location`` headers and certificate URLs said :8080.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, free_port, wait_until_ready
from tests.mns_http import RawClient

README = Path(__file__).resolve().parents[1] / "README.md"
#: Where the gateway's URLs point without settings: MNS_GATEWAY_HOST and _PORT's defaults.
URLS_POINT_AT = "127.0.0.1:8080"


def gunicorn_line() -> list[str]:
    (line,) = re.findall(r"`(gunicorn [^`]+)`", README.read_text())
    return shlex.split(line)


def test_the_line_binds_where_the_gateway_says_it_is() -> None:
    command = gunicorn_line()
    bind = command[command.index("--bind") + 1] if "--bind" in command else "127.0.0.1:8000"
    assert bind == URLS_POINT_AT


def test_the_line_serves_and_its_urls_point_at_it(tmp_path: Path) -> None:
    """Run as written, but on a free port (for the line and for MNS_GATEWAY_PORT alike)."""
    port = free_port()
    command = [part.replace("8080", str(port)) for part in gunicorn_line()]
    command[0] = str(Path(sys.executable).parent / "gunicorn")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")},
        "MNS_GATEWAY_PORT": str(port),
        "MNS_GATEWAY_DATA_DIR": str(tmp_path / "data"),
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
    }
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until_ready(port, process, timeout=90)
        created = RawClient("127.0.0.1", port, ACCESS_KEY_ID, ACCESS_KEY_SECRET).send(
            "PUT", "/topics/readme", b"<Topic/>", {"Content-Type": "text/xml"}
        )
        assert created.status == 201, created.body
        assert created.headers["Location"].startswith(f"http://127.0.0.1:{port}/")
    finally:
        process.terminate()
        process.wait(timeout=30)
