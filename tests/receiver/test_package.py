"""The package's public face: what it exports, and what it must never import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import receiver

PACKAGE_DIR = Path(receiver.__file__).parent


def imported_modules(source: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_receiver_imports_nothing_from_the_gateway() -> None:
    for source in PACKAGE_DIR.glob("*.py"):
        gateway_imports = {m for m in imported_modules(source) if m.split(".")[0] == "gateway"}
        assert gateway_imports == set(), source.name


def test_every_exported_name_exists() -> None:
    for name in receiver.__all__:
        assert hasattr(receiver, name), name


def test_the_pure_verification_needs_neither_flask_nor_requests() -> None:
    """``import receiver.verify`` (and the package itself) with Flask and requests unimportable:
    only the blueprint and the certificate fetcher load them, on first use."""
    script = (
        "import sys\n"
        "for name in ('flask', 'werkzeug', 'requests'):\n"
        "    sys.modules[name] = None\n"
        "import receiver, receiver.verify, receiver.notification\n"
        "assert receiver.SignedPush is receiver.verify.SignedPush\n"
        "try:\n"
        "    receiver.MNSReceiver\n"
        "except ImportError:\n"
        "    print('blueprint needs flask')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PACKAGE_DIR.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "blueprint needs flask"
