"""The data dir (SQLite database, keys, generated credentials), checked before any command uses it.

Without this check a read-only or misplaced data dir surfaced as a traceback from whichever
component touched it first, or, inside a gunicorn worker, as dozens of lines ending in "Worker
failed to boot" with the cause buried among them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gateway.errors.commands import DataDirError


def prepare_data_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove a file can be written in it; raise if not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise DataDirError(f"data dir {path} is not usable: {reason}") from error
    return path
