"""Client examples in docs/ other than the README, run as written against a real gateway
(the README's own quickstart is tests/test_readme.py's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import start_gateway
from tests.readme import ROOT, blocks, section


def test_the_control_plane_sdk_example_runs_as_written(tmp_path: Path) -> None:
    """issue 36 item 11: docs/control-plane.md had no client example."""
    text = (ROOT / "docs" / "control-plane.md").read_text(encoding="utf-8")
    (example,) = blocks(section("Pointing the clients at the gateway", text))
    assert example.lang == "python" and example.kind == "run"
    keys = {"MNS_GATEWAY_ACCESS_KEY_ID": "my-key", "MNS_GATEWAY_ACCESS_KEY_SECRET": "my-secret"}
    gateway = start_gateway(tmp_path / "data", keys)
    try:
        done = subprocess.run(
            [sys.executable, "-c", example.code.replace("8080", str(gateway.port))],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        gateway.stop()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['orders']\n"
