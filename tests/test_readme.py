"""The README's quickstart, run as written: a topic, the README's receiving app subscribed, a
publish, and the app printing the verified notification.

The virtualenv is this one (``.venv`` in the working directory points at it), so lines that
create it or install into it are left out here; ``.ci/newcomer.py`` runs them too, on a fresh
clone.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.readme import INSTALL_LINE, ROOT, Block, Session, blocks, section


@pytest.fixture()
def session(tmp_path: Path) -> Iterator[Session]:
    workdir = tmp_path / "checkout"
    workdir.mkdir()
    (workdir / ".venv").symlink_to(sys.prefix)
    home = tmp_path / "home"
    home.mkdir()
    session = Session(workdir, home, install=False)
    yield session
    session.close()


def quickstart() -> list[Block]:
    return blocks(section("Quickstart: from nothing to a verified push"))


def test_every_quickstart_block_is_run() -> None:
    assert quickstart(), "the README has a quickstart"
    assert [b for b in quickstart() if b.kind not in ("file", "background", "run")] == []


def test_the_quickstart_ends_in_a_verified_push(session: Session) -> None:
    for block in quickstart():
        session.play(block)
    receiver = 1  # the second terminal
    text = session.wait_for_output(receiver, "order 43 paid")
    assert "from orders/billing: order 42 paid" in text
    assert text.count("verified push ") == 2
    assert (
        session.home / ".mnscredentials"
    ).is_file()  # where the README says mnscmd config writes


def test_install_lines_name_extras_that_exist() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("aliyun-mns-sdk") for dep in extras["client"])
    install_lines = [
        line
        for block in quickstart() + blocks(section("Run the gateway"))
        for line in block.code.splitlines()
        if INSTALL_LINE.match(line)
    ]
    assert ".venv/bin/pip install '.[client]'" in install_lines


def test_the_run_command_and_the_image_install_alike() -> None:
    (run,) = blocks(section("Run the gateway"))
    assert run.code.strip() == (
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/mns-gateway serve"
    )
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "bin/pip install .\n" in dockerfile
    assert "pip install .[" not in dockerfile and "pip install '.[" not in dockerfile


def test_the_folders_the_readmes_examples_write_are_ignored_by_git() -> None:
    """Issue 47: ``./mns-logs`` and ``./report`` (the report's ``--logs`` and ``--out``) showed
    up in ``git status`` after following the README; ``./mns-data`` was ignored already."""
    readme = (ROOT / "README.md").read_text()
    written = set(re.findall(r"(?:--out|--logs|--data-dir|_DIR=) ?\./([\w.-]+)", readme))
    written |= set(re.findall(r"`\./(mns-[\w-]+)`", readme))
    assert {"mns-data", "mns-logs", "report"} <= written
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", *(f"{name}/" for name in sorted(written))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert sorted(checked.stdout.split()) == sorted(f"{name}/" for name in written)
