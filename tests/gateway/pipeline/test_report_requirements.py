"""``mns-gateway report`` on an installation that cannot run it: one line, a non-zero exit."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli.commands import main
from gateway.pipeline.report import missing_requirement, pipeline_install_command


def test_without_java_on_path_it_names_java(tmp_path: Path) -> None:
    assert "Java 17" in (missing_requirement({"PATH": str(tmp_path)}) or "")


def test_java_home_without_a_java_names_java(tmp_path: Path) -> None:
    assert "Java 17" in (missing_requirement({"JAVA_HOME": str(tmp_path)}) or "")


def test_with_pyspark_and_java_nothing_is_missing() -> None:
    java = shutil.which("java")
    assert java, "Java 17 is installed where the suite runs (the report tests need it)"
    assert missing_requirement({"PATH": str(Path(java).parent)}) is None


def test_without_java_the_command_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    code = main(["report", "--logs", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "mns-gateway report: needs Java 17: install it and put java on PATH (or set JAVA_HOME)"
    ]


def test_without_pyspark_the_command_names_the_extra(tmp_path: Path) -> None:
    # ``sys.modules[name] = None`` is Python's own way to make a module unimportable.
    script = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from gateway.cli.commands import main\n"
        f"raise SystemExit(main(['report', '--logs', {str(tmp_path)!r}, '--out', 'o']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    # Failed before: the hint named mns-push[pipeline], a package on no index.
    checkout = Path(__file__).resolve().parents[3]
    assert done.stderr.splitlines() == [
        "mns-gateway report: needs the pipeline extra: "
        f"{sys.executable} -m pip install '{checkout}[pipeline]' (and Java 17)"
    ]


def test_outside_a_checkout_the_hint_says_to_use_one(tmp_path: Path) -> None:
    command = pipeline_install_command("python", tmp_path / "site-packages")
    assert command == (
        "python -m pip install 'CHECKOUT[pipeline]' (CHECKOUT: your clone of the mns-push "
        "repository)"
    )


def test_report_is_listed_in_help_on_every_install() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and "report" in done.stdout
