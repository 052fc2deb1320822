"""A second ``mns-gateway serve`` on a SQLite data dir a running gateway uses is refused, one
line naming the running one, before it writes anything (issue 47): it used to rewrite
``served-keys.json``, and once it stopped ``credentials show`` described a gateway that was gone.
``mns-gateway worker`` on that data dir stays allowed (docs/deploy.md#the-data-dir), and so
does a new ``serve`` once the first one stopped. Real processes throughout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from gateway.testing.process import free_port
from tests.conftest import start_gateway

ENTRY_POINT = Path(sys.executable).parent / "mns-gateway"


def run_serve(data_dir: Path, env: dict[str, str], timeout: float = 60) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    command = [str(ENTRY_POINT), "serve", "--data-dir", str(data_dir), "--port", str(free_port())]
    return subprocess.Popen(
        command,
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_serve_on_a_data_dir_in_use_is_refused_naming_the_first(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = start_gateway(data_dir)
    try:
        record = (data_dir / "served-keys.json").read_bytes()
        second = run_serve(
            data_dir, {"MNS_GATEWAY_ACCESS_KEY_ID": "other", "MNS_GATEWAY_ACCESS_KEY_SECRET": "s"}
        )
        try:
            out, err = second.communicate(timeout=60)
        finally:
            if second.poll() is None:
                second.kill()
                second.wait(10)
        assert second.returncode == 1, (out, err)
        assert out == ""
        assert len(err.splitlines()) == 1, err
        assert err.startswith("mns-gateway serve: data dir ")
        assert f"in use by the gateway at {first.url} (pid {first.process.pid})" in err
        assert (data_dir / "served-keys.json").read_bytes() == record  # untouched
        assert first.raw().send("GET", "/queues", b"").status == 200  # and the first serves on
    finally:
        first.stop()


def test_a_worker_may_share_it_and_a_new_serve_takes_it_once_the_first_stopped(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    first = start_gateway(data_dir, {"MNS_GATEWAY_DELIVERY_THREADS": "0"})
    try:
        env = {**first.env, "MNS_GATEWAY_DATA_DIR": str(data_dir)}
        env["MNS_GATEWAY_DELIVERY_THREADS"] = "2"
        worker = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "worker"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert worker.stdout is not None
            assert b"mns-gateway worker: pushing" in worker.stdout.readline()
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0
    finally:
        first.stop()
    again = start_gateway(data_dir)  # the lock went with the first gateway's processes
    again.stop()
