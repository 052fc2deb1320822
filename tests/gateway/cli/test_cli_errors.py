"""Every failure of an ``mns-gateway`` command is one line on stderr and exit status 1 (issue 24).

Through the installed entry point, in a subprocess, as a user meets it: a signing-key file that
is not a key, a database URL the gateway cannot use, a setting that does not parse, a database
that is not there, a data dir on a read-only file system. Each for the commands it reaches.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.testing.process import free_port

ENTRY_POINT = Path(sys.executable).parent / "mns-gateway"


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    return subprocess.run(
        [str(ENTRY_POINT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**clean, **env},
    )


def assert_one_line(done: subprocess.CompletedProcess[str], command: str, *fragments: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"mns-gateway {command}: "), done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr


def command_line(name: str, data_dir: Path) -> list[str]:
    extra = {
        "serve": ["--port", str(free_port())],
        "keys": ["show"],
        "dead-letters": ["list"],
        "credentials": ["issue", "--ttl", "60"],
        "queues": ["show", "orders"],
    }.get(name, [])
    return [name, *extra, "--data-dir", str(data_dir)]


@pytest.fixture()
def refused_url() -> Iterator[str]:
    """A PostgreSQL URL on a loopback port that is bound but never listens: refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"postgresql://mns:secret@127.0.0.1:{held.getsockname()[1]}/mns"


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_signing_key_file_that_is_not_a_key(tmp_path: Path, command: str) -> None:
    key_file = tmp_path / "signing.pem"
    key_file.write_text("-----BEGIN NOTHING-----\n")
    env = {"MNS_GATEWAY_SIGNING_KEY_FILE": str(key_file)}
    done = run(command_line(command, tmp_path / "data"), env)
    assert_one_line(done, command, str(key_file), "not an unencrypted PEM private key")


@pytest.mark.parametrize("command", ["serve", "queues"])
def test_an_unsupported_database_url(tmp_path: Path, command: str) -> None:
    env = {"MNS_GATEWAY_DATABASE_URL": "mysql://mns@127.0.0.1/mns"}
    done = run(command_line(command, tmp_path / "data"), env)
    assert_one_line(done, command, "MNS_GATEWAY_DATABASE_URL", "unsupported scheme 'mysql'")


@pytest.mark.parametrize("command", ["serve", "credentials"])
def test_a_setting_that_does_not_parse(tmp_path: Path, command: str) -> None:
    done = run(command_line(command, tmp_path / "data"), {"MNS_GATEWAY_MAX_QUEUES": "lots"})
    assert_one_line(done, command, "MNS_GATEWAY_MAX_QUEUES='lots' is not valid")


def test_a_sqlite_setting_out_of_range(tmp_path: Path) -> None:
    env = {"MNS_GATEWAY_SQLITE_SYNCHRONOUS": "sometimes"}
    done = run(command_line("serve", tmp_path / "data"), env)
    assert_one_line(done, "serve", "MNS_GATEWAY_SQLITE_SYNCHRONOUS must be one of")


@pytest.mark.parametrize("command", ["serve", "dead-letters"])
def test_a_database_that_is_not_there(tmp_path: Path, refused_url: str, command: str) -> None:
    done = run(command_line(command, tmp_path / "data"), {"MNS_GATEWAY_DATABASE_URL": refused_url})
    assert_one_line(done, command, "cannot reach the database", "Connection refused")
    assert "secret" not in done.stderr  # the password is not printed


# serve: tests/gateway/cli/test_cli.py::test_read_only_data_dir_with_keys_configured
@pytest.mark.parametrize("command", ["worker", "migrate", "keys"])
def test_a_read_only_data_dir(read_only_dir: Path, command: str) -> None:
    done = run(command_line(command, read_only_dir), {})
    # keys works on a gateway's data and never creates it: an empty dir has none (issue 28).
    why = "no gateway data" if command == "keys" else "Read-only file system"
    assert_one_line(done, command, str(read_only_dir), why)
