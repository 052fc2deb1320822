"""``GatewayProcess``: the stop of several gateways at once (the suite's session teardown)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import start_gateway


def test_terminated_gateways_stop_side_by_side(tmp_path: Path) -> None:
    """``terminate`` asks each gateway to stop without waiting (asking twice is harmless), and
    ``stop`` after it waits for the exit: both gateways exit cleanly."""
    gateways = [start_gateway(tmp_path / name) for name in ("a", "b")]
    try:
        for gateway in gateways:
            gateway.terminate()
            gateway.terminate()
        for gateway in gateways:
            gateway.stop()
    finally:
        for gateway in gateways:
            gateway.stop()
    assert [gateway.process.returncode for gateway in gateways] == [0, 0]
