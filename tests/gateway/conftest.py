"""Fixtures the gateway's command-line tests share."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture()
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A read-only file system (we run as root: permission bits would not stop a write)."""
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount_point)],
        check=True,
        timeout=30,
    )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True, timeout=30)
