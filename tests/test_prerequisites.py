"""The README's test command checks the programs the suite needs before it collects a test.

``test_pytest_without_the_programs_stops_at_once_naming_them`` failed on the code before this
check: pytest collected and ran the suite, and the missing programs showed up as errors in the
tests that needed them, minutes later.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import prerequisites

ROOT = Path(__file__).resolve().parents[1]


def test_every_missing_program_is_named_with_how_to_install_it() -> None:
    lines = prerequisites.missing(lambda name: None, None)
    text = "\n".join(lines)
    for program in ("initdb", "pg_ctl", "chromium", "chromedriver", "node", "npm", "phpunit"):
        assert program in text
    assert lines[0].startswith("Java 17 or later (no java found)")
    assert all("apt-get install" in line for line in lines)


def test_an_old_java_is_named_with_its_version() -> None:
    present = prerequisites.missing(lambda name: f"/usr/bin/{name}", 11)
    assert present == [f"Java 17 or later (found Java 11): {prerequisites.JAVA_INSTALL}"]
    assert prerequisites.missing(lambda name: f"/usr/bin/{name}", 21) == []


def test_java_versions_are_read_old_and_new_style() -> None:
    assert prerequisites.java_version_of('JAVA_VERSION="17.0.15"\n', None) == 17
    assert prerequisites.java_version_of(None, 'openjdk version "1.8.0_392"') == 8
    assert prerequisites.java_version_of(None, 'openjdk version "21" 2023-09-19') == 21
    assert prerequisites.java_version_of(None, "no java here") is None


def test_debians_postgres_directory_is_added_newest_first() -> None:
    found = [Path("/usr/lib/postgresql/9/bin"), Path("/usr/lib/postgresql/15/bin")]
    assert prerequisites.with_postgres_on_path("/bin", found) == "/bin:/usr/lib/postgresql/15/bin"
    assert prerequisites.with_postgres_on_path("/bin", []) == "/bin"


def test_pytest_without_the_programs_stops_at_once_naming_them(tmp_path: Path) -> None:
    """``pytest`` (the README's command) on a machine whose PATH has only Python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bin_dir)}
    env.pop("JAVA_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_readme.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "collected" not in done.stdout and "passed" not in done.stdout
    for named in ("Java 17", "chromium", "chromedriver", "node", "apt-get install"):
        assert named in done.stderr
