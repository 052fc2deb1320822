"""What the test suite needs besides Python packages, checked when pytest starts (before it
collects anything), so a machine without one fails in its first second naming what is missing
and how to install it, instead of 15 minutes later with a handful of errors.

The programs: Java 17 or later (the PySpark report), PostgreSQL's ``initdb`` and ``pg_ctl`` (the
store tests run on PostgreSQL too), Debian's ``chromium`` and ``chromedriver`` (the report page
in a real browser), ``tinyproxy`` (pushes through an egress proxy), ``node`` with ``npm`` (two
Node.js MNS SDKs as test oracles) and ``php``
with ``phpunit`` (the official PHP SDK's own suite). Node and PHP are required, not optional: a
suite that silently skips an SDK on one machine is not the suite CI ran. The check is pure
(``which`` and the Java version are handed in); the pytest hook in tests/conftest.py runs it on
the real machine.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

#: Debian keeps PostgreSQL's server programs off PATH, here; .ci/run adds the same directory.
POSTGRES_BIN_GLOB = "/usr/lib/postgresql/*/bin"
MINIMUM_JAVA = 17


@dataclass(frozen=True)
class Prerequisite:
    what: str
    programs: tuple[str, ...]
    install: str


PROGRAMS = (
    Prerequisite(
        "PostgreSQL 15 server programs",
        ("initdb", "pg_ctl"),
        "apt-get install postgresql-15 (Debian's /usr/lib/postgresql/15/bin is found by itself)",
    ),
    Prerequisite(
        "Chromium and its WebDriver",
        ("chromium", "chromedriver"),
        "apt-get install chromium chromium-driver",
    ),
    Prerequisite("Node.js and npm", ("node", "npm"), "apt-get install nodejs npm"),
    Prerequisite(
        "tinyproxy (the egress proxy the push tests go through)",
        ("tinyproxy",),
        "apt-get install tinyproxy",
    ),
    Prerequisite(
        "PHP and PHPUnit (the official PHP SDK's suite, tests/php)",
        ("php", "phpunit"),
        "apt-get install php-cli php-xml php-curl php-mbstring php-guzzlehttp-guzzle"
        " php-psr-http-message phpunit",
    ),
)
JAVA_INSTALL = "apt-get install openjdk-17-jre-headless (or set JAVA_HOME to a Java 17+)"


def missing(which: Callable[[str], str | None], java_version: int | None) -> list[str]:
    """One line per missing prerequisite: what it is, which program is absent, how to get it."""
    lines = []
    if java_version is None or java_version < MINIMUM_JAVA:
        found = "no java found" if java_version is None else f"found Java {java_version}"
        lines.append(f"Java {MINIMUM_JAVA} or later ({found}): {JAVA_INSTALL}")
    for prerequisite in PROGRAMS:
        absent = [program for program in prerequisite.programs if which(program) is None]
        if absent:
            lines.append(
                f"{prerequisite.what} ({', '.join(absent)} not on PATH): {prerequisite.install}"
            )
    return lines


def java_version_of(release: str | None, version_output: str | None) -> int | None:
    """The feature version from a JDK's ``release`` file or ``java -version``'s output."""
    for text in (release, version_output):
        found = re.search(r'version "(?:1\.)?(\d+)', text or "") or re.search(
            r'JAVA_VERSION="(?:1\.)?(\d+)', text or ""
        )
        if found:
            return int(found.group(1))
    return None


def java_version(environ: dict[str, str], which: Callable[[str], str | None]) -> int | None:
    """The version of the Java Spark would start: ``$JAVA_HOME/bin/java``, else ``java`` on
    PATH. Read from the installation's ``release`` file (no JVM started); ``java -version`` only
    where there is none."""
    home = environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else which("java")
    if not java or not os.access(java, os.X_OK):
        return None
    release = Path(os.path.realpath(java)).parent.parent / "release"
    if release.is_file():
        return java_version_of(release.read_text(errors="replace"), None)
    done = subprocess.run(
        [java, "-version"], capture_output=True, text=True, timeout=10, check=False
    )
    return java_version_of(None, done.stderr + done.stdout)


def with_postgres_on_path(path: str, candidates: Iterable[Path]) -> str:
    """``path`` with the newest Debian PostgreSQL bin directory appended, where there is one
    (what .ci/run does, so the README's test command works as written on Debian too)."""
    directories = sorted(candidates, key=lambda p: [int(n) for n in re.findall(r"\d+", str(p))])
    if not directories:
        return path
    return os.pathsep.join([path, str(directories[-1])]) if path else str(directories[-1])


def report(lines: list[str]) -> str:
    return (
        "the test suite needs programs this machine does not have "
        "(README.md, Run the tests):\n" + "\n".join(f"  - {line}" for line in lines)
    )
