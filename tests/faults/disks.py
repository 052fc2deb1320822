"""Small disks that fill up: a tmpfs where mounting is permitted (CI runs as root), else a
loop-mounted ext4 image; where neither can be mounted the test is skipped with the reason.

A disk is filled by a filler file that takes all of its free space but ``leave`` bytes, and
repaired by deleting it: the fault starts and ends at moments the test chooses.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_CHUNK = 1 << 20
_MAX_CHUNKS = 1 << 12  # disks here are a few MB; this bounds the loop, never the filling


@dataclass
class SmallDisk:
    path: Path
    kind: str

    @property
    def filler(self) -> Path:
        return self.path / "filler"

    def free(self) -> int:
        return shutil.disk_usage(self.path).free

    def fill(self, leave: int = 0) -> None:
        """Take every free byte but ``leave`` (a disk that refuses writes when 0)."""
        # Unbuffered: nothing is left to flush (and to fail) when the file is closed.
        with contextlib.suppress(OSError), self.filler.open("ab", buffering=0) as filler:
            for _ in range(_MAX_CHUNKS):
                if (room := self.free() - leave) <= 0:
                    return
                filler.write(b"\0" * min(room, _CHUNK))

    def repair(self) -> None:
        self.filler.unlink(missing_ok=True)


def _run(*command: str) -> str | None:
    """None when it worked, else why not."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        return str(exc)
    return (
        None if result.returncode == 0 else (result.stderr.strip() or f"exit {result.returncode}")
    )


@contextlib.contextmanager
def small_disk(mount_point: Path, megabytes: int) -> Iterator[SmallDisk]:
    """A ``megabytes`` MB file system mounted at ``mount_point`` for the block's duration."""
    mount_point.mkdir(parents=True, exist_ok=True)
    why_not = _run("mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(mount_point))
    kind = "tmpfs"
    if why_not is not None:
        image = mount_point.with_suffix(".img")
        with image.open("wb") as file:
            file.truncate(megabytes << 20)
        loop = _run("mkfs.ext4", "-q", "-F", str(image)) or _run(
            "mount", "-o", "loop", str(image), str(mount_point)
        )
        if loop is not None:
            pytest.skip(f"cannot mount a small disk: tmpfs: {why_not}; loop image: {loop}")
        why_not, kind = None, "loop-mounted ext4"
    try:
        yield SmallDisk(mount_point, kind)
    finally:
        if _run("umount", str(mount_point)) is not None:
            _run("umount", "-l", str(mount_point))
        with contextlib.suppress(OSError):
            os.unlink(mount_point.with_suffix(".img"))
