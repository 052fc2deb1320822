"""``mns-gateway`` as a newcomer meets it on a fresh machine (issue 36 items 4-8 and 11, and
issue 34's store-only commands), through the real ``mns-gateway`` script of this virtualenv in a
subprocess (or ``main()`` where the process is not the point).

Every test here failed on 8db9520, as its docstring says.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.test_cli_first_day import run, shell

# -- issue 34: store-only commands do not import the web app ----------------------------------

#: A command run in-process, then what it imported that a command on the store alone must not:
#: the web app (Flask), the API with the console and control plane, gunicorn, gevent, and the
#: composition root that builds them.
PROBE = """
import sys
from gateway.cli.commands import main
try:
    status = main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code
heavy = sorted(name for name in sys.modules if name.split(".")[0] in {"flask", "werkzeug",
    "jinja2", "gevent", "gunicorn"} or name.startswith(("gateway.api", "gateway.composition")))
print("IMPORTED " + " ".join(heavy), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("store-only") / "data"
    done = run("migrate", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    return data


@pytest.mark.parametrize(
    "command",
    [
        ("queues", "list"),
        ("queues", "show", "nothing"),
        ("subscriptions", "show", "t", "s"),
        ("dead-letters", "list"),
        ("keys", "show"),
        ("credentials", "show"),
        ("credentials", "issue", "--ttl", "60"),
        ("inbox", "mail"),
        ("migrate",),
    ],
)
def test_a_store_only_command_does_not_import_the_web_app(
    migrated: Path, command: tuple[str, ...]
) -> None:
    """Failed before: every one of them imported gateway.composition, hence Flask, the API, the
    console and the control plane (0.3 s of a 0.5 s start)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *command, "--data-dir", str(migrated)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=shell(),
    )
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED")]
    assert line.split()[1:] == [], f"{' '.join(command)} imported {line}"
